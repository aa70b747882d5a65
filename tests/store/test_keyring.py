"""The key lives in the OS keyring (a real Secret Service here); without one, a clear way out."""

from __future__ import annotations

import pytest
import secretstorage
from keyring.backends.SecretService import Keyring

from sidecar.store import (
    KeyringKey,
    KeyringUnavailableError,
    PassphraseKey,
    RawKey,
    Store,
    StoreConfig,
    WrongKeyError,
)
from tests import services

from .files import snapshot

SERVICE = "stella-store-test"


@pytest.mark.keyring
def test_the_key_is_generated_once_and_kept_in_the_keyring(keyring_env, db_path):
    with Store.open(db_path, KeyringKey(service=SERVICE)) as store:
        store.append_turn("user", "remember me")
    stored = Keyring().get_password(SERVICE, str(db_path))
    assert stored is not None and len(bytes.fromhex(stored)) == 32
    with Store.open(db_path, RawKey(bytes.fromhex(stored))) as store:  # it really is the database's key
        assert [t.text for t in store.history()] == ["remember me"]
    with Store.open(db_path, KeyringKey(service=SERVICE)) as store:
        store.append_turn("assistant", "I do.")
    assert Keyring().get_password(SERVICE, str(db_path)) == stored  # reused, not regenerated
    with Store.open(db_path, StoreConfig(path=db_path, keyring_service=SERVICE).key_source()) as store:
        assert [t.text for t in store.history()] == ["remember me", "I do."]


@pytest.mark.keyring
def test_a_keyring_that_lost_the_key_is_a_clear_error_not_a_new_key(keyring_env, db_path):
    with Store.open(db_path, KeyringKey(service=SERVICE)) as store:
        store.append_turn("user", "before the reset")
    Keyring().delete_password(SERVICE, str(db_path))  # the user reset their keyring
    before = snapshot(db_path)
    with pytest.raises(WrongKeyError) as err:
        Store.open(db_path, KeyringKey(service=SERVICE))
    assert "exists but the OS keyring holds no key for it" in str(err.value)
    assert "if you reset the keyring, restore it" in str(err.value)
    assert Keyring().get_password(SERVICE, str(db_path)) is None
    assert snapshot(db_path) == before


@pytest.mark.keyring
def test_a_keyring_entry_from_another_database_is_a_clear_error(keyring_env, tmp_path):
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    for path in (first, second):
        Store.open(path, KeyringKey(service=SERVICE, account=path.name)).close()
    keyring = Keyring()
    keyring.set_password(SERVICE, "second.db", keyring.get_password(SERVICE, "first.db"))
    before = snapshot(second)
    with pytest.raises(WrongKeyError, match=r"cannot be opened with the key in the OS keyring .*'second\.db'"):
        Store.open(second, KeyringKey(service=SERVICE, account="second.db"))
    assert snapshot(second) == before


def test_without_a_keyring_the_error_points_to_passphrase_mode_which_works(db_path, monkeypatch):
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={db_path.parent}/no-such-bus")
    with pytest.raises(KeyringUnavailableError) as err:
        Store.open(db_path, KeyringKey(service=SERVICE))
    message = str(err.value)
    assert "no OS keyring is available" in message and "use passphrase mode" in message
    assert not db_path.exists()  # never a silent unencrypted fallback

    passphrase = StoreConfig(path=db_path, key_mode="passphrase").key_source("a long walk by the sea")
    assert isinstance(passphrase, PassphraseKey)
    with Store.open(db_path, passphrase) as store:
        store.append_turn("user", "typed, not kept")
    with Store.open(db_path, PassphraseKey("a long walk by the sea")) as store:
        assert [t.text for t in store.history()] == ["typed, not kept"]
    with pytest.raises(WrongKeyError, match="this passphrase"):
        Store.open(db_path, PassphraseKey("a short walk by the sea"))
    with pytest.raises(ValueError, match="passphrase mode"):
        StoreConfig(path=db_path, key_mode="passphrase").key_source()


@pytest.mark.keyring
def test_a_locked_keyring_is_a_clear_error(db_path, monkeypatch):
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):  # no unlock prompt may appear (and wait forever)
        monkeypatch.delenv(name, raising=False)
    with services.SecretService() as private:
        for key, value in private.env.items():
            monkeypatch.setenv(key, value)
        bus = secretstorage.dbus_init()
        secretstorage.get_default_collection(bus).lock()
        bus.close()
        with pytest.raises(KeyringUnavailableError, match="the OS keyring is locked.*passphrase mode"):
            Store.open(db_path, KeyringKey(service=SERVICE))
    assert not db_path.exists()
