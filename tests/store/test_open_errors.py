"""Files the store cannot use get a clear error, and are left exactly as they were."""

from __future__ import annotations

import hashlib
import secrets
import sqlite3

import pytest
import sqlcipher3

from sidecar.store import (
    DamagedDatabaseError,
    NewerDatabaseError,
    PassphraseKey,
    RawKey,
    Store,
    StoreError,
    WrongKeyError,
)
from sidecar.store.migrations import LATEST_VERSION

from .child import Writer
from .files import snapshot


def _fill(path, key, turns=40):
    with Store.open(path, key) as store:
        for n in range(turns):
            store.append_turn("user", f"turn {n}: " + "words " * 200)


def test_a_wrong_key_is_a_clear_error_and_the_file_is_untouched(db_path, raw_key, capfd):
    _fill(db_path, raw_key)
    before = snapshot(db_path)
    with pytest.raises(WrongKeyError) as err:
        Store.open(db_path, RawKey(secrets.token_bytes(32)))
    message = str(err.value)
    assert f"the database at {db_path} cannot be opened with this key" in message
    assert "start fresh by moving" in message and "was not changed" in message
    with pytest.raises(WrongKeyError, match="type the passphrase again"):
        Store.open(db_path, PassphraseKey("not the key"))
    assert snapshot(db_path) == before
    assert capfd.readouterr().err == ""  # SQLCipher's own logging stays quiet
    with Store.open(db_path, raw_key) as store:
        assert len(store.history()) == 40


def test_a_wrong_key_after_a_crash_leaves_the_wal_and_shm_untouched(db_path, raw_key):
    writer = Writer.start(db_path, raw_key, hold_after=5)
    writer.wait_for(6)  # open + 5 committed turns, which only the WAL holds
    writer.kill()
    before = snapshot(db_path)
    assert {f"{db_path.name}-wal", f"{db_path.name}-shm"} <= set(before)
    assert len(writer.committed) == 5 and len(before[f"{db_path.name}-wal"]) > 5 * 4096
    for wrong in (RawKey(secrets.token_bytes(32)), PassphraseKey("guess")):
        with pytest.raises(WrongKeyError, match="cannot be opened with"):
            Store.open(db_path, wrong)
        assert snapshot(db_path) == before
    with Store.open(db_path, raw_key) as store:
        stored = {t.id: hashlib.sha256(t.text.encode()).hexdigest() for t in store.history()}
    assert writer.committed and writer.committed.items() <= stored.items()


def _text_file(path, data):
    path.write_text("name,phone\nZoë,555-0100\n")


def _cut_to(size):
    def cut(path, data):
        path.write_bytes(data[:size])
    return cut


def _plain_sqlite(path, data):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.commit()
    conn.close()


@pytest.mark.parametrize(("damage", "message"), [
    (_text_file, "not a whole number of 4096-byte pages"),
    (_cut_to(100), "not a whole number of 4096-byte pages"),
    (_cut_to(2 * 4096 + 1000), "not a whole number of 4096-byte pages"),
    (_cut_to(4096), "database disk image is malformed"),
    (_cut_to(3 * 4096), "database disk image is malformed"),
    (_plain_sqlite, "unencrypted SQLite database"),
], ids=["text-file", "first-bytes", "mid-page", "first-page", "three-pages", "plain-sqlite"])
def test_files_that_are_not_a_whole_stella_database_are_refused_untouched(tmp_path, raw_key, damage, message):
    good = tmp_path / "good.db"
    _fill(good, raw_key)
    bad = tmp_path / "bad.db"
    damage(bad, good.read_bytes())
    before = snapshot(bad)
    with pytest.raises(DamagedDatabaseError, match=message) as err:
        Store.open(bad, raw_key)
    assert str(bad) in str(err.value) and "move it aside" in str(err.value)
    assert snapshot(bad) == before


def test_a_database_from_a_newer_stella_is_refused_untouched(db_path, raw_key):
    _fill(db_path, raw_key, turns=3)
    conn = sqlcipher3.connect(db_path, isolation_level=None)
    conn.execute(f"PRAGMA key = {raw_key.pragma_value()}")
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    conn.close()
    before = snapshot(db_path)
    with pytest.raises(NewerDatabaseError, match=f"schema version {LATEST_VERSION + 1}, written by a newer Stella"):
        Store.open(db_path, raw_key)
    assert snapshot(db_path) == before


def test_a_folder_in_place_of_the_database_is_a_clear_error(db_path, raw_key):
    db_path.mkdir(parents=True)
    with pytest.raises(StoreError, match="is not a file"):
        Store.open(db_path, raw_key)
