"""The store's config section: sensible defaults, and it plugs into the app's config loader."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import platformdirs
import pytest

from remote_api.shared.config_loader import ConfigError, load_config
from sidecar.store import KeyringKey, StoreConfig


@dataclass
class AppConfig:
    """How the app config embeds the store's section."""

    store: StoreConfig = field(default_factory=StoreConfig)


def test_defaults_keep_the_database_in_the_user_data_folder_with_its_key_in_the_keyring():
    config = StoreConfig()
    assert config.path == Path(platformdirs.user_data_dir("stella")) / "stella.db"
    assert config.key_source() == KeyringKey(service="stella")


def test_it_loads_from_toml_and_environment_like_the_rest_of_the_config(tmp_path):
    toml = tmp_path / "stella.toml"
    toml.write_text('[store]\npath = "~/private/stella.db"\nkeyring_service = "stella-dev"\n')
    config = load_config(AppConfig, toml, env={"STELLA_STORE__KEY_MODE": "passphrase"}).store
    assert config.path == Path.home() / "private" / "stella.db"
    assert config.keyring_service == "stella-dev" and config.key_mode == "passphrase"
    with pytest.raises(ConfigError, match="expected one of 'keyring', 'passphrase', got 'plaintext'"):
        load_config(AppConfig, toml, env={"STELLA_STORE__KEY_MODE": "plaintext"})
