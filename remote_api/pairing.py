"""Pairing: how a device gets its secret, and what the server keeps of it.

`stella-server device add NAME` issues a one-time pairing code (10 characters, valid
`DEFAULT_CODE_TTL`). The device redeems it once, with its fingerprint, and receives a device id
and a *device secret*: the refresh credential it stores. From the secret it derives two
independent values: a *refresh proof*, shown to get access tokens (the server keeps only its
hash), and a *link key*, which salts session key agreement (`remote_api.seal`) and never travels
after pairing, so a proxy that only sees later traffic can neither read nor forge messages.

The embedded default (`stella run`) pairs without a code: a gateway on loopback registers its
own *local* device (`local-<port>`) at every start, removes it when it stops, and leaves its
credentials for clients of the same user (`remote_api.credentials.write_local_credentials`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from remote_api.envelope import AuthError
from remote_api.seal import b64d, b64e
from remote_api.state import Device, PairingStatus, Registry, StateError

CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32: no I, L, O, U
CODE_LENGTH = 10  # 50 bits, one use, short-lived, rate-limited
DEFAULT_CODE_TTL = 600.0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
FINGERPRINT_HEADER = "X-Stella-Device"  # the device fingerprint, on every link request
_PAIR_AGAIN = "Ask the server's operator for a new code (stella-server device add NAME) and pair again."


def new_pairing_code() -> str:
    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return f"{code[:5]}-{code[5:]}"


def code_hash(code: str) -> str:
    """Codes are kept hashed; typing is forgiven (case, dashes, spaces, O/0 and I/L/1)."""
    normalized = code.upper().translate(str.maketrans("OIL", "011", "- "))
    return hashlib.sha256(b"stella-pairing|" + normalized.encode()).hexdigest()


def new_device_secret() -> str:
    return b64e(secrets.token_bytes(32))


def _derive(secret: str, purpose: bytes) -> bytes:
    try:
        raw = b64d(secret)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ValueError("a device secret is 32 bytes of base64url")
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"stella-device|" + purpose).derive(raw)


def refresh_proof(secret: str) -> str:
    return b64e(_derive(secret, b"refresh"))


def link_key(secret: str) -> bytes:
    return _derive(secret, b"link")


def proof_hash(proof: str) -> str:
    return hashlib.sha256(b"stella-refresh|" + proof.encode()).hexdigest()


def fingerprint_hash(fingerprint: str) -> str:
    return hashlib.sha256(b"stella-fingerprint|" + fingerprint.encode()).hexdigest()


def machine_fingerprint() -> str:
    """This machine and user, hashed: the default device fingerprint (stable across restarts)."""
    import getpass
    import uuid

    machine = ""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            machine = Path(path).read_text().strip()
            break
        except OSError:
            continue
    machine = machine or f"node-{uuid.getnode():012x}"
    return hashlib.sha256(f"{machine}|{getpass.getuser()}".encode()).hexdigest()


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ValueError(f"device name {name!r} must be 1-64 letters, digits, '.', '_' or '-' (starting with a "
                         "letter or digit)")
    if name.startswith("local"):
        raise ValueError(f"device names starting with 'local' belong to loopback gateways' own devices; "
                         f"choose another name than {name!r}")
    return name


async def issue_code(registry: Registry, name: str, now: float, ttl: float = DEFAULT_CODE_TTL) -> str:
    """A one-time code that pairs a device called `name` (which must not be paired already)."""
    check_name(name)
    if any(d.name == name and d.revoked is None for d in await registry.devices()):
        raise StateError(f"a device named {name!r} is already paired; revoke it first "
                         f"(stella-server device revoke {name}) or choose another name")
    code = new_pairing_code()
    await registry.add_pairing(code_hash(code), name, now + ttl)
    return code


async def redeem(registry: Registry, code: str, fingerprint: str, now: float) -> tuple[Device, str]:
    """Pair: the code is spent whatever happens next; returns the device and its secret."""
    status, name = await registry.use_pairing(code_hash(code), now)
    if status is PairingStatus.UNKNOWN:
        raise AuthError("bad_pairing_code", "this pairing code is not valid", _PAIR_AGAIN)
    if status is PairingStatus.USED:
        raise AuthError("pairing_code_used", "this pairing code was already used; a code pairs one device once",
                        _PAIR_AGAIN)
    if status is PairingStatus.EXPIRED:
        raise AuthError("pairing_code_expired", "this pairing code has expired", _PAIR_AGAIN)
    device, secret = new_device(name, fingerprint, now)
    try:
        await registry.add_device(device)
    except StateError as exc:
        raise AuthError("device_name_taken", str(exc), _PAIR_AGAIN, status=409) from None
    return device, secret


def new_device(name: str, fingerprint: str, now: float, *, local: bool = False) -> tuple[Device, str]:
    secret = new_device_secret()
    device = Device(id="d-" + secrets.token_urlsafe(9), name=name, fingerprint_hash=fingerprint_hash(fingerprint),
                    refresh_hash=proof_hash(refresh_proof(secret)), link_key=link_key(secret), created=now,
                    local=local)
    return device, secret


async def check_refresh(registry: Registry, device_id: str, proof: str, fingerprint: str) -> Device:
    """The device a refresh request proves to be, or an `AuthError` saying why not."""
    device = await registry.device(device_id)
    if device is None or not hmac.compare_digest(device.refresh_hash, proof_hash(proof)):
        raise AuthError("bad_refresh_credential", "this device's credentials are not known to the server",
                        _PAIR_AGAIN)
    if device.revoked is not None:
        raise AuthError("device_revoked", f"the device {device.name!r} was revoked on this server", _PAIR_AGAIN)
    if not hmac.compare_digest(device.fingerprint_hash, fingerprint_hash(fingerprint)):
        raise AuthError("wrong_device", "these credentials were issued to another device",
                        "Credentials cannot be copied between computers: pair this one on its own.")
    return device
