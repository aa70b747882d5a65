"""Client transport over plain HTTP long-poll, for networks where WebSockets do not pass.

Frames travel as NDJSON (one envelope per line), the same bytes as over the WebSocket:
``POST /link/send`` carries the client's frames (the hello's response carries the welcome and
any replay), ``GET /link/poll?sid=&ack=`` waits for the server's. A poll names the last seq the
client holds, so a poll response lost on the way is simply sent again by the next poll. Sends
are serialized by the caller, so the server sees the client's frames in order.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import httpx

from remote_api.envelope import NDJSON
from remote_api.link_config import LinkConfig
from remote_api.protocol import LinkProtocol
from remote_api.tls import explain_untrusted, untrusted
from remote_api.transport import AuthRejected, HeaderSource, TransportClosed, Untrusted, explain, retry_after


class LongPollTransport:
    kind: Literal["longpoll"] = "longpoll"

    def __init__(
        self,
        server_url: str,
        link: LinkProtocol,
        config: LinkConfig,
        headers: HeaderSource | None = None,
        verify: Any = True,
    ) -> None:
        if not server_url.startswith(("http://", "https://")):
            raise ValueError(f"server URL {server_url!r} must start with http:// or https://")
        self._base = server_url.rstrip("/")
        self._link = link
        self._config = config
        self._headers = headers  # every request is authenticated, with a token that may be renewed
        # A fresh client per connection: pooled sockets from before a cut would be dead anyway.
        self._http = httpx.AsyncClient(
            verify=verify,
            timeout=httpx.Timeout(config.longpoll_hold + config.connect_timeout,
                                  connect=config.connect_timeout),
        )
        self._inbox: asyncio.Queue[list[bytes]] = asyncio.Queue()
        self._hello_sent = False

    async def send(self, frames: list[bytes]) -> None:
        params = {} if not self._hello_sent else {"sid": self._link.sid}
        self._hello_sent = True  # the first batch of a connection is its hello
        body = b"".join(frame + b"\n" for frame in frames)
        resp = await self._request("POST", "/link/send", params=params, content=body,
                                   headers={"content-type": NDJSON})
        if resp:
            self._inbox.put_nowait(resp)

    async def recv(self) -> list[bytes]:
        if not self._inbox.empty() or not self._link.established:
            return await self._inbox.get()  # before the welcome, only the hello's answer can come
        params = {"sid": self._link.sid, "ack": str(self._link.recv_seq),
                  "hold": str(self._config.longpoll_hold)}
        self._link.acked_out_of_band()
        return await self._request("GET", "/link/poll", params=params)

    async def close(self, dead: bool = False) -> None:
        await self._http.aclose()

    async def _request(self, method: str, path: str, *, headers: dict[str, str] | None = None,
                       **kwargs: Any) -> list[bytes]:
        headers = {**(headers or {}), **(await self._headers() if self._headers else {})}
        try:
            resp = await self._http.request(method, self._base + path, headers=headers, **kwargs)
        except httpx.HTTPError as exc:
            if (bad := untrusted(exc)) is not None:
                raise Untrusted(explain_untrusted(self._base, bad)) from exc
            raise TransportClosed(f"long-poll {path} failed: {exc or type(exc).__name__}") from exc
        if resp.status_code in (401, 429):
            raise AuthRejected(resp.status_code, resp.content, retry_after(resp.headers))
        frames = [line for line in resp.content.split(b"\n") if line.strip()]
        if resp.status_code in (200, 204):
            return frames
        err = explain(resp.content)
        detail = f"{err[0]}: {err[1]}" if err else "no error envelope"
        raise TransportClosed(f"long-poll {path} answered HTTP {resp.status_code}: {detail}")
