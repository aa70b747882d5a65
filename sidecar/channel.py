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
import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus

from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from sidecar.channel_messages import AppEvent, BadCommand, Command, bad_command, parse_command
from sidecar.channel_schema import check_event
from sidecar.events import event_record
from sidecar.frames import Frame

log = logging.getLogger(__name__)

SUBPROTOCOL = "stella.v1"
AUTH_PREFIX = "auth."
MAX_COMMAND_BYTES = 64 * 1024

# The launch contract between the shell and the engine, all in the engine's environment.
SECRET_ENV = "STELLA_CHANNEL_SECRET"
PORT_ENV = "STELLA_CHANNEL_PORT"  # the port to bind, so a restarted engine keeps the page's address
RESTARTS_ENV = "STELLA_ENGINE_RESTARTS"
LAST_EXIT_ENV = "STELLA_ENGINE_LAST_EXIT"
PORT_LINE = "channel_port="  # the engine's first line on stdout: channel_port=<port>

Event = AppEvent | Frame  # a frame goes out as the record the headless JSONL log writes
CommandHandler = Callable[[ServerConnection, Command], Awaitable[None]]


class ChannelError(RuntimeError):
    """The channel cannot start (no secret, port taken and no other free)."""


@dataclass(frozen=True)
class Launch:
    """What the shell tells the engine when it starts it (see the *_ENV names)."""

    secret: str
    port: int = 0
    restarts: int = 0
    last_exit: str = ""

    def env(self) -> dict[str, str]:
        return {SECRET_ENV: self.secret, PORT_ENV: str(self.port), RESTARTS_ENV: str(self.restarts),
                LAST_EXIT_ENV: self.last_exit}

    @classmethod
    def from_env(cls, environ: dict[str, str] | os._Environ[str] = os.environ) -> Launch:
        """Read and remove the secret from the environment, so no child process inherits it."""
        secret = environ.pop(SECRET_ENV, "")
        if len(secret) < 32:
            raise ChannelError(f"{SECRET_ENV} must hold the launch secret (at least 32 characters); the desktop "
                               "shell sets it when it starts the engine")
        try:
            port = int(environ.get(PORT_ENV) or 0)
            restarts = int(environ.get(RESTARTS_ENV) or 0)
        except ValueError as exc:
            raise ChannelError(f"bad launch setting from the shell: {exc}") from None
        return cls(secret, port, restarts, environ.get(LAST_EXIT_ENV, ""))


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
