"""Device authentication at the gateway: every WebSocket and long-poll request, plus the
pairing and refresh endpoints.

A link request carries ``Authorization: Bearer <access token>`` and ``X-Stella-Device:
<fingerprint>``. It passes only if the token verifies (`remote_api.tokens`), was issued for
that fingerprint, its `jti` is not revoked, and its device exists and is not revoked. Open
sessions are checked again every few seconds (`recheck`), so revoking a device or token, or a
token expiring, also ends connections made before. Failures are counted per client address
and per device (`FailureLimiter`); past the limit failing requests get 429 for a while and so do
pairing attempts from that address, but valid credentials always pass.

- ``POST /auth/pair``    ``{"code", "fingerprint"}`` -> ``{"device_id", "name", "refresh_credential"}``
- ``POST /auth/refresh`` ``{"device_id", "proof", "fingerprint"}`` -> ``{"access_token", "expires_in", ...}``
"""

from __future__ import annotations

import contextlib
import hmac
import json
import math
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from remote_api import pairing
from remote_api.envelope import AuthError
from remote_api.ratelimit import FailureLimiter
from remote_api.responses import auth_error_response
from remote_api.state import DeviceIdentity, Registry
from remote_api.tokens import TokenIssuer

FINGERPRINT_HEADER = pairing.FINGERPRINT_HEADER
MAX_BODY = 4096
_PAIR_AGAIN = "Pair the device with this server again (stella-server device add NAME gives a code)."


class DeviceAuth:
    """The gateway's `authenticate` and `recheck` hooks, and the /auth endpoints."""

    def __init__(self, registry: Registry, issuer: TokenIssuer, limiter: FailureLimiter | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.registry = registry
        self.issuer = issuer
        self.limiter = limiter or FailureLimiter()
        self._clock = clock

    async def authenticate(self, conn: HTTPConnection) -> DeviceIdentity:
        async with self._counted(conn) as keys:
            token = _bearer(conn.headers.get("authorization"))
            fingerprint = _fingerprint(conn.headers.get(FINGERPRINT_HEADER))
            claims = self.issuer.verify(token)
            keys.append(f"device:{claims.device_id}")  # signed by us: failures from here on are the device's
            if not hmac.compare_digest(claims.fingerprint_hash, pairing.fingerprint_hash(fingerprint)):
                raise AuthError("wrong_device", "this access token was issued to another device",
                                "Tokens cannot be moved between computers: pair this one on its own.")
            link_key = await self._still_valid(claims.device_id, claims.jti, claims.fingerprint_hash)
            return DeviceIdentity(claims.device_id, link_key, claims.jti, claims.expires)

    async def recheck(self, identity: Any) -> AuthError | None:
        """Why a session's connection may no longer stand (None: it may)."""
        if not isinstance(identity, DeviceIdentity):
            return None
        if identity.expires <= self._clock():
            return AuthError("token_expired", "the access token has expired", "The app reconnects with a new one.")
        try:
            await self._still_valid(identity.device_id, identity.jti, None)
        except AuthError as exc:
            return exc
        return None

    async def _still_valid(self, device_id: str, jti: str, fingerprint_hash: str | None) -> bytes:
        """What can change after a token is issued: revocations. Returns the device's link key."""
        if await self.registry.token_revoked(jti):
            raise AuthError("token_revoked", "this access token was revoked on the server", _PAIR_AGAIN)
        device = await self.registry.device(device_id)
        if device is None:
            raise AuthError("unknown_device", "the server does not know this device", _PAIR_AGAIN)
        if device.revoked is not None:
            raise AuthError("device_revoked", f"the device {device.name!r} was revoked on this server", _PAIR_AGAIN)
        if fingerprint_hash is not None and not hmac.compare_digest(device.fingerprint_hash, fingerprint_hash):
            raise AuthError("wrong_device", "this access token does not match the device it names", _PAIR_AGAIN)
        return device.link_key

    @contextlib.asynccontextmanager
    async def _counted(self, conn: HTTPConnection, *, gate: bool = False) -> AsyncIterator[list[str]]:
        """Count a failed request under its address (and the device it proved to be: the body
        appends that key); over the limit a failure gets 429 instead of its reason.

        Valid credentials are never refused here, so junk from a shared address (every local
        process and web page is 127.0.0.1) cannot lock a paired device out. `gate` refuses an
        address over the limit before checking anything: for pairing, whose codes are short
        enough to be worth guessing.
        """
        address = conn.client.host if conn.client else "unknown"
        keys = [f"addr:{address}"]
        if gate and (wait := self.limiter.retry_after(*keys)):
            raise _rate_limited(address, wait)
        try:
            yield keys
        except AuthError:
            wait = self.limiter.retry_after(*keys)
            self.limiter.failed(*keys)
            if wait:
                raise _rate_limited(address, wait) from None
            raise

    # --- endpoints ------------------------------------------------------------------------

    def routes(self) -> list[Route]:
        return [Route("/auth/pair", self.pair, methods=["POST"]),
                Route("/auth/refresh", self.refresh, methods=["POST"])]

    async def pair(self, request: Request) -> Response:
        try:
            async with self._counted(request, gate=True):
                body = await _json_body(request, {"code": 32, "fingerprint": 128})
                device, secret = await pairing.redeem(self.registry, body["code"], body["fingerprint"],
                                                      self._clock())
        except AuthError as exc:
            return auth_error_response(exc)
        return JSONResponse({"device_id": device.id, "name": device.name, "refresh_credential": secret})

    async def refresh(self, request: Request) -> Response:
        try:
            async with self._counted(request):
                body = await _json_body(request, {"device_id": 64, "proof": 64, "fingerprint": 128})
                device = await pairing.check_refresh(self.registry, body["device_id"], body["proof"],
                                                     body["fingerprint"])
        except AuthError as exc:
            return auth_error_response(exc)
        await self.registry.touch_device(device.id, self._clock())
        token, claims = self.issuer.issue(device.id, device.fingerprint_hash)
        return JSONResponse({"access_token": token, "token_type": "Bearer", "expires_at": claims.expires,
                             "expires_in": claims.expires - claims.issued})


def _rate_limited(address: str, wait: float) -> AuthError:
    return AuthError("rate_limited", f"too many failed sign-ins from {address}",
                     f"Wait {math.ceil(wait)} s, then check the device's credentials.", status=429, retry_after=wait)


def _bearer(header: str | None) -> str:
    scheme, _, token = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError("missing_token", "the request carries no access token (Authorization: Bearer ...)",
                        "Pair this device with the server (stella-chat --pair CODE) or give its credentials.")
    return token.strip()


def _fingerprint(header: str | None) -> str:
    if not header or len(header) > 128 or not header.isprintable():
        raise AuthError("missing_fingerprint", f"the request does not say which device it comes from "
                        f"({FINGERPRINT_HEADER})", "Update the Stella app.")
    return header


async def _json_body(request: Request, fields: dict[str, int]) -> dict[str, str]:
    """A small JSON object whose `fields` are all strings of at most the given lengths."""
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            break
    try:
        body = json.loads(raw) if len(raw) <= MAX_BODY else None
    except ValueError:
        body = None
    if not isinstance(body, dict) or not all(
            isinstance(body.get(name), str) and 0 < len(body[name]) <= size for name, size in fields.items()):
        wanted = ", ".join(f"{name} (text)" for name in fields)
        raise AuthError("bad_request", f"the request must be a JSON object with {wanted}",
                        "This is a bug in the client; update Stella.", status=400)
    return body
