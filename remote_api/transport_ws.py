"""Client transport over a WebSocket (the websockets library): one envelope per text frame.

The link has its own heartbeat, so the library's pings are off; compression is off too, since
envelopes are small and latency matters more than bytes.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from remote_api.link_config import LinkConfig
from remote_api.tls import explain_untrusted, untrusted
from remote_api.transport import AuthRejected, TransportClosed, Untrusted, retry_after

WS_PATH = "/link/ws"


class UpgradeRefused(TransportClosed):
    """The server or a proxy answered the WebSocket upgrade with a plain HTTP status.

    Retrying will not help: something on the path does not carry WebSockets, so the client
    falls back to long-poll at once.
    """

    def __init__(self, status: int) -> None:
        super().__init__(f"the WebSocket upgrade was refused with HTTP {status}")
        self.status = status


def ws_url(server_url: str) -> str:
    """http(s)://host:port[/prefix] -> ws(s)://host:port[/prefix]/link/ws"""
    parts = urlsplit(server_url)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.netloc:
        raise ValueError(f"server URL {server_url!r} must look like http://host:port or https://host")
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + WS_PATH, "", ""))


class WebSocketTransport:
    kind: Literal["websocket"] = "websocket"

    def __init__(self, conn: ClientConnection) -> None:
        self._conn = conn

    @classmethod
    async def open(
        cls, server_url: str, config: LinkConfig, headers: Mapping[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> WebSocketTransport:
        """Do the WebSocket handshake; raise `UpgradeRefused`, `AuthRejected`, `Untrusted` or
        `TransportClosed` if it fails."""
        url = ws_url(server_url)
        try:
            conn = await connect(
                url, open_timeout=config.connect_timeout, ping_interval=None,
                close_timeout=1.0, compression=None, max_size=config.max_frame_bytes * 2,
                additional_headers=dict(headers or {}), user_agent_header="stella-link",
                ssl=ssl_context if url.startswith("wss:") else None,
            )
        except InvalidStatus as exc:
            resp = exc.response
            if resp.status_code in (401, 429):
                raise AuthRejected(resp.status_code, resp.body or b"", retry_after(resp.headers)) from exc
            raise UpgradeRefused(resp.status_code) from exc
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            if (bad := untrusted(exc)) is not None:
                raise Untrusted(explain_untrusted(server_url, bad)) from exc
            raise TransportClosed(f"WebSocket connection failed: {exc or type(exc).__name__}") from exc
        return cls(conn)

    async def send(self, frames: list[bytes]) -> None:
        try:
            for frame in frames:
                await self._conn.send(frame.decode())
        except ConnectionClosed as exc:
            raise TransportClosed(f"the WebSocket closed ({exc})") from exc

    async def recv(self) -> list[bytes]:
        try:
            data = await self._conn.recv()
        except ConnectionClosed as exc:
            raise TransportClosed(f"the WebSocket closed ({exc})") from exc
        return [data.encode() if isinstance(data, str) else data]

    async def close(self, dead: bool = False) -> None:
        if dead:  # a black-holed peer never answers a close handshake: do not wait for one
            self._conn.transport.abort()
        await self._conn.close()
