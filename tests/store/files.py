"""Helpers that look at a database the way a user's disk holds it: raw bytes, sidecar files included."""

from __future__ import annotations

from pathlib import Path

SUFFIXES = ("", "-wal", "-shm", "-journal")


def snapshot(path: Path) -> dict[str, bytes]:
    """The exact bytes of the database and of every -wal/-shm/-journal file beside it."""
    return {
        f"{path.name}{suffix}": Path(f"{path}{suffix}").read_bytes()
        for suffix in SUFFIXES
        if Path(f"{path}{suffix}").exists()
    }
