"""A database written by an older Stella is brought up to date with its data intact."""

from __future__ import annotations

import pytest

from sidecar.store import Store, StoreError, migrations
from sidecar.store import db as store_db
from sidecar.store.migrations import LATEST_VERSION, MIGRATIONS, Migration


def _open_at(path, key, version):
    """A connection to a database created by the Stella whose schema was `version`."""
    conn = store_db.open_connection(path, key, key, exists=path.exists())
    store_db.configure(conn)
    migrations.migrate(conn, path, upto=version)
    return conn


def _columns(conn, table):
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def test_a_version_1_database_is_migrated_with_its_data_intact(db_path, raw_key):
    conn = _open_at(db_path, raw_key, 1)
    assert migrations.schema_version(conn) == 1
    assert "heard_text" not in _columns(conn, "turns")
    conn.executemany("INSERT INTO turns (role, text, created_at_ms) VALUES (?, ?, ?)", [
        ("user", "Do you remember the first song?", 1_600_000_000_000),
        ("assistant", "The one about the lighthouse.", 1_600_000_001_000),
    ])
    conn.execute("INSERT INTO settings (key, value) VALUES ('volume', '0.6'), ('wake_words', '[\"hey jarvis\"]')")
    conn.close()

    with Store.open(db_path, raw_key) as store:
        assert store.schema_version == LATEST_VERSION > 1
        turns = store.history()
        assert [(t.role, t.text, t.created_at_ms, t.interrupted) for t in turns] == [
            ("user", "Do you remember the first song?", 1_600_000_000_000, False),
            ("assistant", "The one about the lighthouse.", 1_600_000_001_000, False),
        ]
        assert store.get_setting("volume") == 0.6 and store.get_setting("wake_words") == ["hey jarvis"]
        assert store.outfit() is None and store.credentials() is None
        store.mark_interrupted(turns[1].id, "The one about")  # what version 2 added works on old rows
        store.set_outfit("sailor")
    with Store.open(db_path, raw_key) as store:
        assert store.history()[1].as_heard == "The one about" and store.outfit() == "sailor"


def test_a_failing_migration_step_changes_nothing(db_path, raw_key, monkeypatch):
    with Store.open(db_path, raw_key) as store:
        store.append_turn("user", "still here")
    broken = Migration(LATEST_VERSION + 1, "a step that fails halfway", (
        "CREATE TABLE reminders (id INTEGER PRIMARY KEY, text TEXT NOT NULL)",
        "ALTER TABLE no_such_table ADD COLUMN x TEXT",
    ))
    monkeypatch.setattr(migrations, "MIGRATIONS", (*MIGRATIONS, broken))
    conn = store_db.open_connection(db_path, raw_key, raw_key, exists=True)
    with pytest.raises(StoreError, match=rf"to schema version {LATEST_VERSION + 1} \(a step that fails halfway\): "
                       rf"no such table: no_such_table; it was left at version {LATEST_VERSION}, unchanged"):
        migrations.migrate(conn, db_path, upto=LATEST_VERSION + 1)
    assert migrations.schema_version(conn) == LATEST_VERSION
    assert "reminders" not in {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    monkeypatch.undo()
    with Store.open(db_path, raw_key) as store:
        assert [t.text for t in store.history()] == ["still here"]

