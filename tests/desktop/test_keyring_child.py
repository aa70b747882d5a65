"""The shell's store key asked by a forked child (desktop/keyring_child.py): the same key, the same errors, and
the keyring's client never loaded in the shell. A real Secret Service."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from desktop.keyring_child import KeyringKeyInChild
from sidecar.store import KeyringKey, KeyringUnavailableError, Store, WrongKeyError

SERVICE = "stella-keyring-child-test"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def keyring(secret_service, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in secret_service.env.items():
        monkeypatch.setenv(key, value)


@pytest.mark.keyring
def test_the_child_creates_and_finds_the_key_the_keyring_holds(keyring, tmp_path):
    db = tmp_path / "stella.db"
    with Store.open(db, KeyringKeyInChild(service=SERVICE)) as store:  # first run: a new key and database
        store.append_turn("user", "remember me")
    with Store.open(db, KeyringKey(service=SERVICE)) as store:  # the key is where the engine looks for it
        assert [t.text for t in store.history()] == ["remember me"]
    with Store.open(db, KeyringKeyInChild(service=SERVICE)) as store:
        assert [t.text for t in store.history()] == ["remember me"]


@pytest.mark.keyring
def test_the_shell_opening_the_store_never_loads_the_keyrings_client(keyring, tmp_path):
    code = ("import json, sys; from desktop.keyring_child import KeyringKeyInChild; from sidecar.store import Store;"
            f"Store.open({str(tmp_path / 'stella.db')!r}, KeyringKeyInChild(service={SERVICE!r})).close();"
            "print(json.dumps([m for m in ('secretstorage', 'jeepney', 'cryptography') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout.splitlines()[-1]) == []


@pytest.mark.keyring
def test_a_lost_key_is_the_same_clear_error_through_the_child(keyring, tmp_path):
    db = tmp_path / "stella.db"
    Store.open(db, KeyringKeyInChild(service=SERVICE)).close()
    with pytest.raises(WrongKeyError, match="the OS keyring holds no key for it"):
        Store.open(db, KeyringKeyInChild(service=SERVICE + "-other"))


def test_without_a_keyring_the_child_says_so_in_the_same_words(tmp_path, monkeypatch):
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path}/no-such-bus")
    with pytest.raises(KeyringUnavailableError, match="no OS keyring is available.*passphrase mode"):
        Store.open(tmp_path / "stella.db", KeyringKeyInChild(service=SERVICE))
    assert not (tmp_path / "stella.db").exists()
