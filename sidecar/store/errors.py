"""What can go wrong with the encrypted store; each message names the file and what to do.

The subclasses let the app react without parsing text: offer passphrase mode when the keyring is
unavailable, ask again when a passphrase is wrong, and never write to a file it cannot read.
"""


class StoreError(RuntimeError):
    """The store cannot do what was asked; the message says why and how to fix it."""


class KeyringUnavailableError(StoreError):
    """No usable OS keyring (no D-Bus, no Secret Service, locked): offer passphrase mode."""


class WrongKeyError(StoreError):
    """The key or passphrase does not open the database (or the keyring lost it); the file is untouched."""


class DamagedDatabaseError(StoreError):
    """The file is not a Stella database, or it is truncated or corrupt; it is left as it is."""


class NewerDatabaseError(StoreError):
    """The database was written by a newer Stella; this version leaves it untouched."""
