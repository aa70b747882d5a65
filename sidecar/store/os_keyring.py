"""The OS keyring that holds the database key, pinned per platform.

On Linux it is the Secret Service, spoken to directly (secretstorage over D-Bus), not through the
keyring package: keyring finds its backends through package metadata as it is imported, 110 ms and
~8 MiB in each of the window's and the engine's processes, for the one backend Stella pins anyway.
Items are kept as keyring's own Secret Service backend keeps them (attributes username, service and
application, its label, the default collection), so a key stored by either is found by the other.
On macOS and Windows keyring's backend for the platform is used.
"""

from __future__ import annotations

import sys
from contextlib import closing
from typing import Any, Protocol

APPLICATION = "Python keyring library"  # what keyring's Secret Service backend writes


class KeyringLocked(Exception):
    """The keyring is locked, and unlocking it was refused or impossible."""


class OSKeyring(Protocol):
    name: str  # which keyring, for the self-test's report

    def get_password(self, service: str, username: str) -> str | None: ...

    def set_password(self, service: str, username: str, password: str) -> None: ...

    def delete_password(self, service: str, username: str) -> None: ...


class SecretServiceKeyring:
    """The Secret Service's default collection (gnome-keyring, KeePassXC, ...), unlocked on use if it can be."""

    name = "SecretService"

    def _collection(self) -> Any:  # noqa: ANN401 - a secretstorage.Collection, imported only when used
        import secretstorage

        bus = secretstorage.dbus_init()
        try:
            collection = secretstorage.get_default_collection(bus)
            if collection.is_locked():
                collection.unlock()  # the desktop's prompt, if it has one
                if collection.is_locked():
                    raise KeyringLocked("the collection stayed locked (the unlock prompt was dismissed or absent)")
        except BaseException:
            bus.close()
            raise
        return collection

    @staticmethod
    def _query(service: str, username: str) -> dict[str, str]:
        return {"username": username, "service": service}

    def get_password(self, service: str, username: str) -> str | None:
        collection = self._collection()
        with closing(collection.connection):
            for item in collection.search_items(self._query(service, username)):
                item.unlock()
                if item.is_locked():
                    raise KeyringLocked("the item stayed locked (the unlock prompt was dismissed or absent)")
                return item.get_secret().decode("utf-8")
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        collection = self._collection()
        with closing(collection.connection):
            collection.create_item(f"Password for '{username}' on '{service}'",
                                   {**self._query(service, username), "application": APPLICATION}, password,
                                   replace=True)

    def delete_password(self, service: str, username: str) -> None:
        collection = self._collection()
        with closing(collection.connection):
            for item in collection.search_items(self._query(service, username)):
                item.delete()
                return
        raise KeyError(f"no secret for {username!r} on {service!r}")


class KeyringPackage:
    """keyring's backend for this platform, its "locked" error as ours."""

    def __init__(self, backend: Any) -> None:  # noqa: ANN401 - a keyring.backend.KeyringBackend
        self.backend = backend
        self.name = type(backend).__module__.rsplit(".", 1)[-1]  # macOS, Windows

    def _call(self, name: str, *args: str) -> Any:  # noqa: ANN401
        from keyring.errors import KeyringLocked as Locked

        try:
            return getattr(self.backend, name)(*args)
        except Locked as exc:
            raise KeyringLocked(str(exc)) from exc

    def get_password(self, service: str, username: str) -> str | None:
        return self._call("get_password", service, username)

    def set_password(self, service: str, username: str, password: str) -> None:
        self._call("set_password", service, username, password)

    def delete_password(self, service: str, username: str) -> None:
        self._call("delete_password", service, username)


def platform_keyring() -> OSKeyring:
    """The OS's own keyring, chosen by platform rather than by keyring's auto-detection (which could pick a
    plaintext or stdin-prompting backend and silently weaken the store)."""
    if sys.platform == "darwin":
        from keyring.backends import macOS

        return KeyringPackage(macOS.Keyring())
    if sys.platform == "win32":
        from keyring.backends import Windows

        return KeyringPackage(Windows.WinVaultKeyring())
    return SecretServiceKeyring()
