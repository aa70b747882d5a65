"""The encrypted local store (SQLCipher): history, facts about the user, settings, outfit and device credentials.

    with Store.open(config.path, config.key_source()) as store:
        store.append_turn("user", "hello")
"""

from .config import StoreConfig
from .errors import DamagedDatabaseError, KeyringUnavailableError, NewerDatabaseError, StoreError, WrongKeyError
from .keys import KeyringKey, KeySource, PassphraseKey, RawKey
from .store import DeviceCredentials, KeptFact, Role, Store, Turn

__all__ = [
    "DamagedDatabaseError", "DeviceCredentials", "KeptFact", "KeySource", "KeyringKey", "KeyringUnavailableError",
    "NewerDatabaseError", "PassphraseKey", "RawKey", "Role", "Store", "StoreConfig", "StoreError", "Turn",
    "WrongKeyError",
]
