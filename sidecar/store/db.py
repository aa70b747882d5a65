"""Opening the SQLCipher file without ever harming it, and committing to it durably.

A wrong key must leave the file byte-identical, its -wal and -shm included. A normal connection
with a wrong key fails on its first read and writes nothing, except when a crash (or another
running Stella) left a -wal or -journal file: then it replays that into the database when it
closes, key or no key. In that case the key is first checked on a read-only, immutable
connection (it ignores the WAL and writes nothing) that only has to decrypt page 1. Doing this
only when needed keeps a passphrase open at one key derivation instead of two.

Durability: WAL with synchronous=FULL. NORMAL would survive a killed process too, but can lose
the last commits on power loss; FULL costs one fsync per commit — a few per conversation turn —
so a turn reported as saved stays saved.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlcipher3

from .errors import DamagedDatabaseError, StoreError, WrongKeyError
from .keys import KeySource, PassphraseKey, RawKey

PAGE_SIZE = 4096  # SQLCipher 4's page size, pinned with cipher_compatibility = 4
_PLAIN_SQLITE = b"SQLite format 3\x00"
Connection = sqlcipher3.Connection


def has_content(path: Path) -> bool:
    """Whether `path` holds a database; a zero-byte file is what a crash before the first commit leaves."""
    if path.exists() and not path.is_file():
        raise StoreError(f"the database path {path} is not a file; point the store at a file path")
    return path.exists() and path.stat().st_size > 0


def open_connection(path: Path, key: RawKey | PassphraseKey, source: KeySource, *, exists: bool) -> Connection:
    """A keyed connection whose first read succeeded; nothing has been written yet."""
    try:
        if exists:
            _check_shape(path)
            if any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-journal")):
                _check_key(path, key, source)
        else:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))  # SQLite gives -wal/-shm the same mode
        conn = _connect(str(path), key, uri=False)
    except (OSError, sqlcipher3.Error) as exc:
        raise StoreError(
            f"cannot open the database at {path}: {exc}; check that you may read and write it and its folder"
        ) from exc
    try:
        conn.execute("PRAGMA user_version").fetchone()
    except sqlcipher3.Error as exc:
        conn.close()
        raise explain(exc, path, "open", source) from exc
    return conn


def configure(conn: Connection) -> None:
    """WAL + FULL sync (see the module docstring); temp tables in memory so nothing spills to disk in clear;
    deleted content zeroed."""
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if mode != "wal":
        raise StoreError(f"the database could not switch to WAL journaling (it is in {mode!r} mode)")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA secure_delete = ON")  # a forgotten fact's bytes are overwritten, not left in free pages
    conn.execute("PRAGMA busy_timeout = 5000")


@contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    """BEGIN IMMEDIATE … COMMIT; anything raised inside (or by COMMIT) rolls the whole write back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def explain(exc: sqlcipher3.Error, path: Path, doing: str, source: KeySource | None = None) -> StoreError:
    """Turn an SQLite error into a StoreError that says what it means for the user's data."""
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_NOTADB" and source is not None:
        return _wrong_key(path, source, str(exc))
    if name == "SQLITE_NOTADB" or name.startswith("SQLITE_CORRUPT"):
        return _damaged(path, str(exc))
    return StoreError(f"could not {doing} the database at {path}: {exc}")


def _connect(target: str, key: RawKey | PassphraseKey, *, uri: bool) -> Connection:
    # check_same_thread=False: the Store serialises access itself, so callers may use worker threads.
    conn = sqlcipher3.connect(target, uri=uri, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA cipher_log_level = NONE")  # a wrong key is our error to report, not stderr noise
    conn.execute(f"PRAGMA key = {key.pragma_value()}")
    conn.execute("PRAGMA cipher_compatibility = 4")  # a later SQLCipher keeps reading today's files
    return conn


def _check_shape(path: Path) -> None:
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(len(_PLAIN_SQLITE))
    if head == _PLAIN_SQLITE:
        raise DamagedDatabaseError(
            f"the file at {path} is an unencrypted SQLite database, not Stella's encrypted store; point the store "
            f"at another path, or move it aside so Stella can create a new one"
        )
    if size % PAGE_SIZE:
        raise _damaged(path, f"its size, {size} bytes, is not a whole number of {PAGE_SIZE}-byte pages")


def _check_key(path: Path, key: RawKey | PassphraseKey, source: KeySource) -> None:
    conn = _connect(f"{path.as_uri()}?mode=ro&immutable=1", key, uri=True)
    try:
        conn.execute("PRAGMA user_version").fetchone()
    except sqlcipher3.Error as exc:
        # Only NOTADB means page 1 did not decrypt. Anything else (a stale page count while the WAL
        # holds the rest) is for the real connection, which reads the WAL, to judge.
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB":
            raise _wrong_key(path, source, str(exc)) from exc
    finally:
        conn.close()


def _wrong_key(path: Path, source: KeySource, reason: str) -> WrongKeyError:
    return WrongKeyError(
        f"the database at {path} cannot be opened with {source.describe(path)}: {reason} (a wrong key, or a file "
        f"that is not a Stella database); {source.remedy(path)}. The file was not changed"
    )


def _damaged(path: Path, reason: str) -> DamagedDatabaseError:
    return DamagedDatabaseError(
        f"the file at {path} is not a readable Stella database ({reason}): it is truncated, damaged or not a "
        f"database. Restore it from a backup, or move it aside so Stella starts a fresh one"
    )
