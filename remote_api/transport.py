"""What the client needs from a transport: move batches of envelope frames, report closure.

Both transports (WebSocket, long-poll) carry the same frames; all reliability lives in the
`LinkProtocol` above them, so a transport may lose a connection at any moment without loss.
"""

from __future__ import annotations

from typing import Literal, Protocol


class TransportClosed(Exception):
    """The connection is gone (or could not be opened); the message says why."""


class Transport(Protocol):
    kind: Literal["websocket", "longpoll"]

    async def send(self, frames: list[bytes]) -> None:
        """Write frames in order; raise `TransportClosed` if the connection is gone."""

    async def recv(self) -> list[bytes]:
        """Wait for the next frames; raise `TransportClosed` if the connection is gone."""

    async def close(self, dead: bool = False) -> None:
        """Close the connection; `dead` (heartbeat timeout): drop it without a goodbye."""
