"""The link's client library: one reliable session to a gateway, whatever the network does.

    async with LinkClient("http://server:8765") as client:
        turn = client.chat([{"role": "user", "content": "Hi!"}])
        async for event in turn:          # Token ..., then Done or Error
            ...
        client.cancel(turn.rid)           # or turn.cancel(): barge-in

The client keeps one `LinkProtocol` for the session across connections. It prefers a
WebSocket; when one cannot be established (an HTTP answer to the upgrade, or
`ws_failures_before_fallback` failures in a row) it carries the session over HTTP long-poll and
keeps probing the WebSocket every `upgrade_probe_interval`, switching back as soon as it can.
Every switch and reconnect resumes from (session id, last seq), so no token is lost or repeated.
`on_status` receives `LinkStatus` updates (transport, reconnect countdown) for the UI.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from remote_api.envelope import ProtocolError, Type
from remote_api.link_config import LinkConfig
from remote_api.protocol import (
    Connected,
    LinkDead,
    LinkProtocol,
    Message,
    PeerError,
    Role,
    SessionLost,
)
from remote_api.transport import Transport, TransportClosed
from remote_api.transport_longpoll import LongPollTransport
from remote_api.transport_ws import UpgradeRefused, WebSocketTransport, ws_url

log = logging.getLogger(__name__)

TransportChoice = Literal["auto", "websocket", "longpoll"]


@dataclass(frozen=True)
class LinkStatus:
    """What the UI shows about the link.

    `transport` is what carries the session now ("offline" between connections); `retry_in`
    is the reconnect countdown in seconds (from `at`, a time.monotonic() stamp) while offline.
    """

    transport: Literal["websocket", "longpoll", "offline"]
    connected: bool = False
    retry_in: float | None = None
    attempt: int = 0
    detail: str = ""
    session: str = ""
    at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class Token:
    rid: str
    index: int
    text: str


@dataclass(frozen=True)
class Done:
    """The reply ended: reason stop|length|cancelled; `tokens` token envelopes were sent."""

    rid: str
    reason: str
    tokens: int
    timings: dict[str, Any]


@dataclass(frozen=True)
class Error:
    """The reply failed: a stable code, what happened and what to do, in plain language."""

    rid: str
    code: str
    message: str
    action: str


ChatEvent = Token | Done | Error


class LinkError(Exception):
    """The client could not reach the gateway; the message says what was tried."""


class Turn:
    """One chat request's reply, as an async iterator of events ending with Done or Error."""

    def __init__(self, client: LinkClient, rid: str) -> None:
        self.rid = rid
        self._client = client
        self._queue: asyncio.Queue[ChatEvent] = asyncio.Queue()
        self.finished = False

    def cancel(self) -> None:
        self._client.cancel(self.rid)

    def _put(self, event: ChatEvent) -> None:
        self._queue.put_nowait(event)

    async def __aiter__(self) -> AsyncIterator[ChatEvent]:
        while not self.finished:
            event = await self._queue.get()
            if isinstance(event, Done | Error):
                self.finished = True
                self._client._turns.pop(self.rid, None)
            yield event


