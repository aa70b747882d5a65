"""The schema, as an ordered list of steps; `PRAGMA user_version` records how many have run.

Steps are never edited once released: a database written by an older Stella is brought up to
date by running the steps it has not seen, each in its own transaction together with the
version bump, so a crash mid-migration leaves the previous version intact. A database from a
newer Stella is refused before anything is written to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlcipher3

from .db import Connection, transaction
from .errors import NewerDatabaseError, StoreError


@dataclass(frozen=True)
class Migration:
    version: int  # the schema version once this step has run
    purpose: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "conversation turns and settings", (
        "CREATE TABLE turns ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"  # AUTOINCREMENT: an id is never reused, even after deletes
        " role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),"
        " text TEXT NOT NULL,"
        " created_at_ms INTEGER NOT NULL)",
        "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL CHECK (json_valid(value)))",
    )),
    Migration(2, "barge-in (what the user actually heard), the selected outfit, device credentials", (
        "ALTER TABLE turns ADD COLUMN heard_text TEXT",  # NULL: played to the end; else cut off after this
        "CREATE TABLE outfit ("
        " id INTEGER PRIMARY KEY CHECK (id = 1),"
        " outfit_id TEXT NOT NULL,"
        " selected_at_ms INTEGER NOT NULL)",
        "CREATE TABLE device_credentials ("
        " id INTEGER PRIMARY KEY CHECK (id = 1),"
        " gateway_url TEXT NOT NULL,"
        " device_id TEXT NOT NULL,"
        " refresh_credential TEXT NOT NULL)",
    )),
    Migration(3, "facts about the user and their full-text index", (
        "CREATE TABLE facts ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " key TEXT NOT NULL UNIQUE,"  # sidecar.facts.Fact.key: a newer fact with the same key replaces this one
        " subject TEXT NOT NULL,"
        " relation TEXT NOT NULL,"
        " value TEXT NOT NULL,"
        " said TEXT NOT NULL,"  # the sentence she is told
        " turn_id INTEGER REFERENCES turns(id) ON DELETE SET NULL,"  # the user's turn it came from
        " created_at_ms INTEGER NOT NULL)",
        # trigram: Chinese has no spaces to split words at; secure-delete: a forgotten fact's terms leave the index
        "CREATE VIRTUAL TABLE facts_index USING fts5(said, keywords, tokenize = 'trigram')",
        "INSERT INTO facts_index (facts_index, rank) VALUES ('secure-delete', 1)",
    )),
)
LATEST_VERSION = MIGRATIONS[-1].version


def schema_version(conn: Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def refuse_newer(conn: Connection, path: Path) -> None:
    """Raise before any write if a newer Stella wrote this database."""
    version = schema_version(conn)
    if version > LATEST_VERSION:
        raise NewerDatabaseError(
            f"the database at {path} has schema version {version}, written by a newer Stella; this version "
            f"understands up to {LATEST_VERSION}. Update Stella (the file was not changed), or move the file "
            f"aside to start fresh with this version"
        )


def migrate(conn: Connection, path: Path, upto: int = LATEST_VERSION) -> None:
    """Run the steps the database has not seen yet, up to version `upto`, one transaction each.

    The version is read inside each step's write transaction, so two Stellas starting at once
    never run the same step twice.
    """
    while True:
        with transaction(conn):
            version = schema_version(conn)
            if version >= upto:
                return
            step = MIGRATIONS[version]
            try:
                for statement in step.statements:
                    conn.execute(statement)
            except sqlcipher3.Error as exc:
                raise StoreError(
                    f"could not upgrade the database at {path} to schema version {step.version} ({step.purpose}): "
                    f"{exc}; it was left at version {version}, unchanged. Please report this as a Stella bug"
                ) from exc
            conn.execute(f"PRAGMA user_version = {step.version}")
