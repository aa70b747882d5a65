"""A TCP proxy the test controls, standing in for a hostile network between client and gateway.

- `cut()` drops every open connection at once (both sides see a reset);
- `blackhole()` keeps the open connections up but silently discards everything they carry,
  like a dead NAT entry or a pulled cable (new connections pass);
- `refuse_upgrade = True` answers any request carrying `Upgrade: websocket` with HTTP 403, as a
  proxy that strips WebSockets does, and forwards every other request; `drop_upgrade = True`
  closes such a connection without an answer instead (a handshake that keeps failing);
- with `capture=True`, `captured` holds every byte that crossed it, both ways (what a
  TLS-terminating proxy sees).
It runs on the caller's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field


@dataclass(eq=False)
class _Pair:
    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    blackholed: bool = False
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1", *, capture: bool = False) -> None:
        self.target = (target_host, target_port)
        self.capture = capture
        self.refuse_upgrade = False
        self.drop_upgrade = False
        self.port = 0
        self.connections = 0
        self.refused = 0
        self.captured = bytearray()
        self._pairs: set[_Pair] = set()
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def open_connections(self) -> int:
        return len(self._pairs)

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> int:
        """Reset every open connection; returns how many were cut."""
        pairs, self._pairs = self._pairs, set()
        for pair in pairs:
            for writer in (pair.client, pair.server):
                writer.transport.abort()
            for task in pair.tasks:
                task.cancel()
        return len(pairs)

    def blackhole(self) -> int:
        """From now on, open connections carry nothing (and stay open); returns how many."""
        for pair in self._pairs:
            pair.blackholed = True
        return len(self._pairs)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        if self.drop_upgrade and _is_upgrade(head):
            self.refused += 1
            writer.transport.abort()
            return
        if self.refuse_upgrade and _is_upgrade(head):
            self.refused += 1
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 27\r\n"
                         b"Connection: close\r\n\r\nWebSockets are not allowed\n")
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        pair = _Pair(writer, up_writer)
        self._pairs.add(pair)
        if self.capture:
            self.captured += head
        up_writer.write(head)
        pair.tasks = [asyncio.create_task(self._pipe(reader, up_writer, pair)),
                      asyncio.create_task(self._pipe(up_reader, writer, pair))]

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pair: _Pair) -> None:
        try:
            while data := await reader.read(65536):
                if not pair.blackholed:
                    if self.capture:
                        self.captured += data
                    writer.write(data)
                    await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if not pair.blackholed:  # a black hole never tells anyone the other side went away
                self._pairs.discard(pair)
                for w in (pair.client, pair.server):
                    w.close()


def _is_upgrade(head: bytes) -> bool:
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "upgrade" and "websocket" in value.lower():
            return True
    return False
