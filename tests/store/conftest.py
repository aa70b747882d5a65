"""Fixtures of the store tests: a fresh database path, keys, and the real Secret Service."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.store import RawKey


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "stella.db"


@pytest.fixture
def raw_key() -> RawKey:
    return RawKey(secrets.token_bytes(32))


@pytest.fixture
def keyring_env(secret_service, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This test talks to the session's real gnome-keyring over its private D-Bus."""
    for key, value in secret_service.env.items():
        monkeypatch.setenv(key, value)
    yield
