"""The state key: what makes the replicas' shared Redis unreadable to whoever can read Redis.

Every secret or private value a replica writes to Redis (the token signing key, device
records with their link keys and refresh hashes, pairing-code names, replay buffers with
prompts and replies, reply digests) is sealed with AES-256-GCM under the state key; the Redis
key and field it is stored under are the associated data, so a value moved to another place
fails to open. Names that would reveal a secret (the pairing code's hash) are keyed hashes.

A key is written ``ID:BASE64URL`` (32 random bytes, `new_key_line`). Several keys, comma- or
line-separated, allow rotation: the first one seals, all of them open (each sealed value
starts with its key's id). Pure: no I/O beyond reading the key file.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from remote_api.seal import b64d, b64e

VERSION = b"\x01"
_NONCE = 12
_ID = re.compile(r"[A-Za-z0-9_-]{1,16}")
_HOW = ("give every replica the same state key: set STELLA_STATE__KEY=ID:KEY (or state.key_file = a file "
        "holding it, mode 0600); `stella-server state-key` prints a new one")


class StateKeyError(ValueError):
    """The state key is missing or malformed, or a stored value does not open under it."""


@dataclass(frozen=True)
class StateKeys:
    """The keys a replica holds: `current` seals, every one of `keys` opens."""

    current: str
    keys: dict[str, bytes] = field(repr=False)

    @classmethod
    def parse(cls, text: str, where: str) -> StateKeys:
        keys: dict[str, bytes] = {}
        for item in re.split(r"[,\s]+", text.strip()):
            if not item:
                continue
            kid, _, raw = item.partition(":")
            try:
                key = b64d(raw)
            except ValueError:
                key = b""
            if not _ID.fullmatch(kid) or len(key) != 32:
                raise StateKeyError(f"the state key in {where} must be ID:KEY (ID up to 16 letters, digits, - or _; "
                                    "KEY 32 bytes of base64url); `stella-server state-key` prints a valid one")
            if kid in keys:
                raise StateKeyError(f"the state key id {kid!r} appears twice in {where}; give each key its own id")
            keys[kid] = key
        if not keys:
            raise StateKeyError(f"{where} holds no state key; {_HOW}")
        return cls(next(iter(keys)), keys)

    @classmethod
    def load(cls, key: str, key_file: Path | None) -> StateKeys:
        """From the `state.key` setting, else `state.key_file`; StateKeyError says what to set."""
        if key:
            return cls.parse(key, "the state.key setting (STELLA_STATE__KEY)")
        if key_file is None:
            raise StateKeyError(f"a replica sharing state through Redis needs a state key and has none; {_HOW}")
        try:
            text = Path(key_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise StateKeyError(f"cannot read the state key file {key_file} ({exc.strerror}); {_HOW}") from None
        if os.name == "posix" and Path(key_file).stat().st_mode & 0o077:
            raise StateKeyError(f"the state key file {key_file} is readable by other users; chmod 600 it")
        return cls.parse(text, str(key_file))

    def seal(self, value: bytes, where: str) -> bytes:
        """`value` sealed for storage at `where` (the Redis key, plus the field for hashes)."""
        kid = self.current.encode()
        nonce = secrets.token_bytes(_NONCE)
        head = VERSION + bytes([len(kid)]) + kid
        return head + nonce + AESGCM(self.keys[self.current]).encrypt(nonce, value, head + where.encode())

    def open(self, blob: bytes, where: str) -> bytes:
        """The value `seal` stored at `where`; StateKeyError if it was altered, moved or sealed under
        a key this replica lacks."""
        n = blob[1] if len(blob) > 2 and blob[:1] == VERSION else 0
        kid = blob[2:2 + n].decode("ascii", "replace")
        key = self.keys.get(kid)
        if key is None:
            raise StateKeyError(f"a value in Redis at {where} is sealed under state key {kid!r}, which this replica "
                                "does not have; give it every key still in use (the newest first)")
        head, nonce, sealed = blob[:2 + n], blob[2 + n:2 + n + _NONCE], blob[2 + n + _NONCE:]
        try:
            return AESGCM(key).decrypt(nonce, sealed, head + where.encode())
        except InvalidTag:
            raise StateKeyError(f"the value in Redis at {where} fails its integrity check: it was altered or moved "
                                "by something other than a Stella replica") from None

    def name(self, secret_name: str) -> str:
        """A Redis key name for something whose plain name would help an attacker (a code hash)."""
        return hmac.new(self.keys[self.current], b"stella-name|" + secret_name.encode(), hashlib.sha256).hexdigest()


def new_key_line(kid: str | None = None) -> str:
    """A fresh state key, as the settings take it."""
    return f"{kid or secrets.token_hex(3)}:{b64e(secrets.token_bytes(32))}"
