"""What the client needs from a transport: move batches of envelope frames, report closure.

Both transports (WebSocket, long-poll) carry the same frames; all reliability lives in the
`LinkProtocol` above them, so a transport may lose a connection at any moment without loss.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Literal, Protocol

from remote_api.envelope import ProtocolError, decode

HeaderSource = Callable[[], Awaitable[Mapping[str, str]]]  # fresh headers (a new token) per request


class TransportClosed(Exception):
    """The connection is gone (or could not be opened); the message says why."""


class AuthRejected(TransportClosed):
    """The gateway refused the request's token (HTTP 401), or refuses this address for a while
    after too many failures (429, `retry_after` seconds)."""

    def __init__(self, status: int, body: bytes, retry_after: float = 0.0) -> None:
        self.code, self.message, self.action = explain(body) or ("unauthorized", f"HTTP {status}", "")
        super().__init__(f"the gateway refused the device: {self.message} ({self.code})")
        self.status = status
        self.retry_after = retry_after


class Untrusted(TransportClosed):
    """The server's TLS certificate failed verification: retrying will not help."""


def explain(body: bytes) -> tuple[str, str, str] | None:
    """(code, message, action) of the gateway's error envelope, if `body` starts with one."""
    try:
        err = decode(body.split(b"\n", 1)[0], 1 << 20).body
        return str(err["code"]), str(err["message"]), str(err.get("action", ""))
    except (ProtocolError, KeyError):
        return None


def retry_after(headers: Mapping[str, str]) -> float:
    try:
        return max(0.0, float(headers.get("retry-after", "0")))
    except ValueError:
        return 0.0


class Transport(Protocol):
    kind: Literal["websocket", "longpoll"]

    async def send(self, frames: list[bytes]) -> None:
        """Write frames in order; raise `TransportClosed` if the connection is gone."""

    async def recv(self) -> list[bytes]:
        """Wait for the next frames; raise `TransportClosed` if the connection is gone."""

    async def close(self, dead: bool = False) -> None:
        """Close the connection; `dead` (heartbeat timeout): drop it without a goodbye."""
