"""The encrypted local store: conversation history, facts about the user, settings, the selected outfit,
device credentials.

One SQLCipher file, one connection, every write its own transaction. Methods may be called from
any thread (a lock serialises them), e.g. through `asyncio.to_thread`.

Forgetting a fact leaves no trace of it: the fact, its row in the full-text index (FTS5 with
secure-delete, then merged into one segment), every exchange of the history that mentions it, and
the old page images in the write-ahead log (checkpointed and truncated); `secure_delete` overwrites
what was freed.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import sqlcipher3

from sidecar.facts import Fact

from . import db, migrations
from .errors import DamagedDatabaseError, StoreError
from .keys import KeyringKey, KeySource

Role = Literal["user", "assistant", "system"]
ROLES: tuple[str, ...] = get_args(Role)


@dataclass(frozen=True)
class Turn:
    """One message of the conversation; `heard_text` is set when the user cut the reply short."""

    id: int
    role: Role
    text: str
    created_at_ms: int
    heard_text: str | None = None

    @property
    def interrupted(self) -> bool:
        return self.heard_text is not None

    @property
    def as_heard(self) -> str:
        """What the conversation continues from: only the part the user actually heard."""
        return self.text if self.heard_text is None else self.heard_text


@dataclass(frozen=True)
class DeviceCredentials:
    """How this device reaches its gateway; opaque strings issued at pairing."""

    gateway_url: str
    device_id: str
    refresh_credential: str = field(repr=False)


@dataclass(frozen=True)
class KeptFact:
    """A fact in the store, and where it came from: the user's words (None once those were forgotten) and when."""

    id: int
    subject: str
    relation: str
    value: str
    said: str
    source: str | None
    created_at_ms: int


