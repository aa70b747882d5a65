"""The local channel between the desktop UI and the engine: a loopback WebSocket with a secret.

The shell makes a random secret per launch and hands it to the engine in its environment
(never on the command line, where `ps` shows it) and to the page in the URL fragment (which
is never sent over HTTP). Browsers cannot set headers on a WebSocket, so the page offers the
secret as a second subprotocol, ``auth.<secret>``, beside ``stella.v1``; a handshake without
it is refused with HTTP 403 before any WebSocket exists. The server binds 127.0.0.1 only.

Messages are JSON text: events out (``{"type": ...}``), commands in (``{"cmd": ...}``), both
typed in `sidecar.channel_messages` (the engine's events, the commands) and `sidecar.frames` (the
pipeline's events), checked against `sidecar.channel_schema`.
Binary messages out are PNG frames of the fallback character stream.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from http import HTTPStatus

from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from sidecar.channel_messages import AppEvent, BadCommand, Command, bad_command, parse_command
from sidecar.channel_schema import check_event
from sidecar.events import event_record
from sidecar.frames import Frame
from sidecar.launch import AUTH_PREFIX, SUBPROTOCOL, ChannelError

log = logging.getLogger(__name__)

MAX_COMMAND_BYTES = 64 * 1024

Event = AppEvent | Frame  # a frame goes out as the record the headless JSONL log writes
CommandHandler = Callable[[ServerConnection, Command], Awaitable[None]]


def offered_secret(request: Request) -> str | None:
    for value in request.headers.get_all("Sec-WebSocket-Protocol"):
        for token in value.split(","):
            token = token.strip()
            if token.startswith(AUTH_PREFIX):
                return token[len(AUTH_PREFIX):]
    return None


class Channel:
    """The engine's side: accepts authenticated clients, greets them, fans events out.

    `greeting` gives what a new client hears first (where things stand); it may wait, e.g. for
    the store, so that a page never sees defaults that are about to change.
    """

    def __init__(self, secret: str, on_command: CommandHandler,
                 greeting: Callable[[], Awaitable[Iterable[Event]]]) -> None:
        self._secret = secret.encode()
        self._on_command = on_command
        self._greeting = greeting
        self._server: Server | None = None
        self.clients: set[ServerConnection] = set()
        self.refused = 0

    async def start(self, port: int = 0) -> int:
        """Listen on 127.0.0.1:`port` (any free port if it is taken); returns the port."""
        try:
            self._server = await self._serve(port)
        except OSError as exc:
            if port == 0:
                raise ChannelError(f"cannot listen on the loopback interface: {exc}") from exc
            log.warning("channel port %d is taken (%s); using another one", port, exc)
            self._server = await self._serve(0)
        return self._server.sockets[0].getsockname()[1]

    async def _serve(self, port: int) -> Server:
        return await serve(self._handle, "127.0.0.1", port, subprotocols=[SUBPROTOCOL],
                           process_request=self._authorize, max_size=MAX_COMMAND_BYTES)

    def _authorize(self, connection: ServerConnection, request: Request) -> Response | None:
        offered = offered_secret(request)
        if offered is not None and hmac.compare_digest(offered.encode(), self._secret):
            return None
        self.refused += 1
        log.warning("refused a channel client without the launch secret")
        return connection.respond(HTTPStatus.FORBIDDEN, "This channel belongs to the Stella window.\n")

    async def _handle(self, ws: ServerConnection) -> None:
        try:
            greeting = await self._greeting()
            for event in greeting:  # queued at once, then joined: no event can slip in between
                broadcast([ws], _encode(event))
            self.clients.add(ws)
            async for message in ws:
                await self._command(ws, message)
        except ConnectionClosed:
            pass
        finally:
            self.clients.discard(ws)

    async def _command(self, ws: ServerConnection, message: str | bytes) -> None:
        try:
            raw = json.loads(message)
            if not isinstance(raw, dict) or not isinstance(raw.get("cmd"), str):
                raise ValueError("a command is a JSON object with a \"cmd\" name")
        except ValueError as exc:
            await ws.send(_encode(bad_command(f"unreadable command ({exc})")))
            return
        try:
            command = parse_command(raw)
        except BadCommand as exc:
            await ws.send(_encode(bad_command(str(exc))))
            return
        try:
            await self._on_command(ws, command)
        except Exception:  # one bad command must not end the connection
            log.exception("command %s failed", command.cmd)
            await ws.send(_encode(bad_command(f"Stella could not do {command.cmd!r}; see the log for details")))

    def send(self, event: Event, to: Iterable[ServerConnection] | None = None) -> None:
        """Queue `event` for every client (or `to`); never blocks."""
        broadcast(self.clients if to is None else to, _encode(event))

    def send_binary(self, data: bytes, to: Iterable[ServerConnection]) -> None:
        broadcast(to, data)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


def _encode(event: Event) -> str:
    wire = event.to_wire() if isinstance(event, AppEvent) else event_record(event)
    check_event(wire)  # an event the page does not know is a bug here, not something to send
    return json.dumps(wire, ensure_ascii=False, separators=(",", ":"))
