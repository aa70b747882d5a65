"""A hostile network between the engine and the gateway, driven from synchronous tests.

`tests/remote_api/proxy.py`'s TcpProxy (refuse WebSocket upgrades, cut connections) plus one more
fault: the server unreachable (every new connection reset). It runs on its own event loop
thread, because Playwright's sync API owns the test's thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from tests.remote_api.proxy import TcpProxy

T = TypeVar("T")


class SwitchableProxy(TcpProxy):
    """A TcpProxy that can also play "the server is unreachable"."""

    unreachable = False

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.unreachable:
            writer.transport.abort()
            return
        await super()._accept(reader, writer)


class Network:
    """`with Network(gateway_port) as net:` the engine talks to `net.url`; the test breaks it."""

    def __init__(self, target_port: int) -> None:
        self.proxy = SwitchableProxy(target_port)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="network", daemon=True)

    @property
    def url(self) -> str:
        return self.proxy.url

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    def __enter__(self) -> Network:
        self._thread.start()
        self._run(self.proxy.start())
        return self

    def __exit__(self, *exc: object) -> None:
        self._run(self.proxy.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def block_websockets(self) -> None:
        """A proxy that strips WebSockets appears: open connections drop, upgrades get 403."""
        self.proxy.refuse_upgrade = True
        self._loop.call_soon_threadsafe(self.proxy.cut)

    def go_offline(self) -> None:
        self.proxy.unreachable = True
        self._loop.call_soon_threadsafe(self.proxy.cut)

    def heal(self) -> None:
        self.proxy.unreachable = False
        self.proxy.refuse_upgrade = False
