"""The store's section of the app config: where the database lives and where its key comes from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import platformdirs

from .keys import KeyringKey, KeySource, PassphraseKey


def default_path() -> Path:
    return Path(platformdirs.user_data_dir("stella")) / "stella.db"


@dataclass
class StoreConfig:
    """`key_mode = "passphrase"` is for machines without a usable OS keyring; the user types it at start."""

    path: Path = field(default_factory=default_path)
    key_mode: Literal["keyring", "passphrase"] = "keyring"
    keyring_service: str = "stella"

    def key_source(self, passphrase: str | None = None) -> KeySource:
        """The key source this config asks for; passphrase mode needs the passphrase the user typed."""
        if self.key_mode == "keyring":
            return KeyringKey(service=self.keyring_service)
        if passphrase is None:
            raise ValueError("the store is in passphrase mode: ask the user for the passphrase that protects it")
        return PassphraseKey(passphrase)
