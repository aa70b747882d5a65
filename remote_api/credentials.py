"""The client's side of device auth: pairing once, stored credentials, fresh access tokens.

    creds = await pair("https://gpu-box:8765", "K7Q2M-9XW4D")   # the code from `device add`
    creds.save(path)            # or into the app's encrypted store (sidecar DeviceCredentials)
    client = LinkClient(creds.gateway_url, credentials=creds)

`Credentials` is what pairing issued - gateway URL, device id, device secret (the refresh
credential) - field for field the sidecar store's `DeviceCredentials`. `TokenSource` turns them
into short-lived access tokens, getting a new one well before the current one expires.

The embedded default needs no pairing: a gateway on loopback leaves credentials for its own
*local* device in a per-user file named after its port (`write_local_credentials`), which a
client of the same user finds by itself (`find_local_credentials`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from remote_api.envelope import ProtocolError, decode
from remote_api.pairing import FINGERPRINT_HEADER, link_key, machine_fingerprint, refresh_proof
from remote_api.tls import explain_untrusted, untrusted
from remote_api.transport import TransportClosed, Untrusted

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class CredentialsRejected(Exception):
    """The gateway refused a pairing code or the device's credentials: retrying will not help."""

    def __init__(self, code: str, message: str, action: str) -> None:
        super().__init__(f"{message}. {action}")
        self.code, self.message, self.action = code, message, action


@dataclass(frozen=True)
class Credentials:
    gateway_url: str
    device_id: str
    refresh_credential: str = field(repr=False)

    @property
    def link_key(self) -> bytes:
        return link_key(self.refresh_credential)

    def save(self, path: Path) -> None:
        """Write them to `path`, readable by this user only."""
        _write_private(Path(path), asdict(self))

    @classmethod
    def load(cls, path: Path) -> Credentials:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            return cls(str(data["gateway_url"]), str(data["device_id"]), str(data["refresh_credential"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"cannot read device credentials from {path} ({exc}); pair again with --pair CODE"
                             ) from None


async def pair(server_url: str, code: str, fingerprint: str | None = None, *, verify: Any = True,
               timeout: float = 10.0) -> Credentials:
    """Redeem a pairing code; `verify` is httpx's (an `ssl.SSLContext` for a private CA)."""
    url = server_url.rstrip("/")
    data = await _post(url + "/auth/pair", {"code": code, "fingerprint": fingerprint or machine_fingerprint()},
                       verify, timeout)
    return Credentials(url, data["device_id"], data["refresh_credential"])


class TokenSource:
    """Access tokens for one device: fetched with the refresh credential, renewed at 80% of
    their lifetime (24 min before a 2 h token expires), shared by all of a client's requests."""

    def __init__(self, credentials: Credentials, fingerprint: str | None = None, *, verify: Any = True,
                 clock: Callable[[], float] = time.time, timeout: float = 10.0) -> None:
        self.credentials = credentials
        self.fingerprint = fingerprint or machine_fingerprint()
        self._verify = verify
        self._clock = clock
        self._timeout = timeout
        self._token = ""
        self._renew_at = 0.0
        self._lock: asyncio.Lock | None = None

    @property
    def link_key(self) -> bytes:
        return self.credentials.link_key

    def invalidate(self) -> None:
        """The gateway refused the token: get a new one next time."""
        self._token = ""

    async def headers(self, server_url: str) -> dict[str, str]:
        """What a link request to `server_url` must carry; refreshes the token there if due."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if not self._token or self._clock() >= self._renew_at:
                await self._refresh(server_url.rstrip("/"))
        return {"Authorization": f"Bearer {self._token}", FINGERPRINT_HEADER: self.fingerprint}

    async def _refresh(self, url: str) -> None:
        body = {"device_id": self.credentials.device_id, "proof": refresh_proof(self.credentials.refresh_credential),
                "fingerprint": self.fingerprint}
        now = self._clock()
        data = await _post(url + "/auth/refresh", body, self._verify, self._timeout)
        try:  # the lifetime, not the expiry time: this computer's clock may differ from the server's
            token, lifetime = data["access_token"], float(data["expires_in"])
        except (KeyError, TypeError, ValueError):
            raise TransportClosed(f"{url}/auth/refresh did not answer with a token; is that a Stella gateway?"
                                  ) from None
        self._token, self._renew_at = token, now + max(0.0, lifetime) * 0.8


async def _post(url: str, body: dict[str, str], verify: Any, timeout: float) -> dict[str, Any]:
    """POST to an /auth endpoint: the JSON answer, `CredentialsRejected` for a refusal (401,
    409), `Untrusted` for a certificate that fails verification, `TransportClosed` for anything
    worth retrying (network, 429, 5xx)."""
    try:
        async with httpx.AsyncClient(verify=verify, timeout=timeout) as http:
            resp = await http.post(url, json=body)
    except httpx.HTTPError as exc:
        if (bad := untrusted(exc)) is not None:
            raise Untrusted(explain_untrusted(url, bad)) from exc
        raise TransportClosed(f"{url} failed: {exc or type(exc).__name__}") from exc
    if resp.status_code == 200:
        try:
            data = resp.json()
        except ValueError:
            data = None
        if isinstance(data, dict):
            return data
        raise TransportClosed(f"{url} did not answer with JSON; is that a Stella gateway?")
    try:
        err = decode(resp.content.split(b"\n", 1)[0], 1 << 16).body
        code, message, action = str(err["code"]), str(err["message"]), str(err["action"])
    except (ProtocolError, KeyError):
        code, message, action = "http_error", f"{url} answered HTTP {resp.status_code}", "Check the server URL."
    if resp.status_code in (401, 403, 409):
        raise CredentialsRejected(code, message, action)
    raise TransportClosed(f"{message} ({code})")


# --- the embedded default's local device ---------------------------------------------------


def local_credentials_path(port: int) -> Path:
    import platformdirs

    return Path(platformdirs.user_state_dir("stella")) / "gateways" / f"{port}.json"


def write_local_credentials(credentials: Credentials, port: int) -> Path:
    """Leave the local device's credentials for this user's clients (the gateway's pid too, so a
    file left by a killed gateway is recognised as stale)."""
    path = local_credentials_path(port)
    _write_private(path, asdict(credentials) | {"pid": os.getpid()})
    return path


def local_credentials_for(server_url: str) -> Path | None:
    """Where a local gateway at `server_url` leaves its device's credentials (None: not loopback)."""
    parts = urlsplit(server_url)
    if parts.hostname not in LOOPBACK:
        return None
    return local_credentials_path(parts.port or (443 if parts.scheme == "https" else 80))


def find_local_credentials(server_url: str) -> Credentials | None:
    """The credentials a live local gateway at `server_url` (loopback only) left, if any."""
    path = local_credentials_for(server_url)
    if path is None:
        return None
    parts = urlsplit(server_url)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        os.kill(int(data["pid"]), 0)  # a file left by a gateway that was killed is stale
        if urlsplit(data["gateway_url"]).scheme != parts.scheme:
            return None
        return Credentials(server_url.rstrip("/"), str(data["device_id"]), str(data["refresh_credential"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_private(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)