class LinkClient:
    def __init__(
        self,
        server_url: str,
        config: LinkConfig | None = None,
        *,
        transport: TransportChoice = "auto",
        on_status: Callable[[LinkStatus], None] | None = None,
        on_outfit: Callable[[str], None] | None = None,
        headers: Mapping[str, str] | None = None,
        agent: str = "stella",
    ) -> None:
        if not server_url.startswith(("http://", "https://")):
            raise ValueError(f"server URL {server_url!r} must start with http:// or https://")
        ws_url(server_url)  # refuse a malformed URL now, not on the first reconnect
        self.server_url = server_url.rstrip("/")
        self.config = config or LinkConfig()
        self.mode = transport
        self._on_status = on_status
        self._on_outfit = on_outfit
        self._headers = dict(headers or {})  # the auth seam: a later issue adds the device JWT
        self.link = LinkProtocol(Role.CLIENT, self.config, agent=agent)
        self.status = LinkStatus("offline", detail="not connected yet")
        self._turns: dict[str, Turn] = {}
        self._wake = asyncio.Event()
        self._connected = asyncio.Event()
        self._manager: asyncio.Task[None] | None = None
        self._ws_failures = 0
        self._ws_refused = False
        self._upgrade: WebSocketTransport | None = None
        self._closing = False

    # --- lifecycle ------------------------------------------------------------------------

    async def connect(self, timeout: float | None = None) -> None:
        """Start keeping the session up; return once it is open (LinkError after `timeout`)."""
        if self._manager is None:
            self._manager = asyncio.create_task(self._maintain(), name="link-client")
        try:
            await asyncio.wait_for(self._connected.wait(), timeout)
        except TimeoutError:
            raise LinkError(f"could not reach the Stella server at {self.server_url} within {timeout:g} s "
                            f"({self.status.detail})") from None

    async def close(self) -> None:
        """End the session (the gateway frees it) and stop reconnecting."""
        self._closing = True
        if self.link.established:
            self.link.goodbye()
            self._wake.set()
            await asyncio.sleep(0.05)  # give the bye a moment to leave
        if self._manager is not None:
            self._manager.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._manager
        if self._upgrade is not None:
            await self._upgrade.close()
        self._set_status(LinkStatus("offline", detail="closed"))

    async def __aenter__(self) -> LinkClient:
        await self.connect(self.config.connect_timeout * 2)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- the application's side -----------------------------------------------------------

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int = 128,
        temperature: float = 0.7,
        seed: int | None = None,
        stop: list[str] | None = None,
        rid: str | None = None,
    ) -> Turn:
        """Send a chat request now (delivered once, even across reconnects); iterate the reply."""
        rid = rid or uuid.uuid4().hex
        body: dict[str, Any] = {"rid": rid, "messages": messages, "max_tokens": max_tokens,
                                "temperature": temperature, "stop": list(stop or [])}
        if seed is not None:
            body["seed"] = seed
        turn = self._turns[rid] = Turn(self, rid)
        self.link.send(Type.CHAT, body)
        self._wake.set()
        return turn

    def cancel(self, rid: str) -> None:
        """Stop reply `rid` (barge-in); its turn ends with Done(reason="cancelled")."""
        if rid in self._turns:
            self.link.send(Type.CANCEL, {"rid": rid})
            self._wake.set()

    def send_outfit(self, outfit: str) -> None:
        self.link.send(Type.OUTFIT, {"outfit": outfit, "source": "user"})
        self._wake.set()

    # --- keeping the session up -----------------------------------------------------------

    async def _maintain(self) -> None:
        attempt = 0
        while not self._closing:
            transport, detail = await self._establish()
            if transport is not None:
                self._set_status(LinkStatus(transport.kind, detail="connecting", attempt=attempt,
                                            session=self.link.sid))
                opened, detail = await self._run_connection(transport)
                if opened:
                    attempt = 0
                if self._upgrade is not None:
                    continue  # the WebSocket probe succeeded: carry on over it at once
            if self._closing:
                return
            delay = self._backoff(attempt)
            attempt += 1
            log.info("link offline (%s); reconnecting in %.2f s", detail, delay)
            self._set_status(LinkStatus("offline", retry_in=delay, attempt=attempt, detail=detail,
                                        session=self.link.sid))
            await asyncio.sleep(delay)

    def _backoff(self, attempt: int) -> float:
        cfg = self.config
        base = min(cfg.reconnect_max, cfg.reconnect_min * 2 ** min(attempt, 30))
        return base * random.uniform(1 - cfg.reconnect_jitter, 1 + cfg.reconnect_jitter)

    async def _establish(self) -> tuple[Transport | None, str]:
        """A transport to try next: the probed WebSocket, a new WebSocket, or long-poll."""
        if self._upgrade is not None:
            ws, self._upgrade = self._upgrade, None
            return ws, "upgraded"
        use_ws = self.mode == "websocket" or (
            self.mode == "auto" and not self._ws_refused
            and self._ws_failures < self.config.ws_failures_before_fallback)
        if use_ws:
            try:
                ws = await WebSocketTransport.open(self.server_url, self.config, self._headers)
            except UpgradeRefused as exc:
                self._ws_refused = True
                detail = str(exc)
            except TransportClosed as exc:
                self._ws_failures += 1
                detail = str(exc)
            else:
                self._ws_failures = 0
                return ws, "websocket open"
            log.info("%s", detail)
            fall_back = self._ws_refused or self._ws_failures >= self.config.ws_failures_before_fallback
            if self.mode == "websocket" or not fall_back:
                return None, detail
        return LongPollTransport(self.server_url, self.link, self.config, self._headers), "long-poll"

    async def _run_connection(self, transport: Transport) -> tuple[bool, str]:
        """Carry the session over `transport` until it dies; returns (welcomed, why it ended)."""
        link = self.link
        link.connection_made()
        outgoing: asyncio.Queue[list[bytes]] = asyncio.Queue()
        tasks = [asyncio.create_task(self._reader(transport)),
                 asyncio.create_task(self._writer(transport, outgoing))]
        if transport.kind == "longpoll" and self.mode == "auto":
            tasks.append(asyncio.create_task(self._probe_websocket()))
        for task in tasks:  # a transport failing must end the connection now, not at the next timer
            task.add_done_callback(lambda _: self._wake.set())
        opened, why, dead = False, "", False
        try:
            while True:
                link.tick()
                for event in link.events():
                    if isinstance(event, Connected):
                        opened = True
                        self._on_connected(transport, event)
                    elif isinstance(event, LinkDead):
                        why, dead = event.reason, True
                    else:
                        self._on_event(event)
                frames = link.data_to_send()
                if frames:
                    outgoing.put_nowait(frames)
                if self._upgrade is not None:
                    why = why or "moving to WebSocket"
                for task in tasks:
                    if task.done() and not why:
                        why = _task_outcome(task)
                if why:
                    break
                deadline = link.next_deadline()
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
                self._wake.clear()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            with contextlib.suppress(Exception):
                await transport.close(dead=dead)
            link.connection_lost()
            self._connected.clear()
        log.info("%s connection ended: %s", transport.kind, why)
        if not opened and transport.kind == "longpoll":
            self._ws_failures = 0  # neither transport works: the network is down, not a proxy
        return opened, why

    def _on_connected(self, transport: Transport, event: Connected) -> None:
        log.info("link %s over %s (session %s)", "resumed" if event.resumed else "opened", transport.kind,
                 event.sid)
        self._set_status(LinkStatus(transport.kind, connected=True, detail="connected", session=event.sid))
        self._connected.set()

    async def _reader(self, transport: Transport) -> None:
        while True:
            for frame in await transport.recv():
                try:
                    self.link.receive(frame)
                finally:
                    self._wake.set()

    async def _writer(self, transport: Transport, outgoing: asyncio.Queue[list[bytes]]) -> None:
        while True:
            frames = await outgoing.get()
            while not outgoing.empty():
                frames += outgoing.get_nowait()
            await transport.send(frames)

    async def _probe_websocket(self) -> None:
        """While on long-poll: try the WebSocket now and then; hand over the first that opens."""
        while True:
            await asyncio.sleep(self.config.upgrade_probe_interval)
            try:
                ws = await WebSocketTransport.open(self.server_url, self.config, self._headers)
            except TransportClosed as exc:
                log.debug("WebSocket probe failed: %s", exc)
                continue
            log.info("WebSocket works again: moving the session over")
            self._ws_refused, self._ws_failures = False, 0
            self._upgrade = ws
            self._wake.set()
            return

    def _on_event(self, event: object) -> None:
        if isinstance(event, Message):
            self._on_message(event)
        elif isinstance(event, SessionLost):
            log.warning("the server lost session %s; open replies are gone", event.old_sid)
            for rid, turn in list(self._turns.items()):
                turn._put(Error(rid, "session_lost",
                                "The server restarted or forgot this session, so this reply was lost.",
                                "Ask again."))
        elif isinstance(event, PeerError):
            log.warning("the server reported %s: %s", event.code, event.message)
            self.status = replace(self.status, detail=f"{event.code}: {event.message}")

    def _on_message(self, msg: Message) -> None:
        body = msg.body
        if msg.type is Type.OUTFIT:
            if self._on_outfit is not None:
                self._on_outfit(body["outfit"])
            return
        turn = self._turns.get(body.get("rid", ""))
        if turn is None:
            return  # a reply nobody waits for any more
        if msg.type is Type.TOKEN:
            turn._put(Token(body["rid"], body["i"], body["text"]))
        elif msg.type is Type.DONE:
            turn._put(Done(body["rid"], body["reason"], body["tokens"], body.get("timings", {})))
        elif msg.type is Type.ERROR:
            turn._put(Error(body["rid"], body["code"], body["message"], body["action"]))

    def _set_status(self, status: LinkStatus) -> None:
        self.status = status
        if self._on_status is not None:
            try:
                self._on_status(status)
            except Exception:
                log.exception("on_status callback failed")


def _task_outcome(task: asyncio.Task[None]) -> str:
    if task.cancelled():
        return "cancelled"
    exc = task.exception()
    if isinstance(exc, TransportClosed | ProtocolError):
        return str(exc)
    if exc is not None:
        log.error("link task crashed", exc_info=exc)
        return f"internal error: {exc!r}"
    return "stopped"