_FACT_COLUMNS = ("f.id, f.subject, f.relation, f.value, f.said, t.text, f.created_at_ms"
                 " FROM facts f LEFT JOIN turns t ON t.id = f.turn_id")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Store:
    """Open with `Store.open(path, key_source)`; close with `close()` or a `with` block."""

    def __init__(self, conn: db.Connection, path: Path) -> None:
        self.path = path
        self._conn: db.Connection | None = conn
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str | os.PathLike[str], key_source: KeySource) -> Store:
        """Open (or create) the database, checking the key before touching the file, and migrate it."""
        path = Path(os.path.abspath(Path(path).expanduser()))
        exists = db.has_content(path)
        key = key_source.load(path, create=not exists) if isinstance(key_source, KeyringKey) else key_source
        conn = db.open_connection(path, key, key_source, exists=exists)
        try:
            migrations.refuse_newer(conn, path)
            db.configure(conn)
            migrations.migrate(conn, path)
        except sqlcipher3.Error as exc:
            conn.close()
            raise db.explain(exc, path, "prepare") from exc
        except BaseException:
            conn.close()
            raise
        return cls(conn, path)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        with self._use("read the schema version of") as conn:
            return migrations.schema_version(conn)

    def verify(self) -> None:
        """Check every page (PRAGMA integrity_check); raise DamagedDatabaseError if anything is wrong."""
        with self._use("check") as conn:
            problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise DamagedDatabaseError(
                f"the database at {self.path} is damaged: {'; '.join(problems[:5])}; restore it from a backup"
            )

    # conversation history

    def append_turn(
        self, role: Role, text: str, *, heard_text: str | None = None, created_at_ms: int | None = None
    ) -> Turn:
        if role not in ROLES:
            raise ValueError(f"a turn's role is one of {', '.join(ROLES)}, got {role!r}")
        created = now_ms() if created_at_ms is None else created_at_ms
        with self._write("save a turn to") as conn:
            cur = conn.execute(
                "INSERT INTO turns (role, text, created_at_ms, heard_text) VALUES (?, ?, ?, ?)",
                (role, text, created, heard_text),
            )
        return Turn(cur.lastrowid, role, text, created, heard_text)

    def mark_interrupted(self, turn_id: int, heard_text: str) -> Turn:
        """Barge-in: the user cut this reply short after hearing `heard_text`."""
        with self._write("mark a turn interrupted in") as conn:
            row = conn.execute(
                "UPDATE turns SET heard_text = ? WHERE id = ? RETURNING id, role, text, created_at_ms, heard_text",
                (heard_text, turn_id),
            ).fetchone()
        if row is None:
            raise StoreError(f"there is no turn {turn_id} in {self.path} to mark as interrupted")
        return Turn(*row)

    def history(self, limit: int | None = None) -> list[Turn]:
        """The last `limit` turns (all when None), oldest first."""
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be at least 0, got {limit}")
        with self._use("read the history from") as conn:
            rows = conn.execute(
                "SELECT * FROM (SELECT id, role, text, created_at_ms, heard_text FROM turns ORDER BY id DESC LIMIT ?)"
                " ORDER BY id",
                (-1 if limit is None else limit,),
            ).fetchall()
        return [Turn(*row) for row in rows]

    # facts about the user

    def keep_fact(self, fact: Fact, turn_id: int | None, *, created_at_ms: int | None = None) -> KeptFact:
        """Keep `fact`, learned from the user's turn `turn_id`; it replaces the fact with the same key, and is said
        as replacing its value (`Fact.replacing`)."""
        created = now_ms() if created_at_ms is None else created_at_ms
        with self._write("save a fact to") as conn:
            old = conn.execute("SELECT id, value FROM facts WHERE key = ?", (fact.key,)).fetchone()
            if old is not None:
                conn.execute("DELETE FROM facts WHERE id = ?", old[:1])
                conn.execute("DELETE FROM facts_index WHERE rowid = ?", old[:1])
                fact = fact.replacing(old[1])
            fact_id = conn.execute(
                "INSERT INTO facts (key, subject, relation, value, said, turn_id, created_at_ms)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (fact.key, fact.subject, fact.relation, fact.value, fact.said, turn_id, created)).lastrowid
            conn.execute("INSERT INTO facts_index (rowid, said, keywords) VALUES (?, ?, ?)",
                         (fact_id, fact.said, fact.keywords))
            row = conn.execute(f"SELECT {_FACT_COLUMNS} WHERE f.id = ?", (fact_id,)).fetchone()
        return KeptFact(*row)

    def facts(self, limit: int | None = None) -> list[KeptFact]:
        """The newest `limit` facts (all when None), oldest first."""
        with self._use("read the facts from") as conn:
            rows = conn.execute(f"SELECT * FROM (SELECT {_FACT_COLUMNS} ORDER BY f.id DESC LIMIT ?) ORDER BY id",
                                (-1 if limit is None else limit,)).fetchall()
        return [KeptFact(*row) for row in rows]

    def search_facts(self, match: str, contains: Sequence[str] = (), limit: int = 20) -> list[KeptFact]:
        """Facts whose index matches the FTS5 query `match` (may be empty) or holds one of `contains`
        (words shorter than a trigram, such as most Chinese words), best first."""
        clauses, params = [], []
        if match:
            clauses.append("SELECT rowid, rank AS score FROM facts_index WHERE facts_index MATCH ?")
            params.append(match)
        for word in contains:
            clauses.append("SELECT rowid, 0 AS score FROM facts_index WHERE said LIKE ? OR keywords LIKE ?")
            params += [f"%{word}%"] * 2
        if not clauses:
            return []
        with self._use("search the facts in") as conn:
            rows = conn.execute(
                f"SELECT {_FACT_COLUMNS} JOIN (SELECT rowid, min(score) AS best, count(*) AS hits FROM"
                f" ({' UNION ALL '.join(clauses)}) GROUP BY rowid) m ON m.rowid = f.id"
                " ORDER BY m.hits DESC, m.best, f.id DESC LIMIT ?", (*params, limit)).fetchall()
        return [KeptFact(*row) for row in rows]

    def forget_facts(self, ids: Sequence[int] | None = None) -> int:
        """Forget these facts (all when None) and every exchange of the history that mentions them; how many
        facts were forgotten. Nothing of them is left in the file (see the module docstring)."""
        with self._write("forget facts in") as conn:
            if ids is None:
                rows = conn.execute("SELECT id, turn_id, value FROM facts").fetchall()
            else:
                rows = conn.execute(f"SELECT id, turn_id, value FROM facts WHERE id IN ({','.join('?' * len(ids))})",
                                    tuple(ids)).fetchall()
            turns = {turn for _, turn, _ in rows if turn is not None}
            for _, _, value in rows:
                turns |= {t for (t,) in conn.execute(
                    "SELECT id FROM turns WHERE instr(lower(text), lower(?)) OR instr(lower(heard_text), lower(?))",
                    (value, value))}
            _delete_exchanges(conn, turns)
            for fact_id, _, _ in rows:
                conn.execute("DELETE FROM facts WHERE id = ?", (fact_id,))
                conn.execute("DELETE FROM facts_index WHERE rowid = ?", (fact_id,))
        if rows:
            self._scrub()
        return len(rows)

    def forget_last_exchange(self) -> int:
        """"Forget that": the last exchange of the history and the facts learned from it (how many)."""
        with self._write("forget the last exchange in") as conn:
            last = conn.execute("SELECT max(id) FROM turns WHERE role = 'user'").fetchone()[0]
            ids = [] if last is None else [i for (i,) in conn.execute("SELECT id FROM facts WHERE turn_id = ?",
                                                                      (last,))]
            if not ids and last is not None:
                _delete_exchanges(conn, {last})
        return self.forget_facts(ids) if ids else 0

    def _scrub(self) -> None:
        """Merge the index into one segment (dropping what was deleted) and empty the write-ahead log."""
        with self._use("clean up after forgetting in") as conn:
            conn.execute("INSERT INTO facts_index (facts_index) VALUES ('optimize')")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # settings: JSON values under string keys

    def get_setting(self, key: str, default: Any = None) -> Any:
        with self._use("read a setting from") as conn:
            row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def set_setting(self, key: str, value: Any) -> None:
        try:
            encoded = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"setting {key!r} must be plain JSON data (str, number, bool, None, list, dict): {exc}"
            ) from None
        with self._write("save a setting to") as conn:
            conn.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (key, encoded))

    # the selected outfit

    def outfit(self) -> str | None:
        with self._use("read the outfit from") as conn:
            row = conn.execute("SELECT outfit_id FROM outfit").fetchone()
        return None if row is None else row[0]

    def set_outfit(self, outfit_id: str) -> None:
        with self._write("save the outfit to") as conn:
            conn.execute(
                "INSERT OR REPLACE INTO outfit (id, outfit_id, selected_at_ms) VALUES (1, ?, ?)", (outfit_id, now_ms())
            )

    # device credentials

    def credentials(self) -> DeviceCredentials | None:
        with self._use("read the device credentials from") as conn:
            row = conn.execute("SELECT gateway_url, device_id, refresh_credential FROM device_credentials").fetchone()
        return None if row is None else DeviceCredentials(*row)

    def set_credentials(self, creds: DeviceCredentials) -> None:
        with self._write("save the device credentials to") as conn:
            conn.execute(
                "INSERT OR REPLACE INTO device_credentials (id, gateway_url, device_id, refresh_credential)"
                " VALUES (1, ?, ?, ?)",
                (creds.gateway_url, creds.device_id, creds.refresh_credential),
            )

    def clear_credentials(self) -> None:
        """Forget the pairing (device revoked or unpaired)."""
        with self._write("clear the device credentials in") as conn:
            conn.execute("DELETE FROM device_credentials")

    @contextmanager
    def _use(self, doing: str) -> Iterator[db.Connection]:
        with self._lock:
            if self._conn is None:
                raise StoreError(f"the store at {self.path} is closed; open it again to {doing} it")
            try:
                yield self._conn
            except sqlcipher3.Error as exc:
                raise db.explain(exc, self.path, doing) from exc

    @contextmanager
    def _write(self, doing: str) -> Iterator[db.Connection]:
        with self._use(doing) as conn, db.transaction(conn):
            yield conn


def _delete_exchanges(conn: db.Connection, turns: set[int]) -> None:
    """Delete these turns with the other half of their exchange (the reply after a user's turn, the user's turn
    before a reply)."""
    for turn in turns:
        role = conn.execute("SELECT role FROM turns WHERE id = ?", (turn,)).fetchone()
        if role is None:
            continue
        other = turn + 1 if role[0] == "user" else turn - 1
        conn.execute("DELETE FROM turns WHERE id = ? OR (id = ? AND role != ?)", (turn, other, role[0]))
