"""The link's client library: one reliable session to a gateway, whatever the network does.

    async with LinkClient("https://server:8765", credentials=creds) as client:  # creds: from pairing
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

Security: with `credentials` (from pairing, `remote_api.credentials`) every request carries a
fresh access token and message bodies are sealed end to end (`remote_api.seal`); https/wss
certificates are verified (`ca_file` for a private CA). Without credentials, a loopback URL
uses the local gateway's own device once that gateway has started (the embedded default needs
no setup, and the app may start before its gateway); until then it waits, and never talks in
clear: another local user may hold that port. Any other URL needs credentials. Only
`anonymous=True` (a gateway that authenticates nobody, as the link-layer tests run) sends
neither token nor seal.
Given several URLs (gateway replicas sharing state through Redis) the client moves to the next
one whenever a connection cannot be made, and resumes its session there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import httpx

from remote_api.credentials import (
    Credentials,
    CredentialsRejected,
    TokenSource,
    find_local_credentials,
    local_credentials_for,
)
from remote_api.envelope import ProtocolError, Type
from remote_api.link_config import LinkConfig
from remote_api.protocol import (
    BodyCodec,
    Connected,
    LinkDead,
    LinkProtocol,
    Message,
    PeerError,
    PlainCodec,
    Role,
    SessionLost,
)
from remote_api.seal import SealCodec
from remote_api.tls import client_context
from remote_api.transport import AuthRejected, Transport, TransportClosed, Untrusted
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


class LinkRefused(LinkError):
    """Retrying cannot help: the gateway refused the device (revoked, unknown credentials) or its
    TLS certificate is not trusted. `code` says which, `action` what to do."""

    def __init__(self, code: str, message: str, action: str = "Pair this device with the server again.") -> None:
        super().__init__(message)
        self.code = code
        self.action = action


class Turn:
    """One chat request's reply, as an async iterator of events ending with Done or Error."""

    def __init__(self, client: LinkClient, rid: str) -> None:
        self.rid = rid
        self._client = client
        self._queue: asyncio.Queue[ChatEvent] = asyncio.Queue()
        self.finished = False

    def cancel(self) -> None:
        self._client.cancel(self.rid)

    @property
    def answered(self) -> bool:
        """The server has begun its reply (so it has read the prompt), read yet or not."""
        return self.finished or not self._queue.empty()

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
        server_url: str | Sequence[str],
        config: LinkConfig | None = None,
        *,
        transport: TransportChoice = "auto",
        on_status: Callable[[LinkStatus], None] | None = None,
        headers: Mapping[str, str] | None = None,
        agent: str = "stella",
        credentials: Credentials | TokenSource | None = None,
        ca_file: str | Path | None = None,
        seal: bool | None = None,
        anonymous: bool = False,
    ) -> None:
        urls = [server_url] if isinstance(server_url, str) else list(server_url)
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"server URL {url!r} must start with http:// or https://")
            ws_url(url)  # refuse a malformed URL now, not on the first reconnect
        if not urls:
            raise ValueError("give at least one server URL")
        self.urls = [url.rstrip("/") for url in urls]
        self._url = 0
        self.config = config or LinkConfig()
        self.mode = transport
        self._on_status = on_status
        self._headers = dict(headers or {})
        self._ssl = client_context(ca_file)
        if anonymous and (credentials is not None or seal):
            raise ValueError("an anonymous client has no credentials and cannot seal; drop one of them")
        self._seal = False if anonymous else seal  # None: seal (there are credentials, or there will be)
        self.anonymous = anonymous
        self._find_local = credentials is None and not anonymous  # see `_local_credentials`
        if isinstance(credentials, Credentials):
            credentials = TokenSource(credentials, verify=self._ssl)
        self.tokens: TokenSource | None = credentials
        self.link = LinkProtocol(Role.CLIENT, self.config, agent=agent, codec=self._codec())
        self.status = LinkStatus("offline", detail="not connected yet")
        self._turns: dict[str, Turn] = {}
        self._wake = asyncio.Event()
        self._connected = asyncio.Event()
        self._stopped = asyncio.Event()
        self._refused: LinkRefused | None = None
        self._rejections = 0  # token refusals in a row
        self._manager: asyncio.Task[None] | None = None
        self._ws_failures: dict[str, int] = {}  # per URL
        self._ws_refused: set[str] = set()
        self._upgrade: WebSocketTransport | None = None
        self._closing = False

    @property
    def server_url(self) -> str:
        """The gateway URL in use (or tried next)."""
        return self.urls[self._url]

    def _codec(self) -> BodyCodec:
        seal = not self.anonymous if self._seal is None else self._seal
        return SealCodec(Role.CLIENT, self.tokens.link_key if self.tokens else b"") if seal else PlainCodec()

    async def _missing_credentials(self, url: str) -> str:
        """Nothing to connect with: no credentials, and none left by a local gateway. A remote URL,
        or a loopback one where a server already answers (so it is not a local gateway about to
        leave them: a proxy, a gateway that pairs no local device, another user's): LinkRefused.
        Otherwise the detail to wait with. Only /health is asked, which carries no conversation."""
        pair = (f"stella-server device add NAME on the server, then stella-chat --server {url} --pair CODE "
                "--credentials FILE")
        path = local_credentials_for(url)
        if path is None:
            raise LinkRefused("no_credentials", f"this device has no credentials for {url}",
                              f"Pair it first: {pair}.")
        detail = (f"no credentials for {url}: {path} (left by a local `stella-server serve` while it runs) does "
                  f"not exist or is stale, and this client never talks to a gateway in clear; start the local "
                  f"gateway, or pair: {pair}")
        if await self._answers(url) and not self._local_credentials():
            raise LinkRefused("no_credentials", detail, f"Pair this device: {pair}.")
        return detail

    async def _answers(self, url: str) -> bool:
        try:
            async with httpx.AsyncClient(verify=self._ssl, timeout=self.config.connect_timeout) as http:
                await http.get(url + "/health")
        except httpx.HTTPError:
            return False
        return True

    def _local_credentials(self) -> bool:
        """Without credentials, until the first connection: has a gateway on this loopback URL
        left its own device's credentials (the embedded default)? It may do so after we start."""
        if not self._find_local or self.tokens is not None or self.link.ever_opened:
            return False
        local = find_local_credentials(self.server_url)
        if local is None:
            return False
        self.tokens = TokenSource(local, verify=self._ssl)
        self.link.use_codec(self._codec())
        return True

    # --- lifecycle ------------------------------------------------------------------------

    async def connect(self, timeout: float | None = None) -> None:
        """Start keeping the session up; return once it is open (LinkError after `timeout`,
        LinkRefused as soon as the gateway refuses the device or its certificate is untrusted)."""
        if self._manager is None:
            self._manager = asyncio.create_task(self._maintain(), name="link-client")
        waits = [asyncio.ensure_future(self._connected.wait()), asyncio.ensure_future(self._stopped.wait())]
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waits:
                waiter.cancel()
        if self._refused is not None:
            raise self._refused
        if not self._connected.is_set():
            where = " or ".join(self.urls)
            raise LinkError(f"could not reach the Stella server at {where} within {timeout:g} s "
                            f"({self.status.detail})")

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
        repeat_penalty: float | None = None,
        dry_multiplier: float | None = None,
    ) -> Turn:
        """Send a chat request now (delivered once, even across reconnects); iterate the reply.
        `repeat_penalty` and `dry_multiplier` (llama-server's loop preventers): None = the server's own."""
        rid = rid or uuid.uuid4().hex
        body: dict[str, Any] = {"rid": rid, "messages": messages, "max_tokens": max_tokens,
                                "temperature": temperature, "stop": list(stop or [])}
        for key, value in (("seed", seed), ("repeat_penalty", repeat_penalty), ("dry_multiplier", dry_multiplier)):
            if value is not None:
                body[key] = value
        turn = self._turns[rid] = Turn(self, rid)
        self.link.send(Type.CHAT, body)
        self._wake.set()
        return turn

    def cancel(self, rid: str) -> None:
        """Stop reply `rid` (barge-in); its turn ends with Done(reason="cancelled")."""
        if rid in self._turns:
            self.link.send(Type.CANCEL, {"rid": rid})
            self._wake.set()

    def warm(self, messages: list[dict[str, str]]) -> None:
        """Ask the gateway to cache `messages`, the next turn's prefix, so its first token comes sooner."""
        self.link.send(Type.WARM, {"messages": messages})
        self._wake.set()

    # --- keeping the session up -----------------------------------------------------------

    async def _maintain(self) -> None:
        try:
            await self._keep_up()
        except LinkRefused as exc:
            self._refuse(exc)
        except CredentialsRejected as exc:
            self._refuse(LinkRefused(exc.code, exc.message, exc.action))
        except Untrusted as exc:
            self._refuse(LinkRefused("untrusted_certificate", str(exc), "Give the CA certificate (--ca-file)."))

    def _refuse(self, refused: LinkRefused) -> None:
        """Stop for good: tell the waiting turns and whoever waits in `connect`."""
        log.error("link stopped: %s", refused)
        self._refused = refused
        for rid, turn in list(self._turns.items()):
            turn._put(Error(rid, refused.code, str(refused), refused.action))
        self._set_status(LinkStatus("offline", detail=str(refused), session=self.link.sid))
        self._stopped.set()

    async def _keep_up(self) -> None:
        attempt = 0
        while not self._closing:
            transport, detail = await self._establish()
            if transport is not None:
                self._set_status(LinkStatus(transport.kind, detail="connecting", attempt=attempt,
                                            session=self.link.sid))
                opened, detail = await self._run_connection(transport)
                if opened:
                    attempt = 0
                else:
                    self._next_url()
                if self._upgrade is not None:
                    continue  # the WebSocket probe succeeded: carry on over it at once
            else:
                self._next_url()
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

    def _next_url(self) -> None:
        if len(self.urls) > 1:
            self._url = (self._url + 1) % len(self.urls)
            log.info("trying the next gateway: %s", self.server_url)

    async def _request_headers(self, url: str) -> dict[str, str]:
        """Headers for a request to `url`: a valid access token (refreshed there if due)."""
        return self._headers | (await self.tokens.headers(url) if self.tokens else {})

    def _rejected(self, exc: AuthRejected) -> None:
        """The gateway refused the token: a new one next time; refused twice in a row, give up."""
        if exc.status == 429 or self._local_credentials():
            return  # rate limited (the backoff waits), or we have credentials now
        self._rejections += 1
        if self.tokens is not None and self._rejections < 2:
            self.tokens.invalidate()
            return
        raise CredentialsRejected(exc.code, exc.message, exc.action or "Pair this device with the server again.")

    async def _establish(self) -> tuple[Transport | None, str]:
        """A transport to try next: the probed WebSocket, a new WebSocket, or long-poll."""
        if self._upgrade is not None:
            ws, self._upgrade = self._upgrade, None
            return ws, "upgraded"
        url = self.server_url
        self._local_credentials()
        if self.tokens is None and not self.anonymous:
            return None, await self._missing_credentials(url)
        try:
            headers = await self._request_headers(url)
        except Untrusted:
            raise
        except TransportClosed as exc:  # the token refresh did not get through: try again later
            return None, str(exc)
        failures = self._ws_failures.get(url, 0)
        use_ws = self.mode == "websocket" or (
            self.mode == "auto" and url not in self._ws_refused
            and failures < self.config.ws_failures_before_fallback)
        if use_ws:
            try:
                ws = await WebSocketTransport.open(url, self.config, headers, self._ssl)
            except UpgradeRefused as exc:
                self._ws_refused.add(url)
                detail = str(exc)
            except AuthRejected as exc:
                self._rejected(exc)
                return None, str(exc)
            except Untrusted:
                raise
            except TransportClosed as exc:
                failures = self._ws_failures[url] = failures + 1
                detail = str(exc)
            else:
                self._ws_failures[url] = 0
                self._rejections = 0
                return ws, "websocket open"
            log.info("%s", detail)
            fall_back = url in self._ws_refused or failures >= self.config.ws_failures_before_fallback
            if self.mode == "websocket" or not fall_back:
                return None, detail
        return LongPollTransport(url, self.link, self.config, lambda: self._request_headers(url),
                                 self._ssl), "long-poll"

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
                        why = self._outcome(task)
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
            self._ws_failures.clear()  # neither transport works: the network is down, not a proxy
        return opened, why

    def _outcome(self, task: asyncio.Task[None]) -> str:
        """Why a transport task ended; a refused token is dealt with, a refused device raises."""
        exc = None if task.cancelled() else task.exception()
        if isinstance(exc, AuthRejected):
            self._rejected(exc)
        elif isinstance(exc, CredentialsRejected | Untrusted):
            raise exc
        elif isinstance(exc, ProtocolError) and exc.code == "seal_required":  # no use retrying
            raise LinkRefused(exc.code, exc.message, exc.action)
        return _task_outcome(task)

    def _on_connected(self, transport: Transport, event: Connected) -> None:
        log.info("link %s over %s to %s (session %s)", "resumed" if event.resumed else "opened", transport.kind,
                 self.server_url, event.sid)
        self._rejections = 0
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
                url = self.server_url
                ws = await WebSocketTransport.open(url, self.config, await self._request_headers(url), self._ssl)
            except (TransportClosed, CredentialsRejected) as exc:
                log.debug("WebSocket probe failed: %s", exc)
                continue
            log.info("WebSocket works again: moving the session over")
            self._ws_refused.discard(url)
            self._ws_failures[url] = 0
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
