"""End-to-end sealing of data bodies, so a TLS-terminating proxy never sees prompts or replies.

Every connection agrees fresh keys: the client's hello and the server's welcome each carry an
ephemeral X25519 public key (``kx``); HKDF-SHA256 turns the shared secret into one AES-256-GCM
key per direction. HKDF is salted with the device's *link key* (derived from its pairing secret
and never sent on the wire), so a proxy that swaps the key shares cannot derive the keys: its
forgery fails the first integrity check instead of reading along.

The keys of one connection form an *epoch* (named by ``e`` in the welcome and in every sealed
body); a resumed session rekeys, and unacknowledged messages are sealed again under the new
keys. A nonce is a per-direction counter under keys no other connection uses, so a (key, nonce)
pair can never repeat; the unchanging header fields are the associated data.

Pure: no sockets, no clock. `LinkProtocol` drives a `SealCodec` through its `BodyCodec` hooks.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from remote_api.envelope import ProtocolError, encode_body
from remote_api.protocol import Role

INFO = b"stella-link/1 seal"
KEPT_EPOCHS = 2  # the current keys and the previous ones: a frame may still be in flight across a reconnect
_TAMPERED = ("Something between the app and the server altered or forged a message. If this repeats, "
             "check for an intercepting proxy, or pair the device again.")


def b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def b64d(text: str) -> bytes:
    """Strict base64url (padding optional); ValueError on anything else."""
    if not isinstance(text, str) or not text.isascii():
        raise ValueError("not base64url text")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as exc:
        raise ValueError(str(exc)) from None


class KeyShare:
    """An ephemeral X25519 key pair: a new one for every handshake, never reused."""

    def __init__(self) -> None:
        self._key = X25519PrivateKey.generate()
        self.public = self._key.public_key().public_bytes_raw()

    def agree(self, peer_public: bytes) -> bytes:
        try:
            return self._key.exchange(X25519PublicKey.from_public_bytes(peer_public))
        except ValueError:  # wrong length, or a low-order point giving an all-zero secret
            raise ProtocolError("bad_seal", "the peer's key share is unusable", _TAMPERED) from None


@dataclass(frozen=True)
class EpochKeys:
    """The keys one connection agreed: one per direction, named by `id`."""

    id: str
    client_to_server: bytes = field(repr=False)
    server_to_client: bytes = field(repr=False)


def derive_keys(shared: bytes, *, sid: str, client_share: bytes, server_share: bytes,
                link_key: bytes = b"") -> EpochKeys:
    """HKDF over the X25519 secret, bound to the session and to both key shares."""
    info = INFO + b"|" + sid.encode() + b"|" + client_share + server_share
    okm = HKDF(algorithm=hashes.SHA256(), length=64, salt=link_key or None, info=info).derive(shared)
    epoch = b64e(hashlib.sha256(client_share + server_share).digest()[:6])
    return EpochKeys(epoch, okm[:32], okm[32:])


def nonce(counter: int) -> bytes:
    """96 bits: four zero bytes, then the 64-bit counter (big-endian)."""
    return b"\0\0\0\0" + counter.to_bytes(8, "big")


class _Epoch:
    def __init__(self, send_key: bytes, recv_key: bytes) -> None:
        self.send = AESGCM(send_key)
        self.recv = AESGCM(recv_key)
        self.sent = 0  # the next nonce counter for this direction


class SealCodec:
    """`BodyCodec` sealing data bodies with AES-256-GCM under per-connection X25519 keys."""

    def __init__(self, role: Role, link_key: bytes = b"") -> None:
        self.role = role
        self._link_key = link_key
        self._share: KeyShare | None = None  # client: offered in the last hello
        self._epochs: OrderedDict[str, _Epoch] = OrderedDict()

    @property
    def epoch(self) -> str:
        """The id of the keys new messages are sealed with ("" before any handshake)."""
        return next(reversed(self._epochs), "")

    # --- handshake hooks ------------------------------------------------------------------

    def hello(self) -> dict[str, Any]:
        self._share = KeyShare()
        return {"kx": b64e(self._share.public)}

    def welcome(self, sid: str, hello: dict[str, Any]) -> dict[str, Any]:
        if "kx" not in hello:
            raise ProtocolError("seal_required", "this gateway seals messages end to end, but the app offered no key",
                                "Update the Stella app (or pair it with this server).")
        client_share = _share(hello["kx"])
        share = KeyShare()
        keys = derive_keys(share.agree(client_share), sid=sid, client_share=client_share, server_share=share.public,
                           link_key=self._link_key)
        self._install(keys)
        return {"kx": b64e(share.public), "e": keys.id}

    def welcomed(self, sid: str, welcome: dict[str, Any]) -> None:
        if "kx" not in welcome or self._share is None:
            raise ProtocolError(
                "seal_required", "the gateway did not agree keys for sealed messages; refusing to talk in clear",
                "Check that the URL points to an up-to-date Stella gateway; a proxy may be stripping the keys.")
        server_share = _share(welcome["kx"])
        keys = derive_keys(self._share.agree(server_share), sid=sid, client_share=self._share.public,
                           server_share=server_share, link_key=self._link_key)
        if welcome.get("e") != keys.id:
            raise ProtocolError("bad_seal", "the gateway named other keys than the ones agreed", _TAMPERED)
        self._share = None
        self._install(keys)

    def _install(self, keys: EpochKeys) -> None:
        c2s, s2c = keys.client_to_server, keys.server_to_client
        self._epochs[keys.id] = _Epoch(c2s, s2c) if self.role is Role.CLIENT else _Epoch(s2c, c2s)
        while len(self._epochs) > KEPT_EPOCHS:
            self._epochs.popitem(last=False)

    # --- bodies ---------------------------------------------------------------------------

    def seal(self, ad: bytes, body: dict[str, Any]) -> dict[str, Any]:
        epoch_id = self.epoch
        if not epoch_id:
            raise RuntimeError("no keys agreed yet: data is only sealed on an open connection")
        epoch = self._epochs[epoch_id]
        counter, epoch.sent = epoch.sent, epoch.sent + 1
        return {"e": epoch_id, "n": counter, "c": b64e(epoch.send.encrypt(nonce(counter), encode_body(body), ad))}

    def open(self, ad: bytes, body: dict[str, Any]) -> dict[str, Any]:
        if body.keys() != {"e", "n", "c"}:
            raise ProtocolError("bad_seal", "a data message arrived unsealed or with a malformed seal", _TAMPERED)
        epoch = self._epochs.get(body["e"]) if isinstance(body["e"], str) else None
        counter = body["n"]
        if epoch is None or not isinstance(counter, int) or isinstance(counter, bool) or not 0 <= counter < 2**64:
            raise ProtocolError("bad_seal", "a message is sealed with keys this connection did not agree", _TAMPERED)
        try:
            plain = epoch.recv.decrypt(nonce(counter), b64d(body["c"]), ad)
            opened = json.loads(plain)
        except (ValueError, InvalidTag):
            raise ProtocolError("bad_seal", "a message failed its integrity check (tampered with or corrupted)",
                                _TAMPERED) from None
        if not isinstance(opened, dict):
            raise ProtocolError("bad_seal", "a sealed body is not a JSON object", _TAMPERED)
        return opened

    def expansion(self, size: int) -> int:
        """How many bytes sealing adds to a body of `size` bytes (for the frame size limit)."""
        return 4 * -(-(size + 16) // 3) + len('{"e":"","n":,"c":""}') + 8 + 20 - size


def _share(text: Any) -> bytes:
    try:
        raw = b64d(text)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ProtocolError("bad_seal", "a key share must be 32 bytes of base64url", _TAMPERED)
    return raw
