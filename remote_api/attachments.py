"""What carries a gateway session to its client right now: a WebSocket (a queue to one writer
task) or long-poll (output waits in the protocol until a poll collects it)."""

from __future__ import annotations

import asyncio

from remote_api.envelope import CLOSE_LIMIT

# How the gateway closes a session's connection (WebSocket close codes).
CLOSE_SUPERSEDED = 4000  # a newer connection took over the session
CLOSE_UNAUTHORIZED = 4401
CLOSE_DEAD = 4408  # heartbeat timeout
CLOSE_GOING_AWAY = 1001


class WsAttachment:
    """A WebSocket carrying a session: frames go through a queue to one writer task, so a
    stuck socket never blocks the session loop (the heartbeat notices it instead).

    A client that stops reading (while it keeps the connection alive) would grow that queue
    without end: past `limit` bytes the connection is dropped at once (`stuck`) - the session
    stays, and the client resumes it when it reads again.
    """

    kind = "websocket"

    def __init__(self, limit: int) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.queued = 0  # bytes waiting in `queue`
        self.limit = limit
        self.stuck = False
        self.reader: asyncio.Task[None] | None = None  # reads the client's frames; cancelled when stuck
        self.close_code = 1000
        self.close_reason = ""

    def push(self, frames: list[bytes]) -> None:
        for frame in frames:
            self.queue.put_nowait(frame)
            self.queued += len(frame)
        if self.queued > self.limit and not self.stuck:
            self.stuck = True
            self.close(CLOSE_LIMIT, "outbound_overflow (link.outbound_bytes)")
            if self.reader is not None:
                self.reader.cancel()

    def close(self, code: int, reason: str) -> None:
        self.close_code, self.close_reason = code, reason
        self.queue.put_nowait(None)


class PollAttachment:
    """Long-poll carrying a session: output waits in the protocol until a poll collects it."""

    kind = "longpoll"

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.poll_id = 0  # the newest poll wins; older ones return empty
        self.closed = False

    def close(self, code: int, reason: str) -> None:
        self.closed = True
        self.ready.set()
