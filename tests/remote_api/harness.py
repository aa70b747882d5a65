"""Run the real gateway app (uvicorn, as `stella-server serve` does) on a loopback port in a
thread with its own event loop, so tests drive it from the outside like any client would."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from starlette.applications import Starlette

from remote_api.cli import make_server
from remote_api.client import ChatEvent, Done, Error, Token, Turn
from remote_api.config import TlsSection
from remote_api.gateway import Authenticator, Gateway, allow_all, create_app
from remote_api.link_config import LinkConfig
from remote_api.shared.processes import free_port
from remote_api.upstream import Upstream

# Builds the app on the gateway's own loop (e.g. `remote_api.gateway_setup.build_app` with device auth).
AppFactory = Callable[[list[Upstream]], Awaitable[Starlette]]

# Short timings so fault tests finish in seconds.
FAST = LinkConfig(heartbeat_interval=0.5, heartbeat_timeout=0.5, retransmit_timeout=0.5,
                  handshake_timeout=2.0, reconnect_min=0.05, reconnect_max=0.5, connect_timeout=2.0,
                  longpoll_hold=2.0, upgrade_probe_interval=0.5, session_ttl=30.0)


class GatewayThread:
    def __init__(
        self,
        upstream_urls: list[str],
        api: Literal["chat", "completion"] = "chat",
        config: LinkConfig = FAST,
        *,
        stall_timeout: float = 30.0,
        health_interval: float = 5.0,
        authenticate: Authenticator = allow_all,
        upstream_factory: Callable[[str], Upstream] | None = None,
        app_factory: AppFactory | None = None,
        tls: TlsSection | None = None,
        upstream_key: str = "",
    ) -> None:
        self.config = config
        self._authenticate = authenticate
        self._app_factory = app_factory
        self._tls = tls
        self._factory = upstream_factory or (lambda url: Upstream(url, api, stall_timeout=stall_timeout,
                                                                  api_key=upstream_key))
        self.port = free_port()
        self._urls, self._health = upstream_urls, health_interval
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.gateway: Gateway | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}"

    def start(self) -> GatewayThread:
        started = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            upstreams = [self._factory(u) for u in self._urls]
            if self._app_factory is not None:
                app = self._loop.run_until_complete(self._app_factory(upstreams))
            else:
                app = create_app(self.config, upstreams, health_interval=self._health,
                                 authenticate=self._authenticate)
            self.gateway = app.state.gateway
            self._server = make_server(app, "127.0.0.1", self.port, self.config, self._tls)

            async def serve() -> None:
                task = asyncio.create_task(self._server.serve())
                while not self._server.started and not task.done():
                    await asyncio.sleep(0.01)
                started.set()
                await task

            self._loop.run_until_complete(serve())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="gateway", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the gateway did not start")
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)

    def call(self, fn: Callable[[Gateway], Any]) -> Any:
        """Run `fn(gateway)` on the gateway's loop (to inspect state without racing it)."""
        assert self._loop is not None and self.gateway is not None
        gateway = self.gateway

        async def run() -> Any:
            return fn(gateway)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(5)

    def wait_for(self, predicate: Callable[[Gateway], bool], timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.call(predicate):
                return True
            time.sleep(0.02)
        return False

    def __enter__(self) -> GatewayThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class Reply:
    tokens: list[Token]
    end: ChatEvent | None

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)


async def collect(
    turn: Turn, on_token: Callable[[Token], None] | None = None, timeout: float = 30.0
) -> Reply:
    """Read a turn to its end (Done or Error), calling `on_token` as each token arrives."""
    reply = Reply([], None)

    async def read() -> None:
        async for event in turn:
            if isinstance(event, Token):
                reply.tokens.append(event)
                if on_token is not None:
                    on_token(event)
            elif isinstance(event, Done | Error):
                reply.end = event

    await asyncio.wait_for(read(), timeout)
    return reply
