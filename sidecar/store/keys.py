"""Where the database key comes from: a raw 256-bit key in the OS keyring, or a typed passphrase.

The keyring is pinned per platform (os_keyring.py). keyring's auto-detection could pick a plaintext or
stdin-prompting backend (keyrings.alt, keyrings.cryptfile) and silently weaken the store, so it
is never consulted. Without a usable keyring the store refuses to open and says how to switch to
passphrase mode; it never falls back to an unencrypted file.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .errors import KeyringUnavailableError, WrongKeyError
from .os_keyring import KeyringLocked, platform_keyring

KEY_BYTES = 32
_RAW_KEY_LITERAL = re.compile(r"x'([0-9a-f]{64}|[0-9a-f]{96})'", re.IGNORECASE)
_PASSPHRASE_HINT = (
    "or use passphrase mode: protect the database with a passphrase, which the Stella window asks for when it "
    "starts (Stella never stores your conversations unencrypted)"
)


@dataclass(frozen=True)
class RawKey:
    """A raw 256-bit key: SQLCipher uses it directly, so opening costs well under a millisecond."""

    key: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.key) != KEY_BYTES:
            raise ValueError(f"a raw database key is {KEY_BYTES} bytes, got {len(self.key)}")

    def pragma_value(self) -> str:
        return f"\"x'{self.key.hex()}'\""

    def describe(self, path: Path) -> str:
        return "this key"

    def remedy(self, path: Path) -> str:
        return f"use the key the database was created with, or start fresh by moving {path} aside"


@dataclass(frozen=True)
class PassphraseKey:
    """A passphrase the user types; SQLCipher stretches it with PBKDF2-HMAC-SHA512 (256,000 rounds)."""

    passphrase: str = field(repr=False)

    def __post_init__(self) -> None:
        if not self.passphrase:
            raise ValueError("the passphrase is empty; type the passphrase that protects your Stella data")
        if "\x00" in self.passphrase:
            raise ValueError("the passphrase contains a NUL character, which SQLCipher cannot use")
        if _RAW_KEY_LITERAL.fullmatch(self.passphrase):
            raise ValueError("the passphrase looks like a raw SQLCipher key literal (x'…'); choose another one")

    def pragma_value(self) -> str:
        # NFC: the same passphrase typed on another OS or keyboard may arrive decomposed.
        text = unicodedata.normalize("NFC", self.passphrase)
        return "'" + text.replace("'", "''") + "'"

    def describe(self, path: Path) -> str:
        return "this passphrase"

    def remedy(self, path: Path) -> str:
        return (f"type the passphrase again (it is case-sensitive; if the database was created with the OS keyring, "
                f"unlock that keyring instead), or start fresh by moving {path} aside (its history cannot be read "
                "without the passphrase)")


@dataclass(frozen=True)
class KeyringKey:
    """A raw key generated on first use and kept in the OS keyring under (service, account)."""

    service: str = "stella"
    account: str | None = None  # None: the database's absolute path

    def account_for(self, path: Path) -> str:
        return self.account if self.account is not None else str(path)

    def describe(self, path: Path) -> str:
        return f"the key in the OS keyring (service {self.service!r}, account {self.account_for(path)!r})"

    def remedy(self, path: Path) -> str:
        return (f"if you reset the keyring, restore it (or that entry) from a backup, or start fresh by moving "
                f"{path} aside (its history cannot be read without the key)")

    def load(self, path: Path, *, create: bool) -> RawKey:
        """The stored key; a new random one is generated and stored only when `create` (no database yet)."""
        account = self.account_for(path)
        with _keyring_errors(self.service, account):
            backend = platform_keyring()
            stored = backend.get_password(self.service, account)
        if stored is None:
            if not create:
                raise WrongKeyError(
                    f"the database at {path} exists but the OS keyring holds no key for it (service "
                    f"{self.service!r}, account {account!r}); if it was created in passphrase mode, open it with "
                    f"that passphrase; {self.remedy(path)}"
                )
            key = RawKey(secrets.token_bytes(KEY_BYTES))
            with _keyring_errors(self.service, account):
                backend.set_password(self.service, account, key.key.hex())
            return key
        try:
            return RawKey(bytes.fromhex(stored))
        except ValueError:
            raise WrongKeyError(
                f"the OS keyring entry (service {self.service!r}, account {account!r}) is not a Stella database "
                f"key; {self.remedy(path)}"
            ) from None


KeySource = RawKey | PassphraseKey | KeyringKey


@contextmanager
def _keyring_errors(service: str, account: str) -> Iterator[None]:
    try:
        yield
    except KeyringLocked as exc:
        raise KeyringUnavailableError(
            f"the OS keyring is locked, so the database key (service {service!r}, account {account!r}) cannot be "
            f"read ({exc}); unlock the keyring (log in to the desktop session) and start Stella again, "
            f"{_PASSPHRASE_HINT}"
        ) from exc
    except Exception as exc:  # backends fail with D-Bus, OS, ctypes and keyring errors alike: all mean "unusable"
        raise KeyringUnavailableError(
            f"no OS keyring is available to hold the database key ({type(exc).__name__}: {exc}); start the "
            f"keyring service (on Linux a Secret Service such as gnome-keyring or KeePassXC on the D-Bus session "
            f"bus), {_PASSPHRASE_HINT}"
        ) from exc
