"""The gateway: a Starlette app with the link's WebSocket and long-poll endpoints.

Thin I/O around the sans-I/O `LinkProtocol`: each session has one loop task that runs the
protocol's timers, turns its events into work (a chat request starts a generation, a cancel
cancels it) and hands its output to whatever transport currently carries the session. Both
transports carry the same envelopes under the same rules, so a client can switch between them
in the middle of a reply:

- ``GET  /link/ws``   WebSocket; the first frame is a hello, then envelopes both ways.
- ``POST /link/send`` NDJSON envelopes from the client; a hello opens/resumes the session and
  the response carries the welcome (and replay); otherwise ``?sid=`` names the session.
- ``GET  /link/poll?sid=&ack=`` the next envelopes for the client (NDJSON), held open up to
  ``longpoll_hold`` s; ``ack`` is the client's resume point, so a lost response is replayed
  by the next poll.
- ``GET  /health``    ``{"status": ok|degraded}``; the details (upstreams, sessions, version)
  only for a paired device's token or the operator (`remote_api.operator`).

Generations stream from llama-server through the relay (`remote_api.relay`, over
`remote_api.upstream`); cancelling one closes the upstream HTTP stream, which is how
llama-server stops. Security plugs into seams: `authenticate`
(device JWTs, `remote_api.auth`), `recheck` (revocation of open sessions) and `codec_factory`
(sealed bodies, `remote_api.seal`).

With shared state (`sessions.shared`, Redis) several replicas serve the same sessions
(`remote_api.takeover`: write-ahead before any frame leaves, taking a session over); a reply in
flight is generated again with the same seed, skipping the tokens already sent after checking
they came out the same (`remote_api.relay`). This module keeps the wiring: sessions, their
loops, the transports' endpoints.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import importlib.metadata
import logging
import math
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from remote_api.attachments import (
    CLOSE_DEAD,
    CLOSE_GOING_AWAY,
    CLOSE_SUPERSEDED,
    CLOSE_UNAUTHORIZED,
    PollAttachment,
    WsAttachment,
)
from remote_api.envelope import CLOSE_LIMIT, AuthError, Envelope, LimitError, ProtocolError, Type, decode
from remote_api.link_config import LinkConfig
from remote_api.link_sessions import CodecFactory, Session, SessionRegistry, TurnProgress, device_of, plain_codec
from remote_api.operator import is_operator
from remote_api.protocol import (
    Clock,
    Connected,
    Event,
    Goodbye,
    LinkDead,
    Message,
    PeerError,
)
from remote_api.relay import Relay
from remote_api.responses import STATE_DOWN, auth_error_response, error_frame, error_response, ndjson, read_ndjson
from remote_api.state import MemorySessions, SessionStore, StateError
from remote_api.takeover import Replicas
from remote_api.upstream import Upstream
from remote_api.upstream_pool import UpstreamPool
from remote_api.warmup import SlotKeeper

log = logging.getLogger(__name__)


def _version() -> str:
    try:
        return importlib.metadata.version("stella")
    except importlib.metadata.PackageNotFoundError:  # run from a tree or bundle without its metadata
        return "unknown"


_VERSION = _version()

# authenticate(conn): an identity for the session; None refuses without a reason (HTTP 403);
# raising AuthError refuses with one (its status, and an error envelope saying what to do).
Authenticator = Callable[[HTTPConnection], Awaitable[Any]]
# recheck(identity): why an open session's client may no longer connect (None: it may).
Rechecker = Callable[[Any], Awaitable[AuthError | None]]


async def allow_all(conn: HTTPConnection) -> Any:
    """The default `authenticate` hook: every client is welcome (`remote_api.auth` checks devices)."""
    return "anonymous"


class Gateway:
    """Sessions, their loops and their generations; the endpoints are its methods."""

    def __init__(
        self,
        config: LinkConfig,
        upstreams: list[Upstream],
        *,
        authenticate: Authenticator = allow_all,
        recheck: Rechecker | None = None,
        codec_factory: CodecFactory = plain_codec,
        sessions: SessionStore | None = None,
        replica: str = "",
        clock: Clock = time.monotonic,
        health_interval: float = 5.0,
        recheck_interval: float = 5.0,
        operator_secret: str = "",
    ) -> None:
        self.config = config
        self.upstreams = upstreams
        self.pool = UpstreamPool(upstreams, check_interval=health_interval)
        self.slots = SlotKeeper(self.pool)  # each session's upstream, pinned slot and warm-ups
        self.authenticate = authenticate
        self.recheck = recheck
        self.operator_secret = operator_secret
        self.sessions: SessionStore = sessions or MemorySessions()
        self.replica = replica or secrets.token_hex(6)
        self.clock = clock
        self.registry = SessionRegistry(config, clock=clock, codec_factory=codec_factory)
        self._sweep_interval = min(5.0, config.session_ttl / 4, recheck_interval)
        self._sweeper: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()  # sessions ended by a bye
        self._generating: collections.Counter[str] = collections.Counter()  # device -> replies being written
        self.replicas = Replicas(self.sessions, self.replica, self.registry, self.slots, self._start_turn)
        self.relay = Relay(config, self.slots, self.pool, self.sessions, self._send)

    # --- lifecycle ------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self._sweeper = asyncio.create_task(self._sweep(), name="session-sweeper")
        try:
            yield
        finally:
            self._sweeper.cancel()
            for session in self.registry:  # shared sessions stay in the store for another replica
                await self._close_session(session, CLOSE_GOING_AWAY, "the gateway is shutting down", forget=False)
            await self.pool.aclose()

    async def _sweep(self) -> None:
        """Expire abandoned sessions, end those whose device lost its right, keep shared ones alive."""
        while True:
            await asyncio.sleep(self._sweep_interval)
            try:
                for session in self.registry.expired():
                    log.info("session %s expired after %.0f s without a connection", session.sid,
                             self.config.session_ttl)
                    await self._close_session(session, CLOSE_GOING_AWAY, "session expired")
                if self.recheck is not None:
                    await self._recheck_all()
                await self.sessions.keep_alive([s.sid for s in self.registry])
            except StateError as exc:
                log.warning("session sweep: %s", exc)

    async def _recheck_all(self) -> None:
        assert self.recheck is not None
        verdicts: dict[tuple[str, str], AuthError | None] = {}  # many sessions share a device and token
        for session in self.registry:
            key = (device_of(session.identity), str(getattr(session.identity, "jti", "")))
            if key not in verdicts:
                verdicts[key] = await self.recheck(session.identity)
            refused = verdicts[key]
            if refused is None or session.closed:
                continue
            if refused.code == "token_expired":  # the session stays: the client reconnects with a new token
                if session.attachment is not None:
                    session.attachment.close(CLOSE_UNAUTHORIZED, refused.message)
                    self._detach(session, session.attachment)
            else:
                log.info("session %s ended: %s", session.sid, refused.message)
                await self._close_session(session, CLOSE_UNAUTHORIZED, refused.message)

    async def _close_session(self, session: Session, code: int, reason: str, *, forget: bool = True) -> None:
        self.registry.remove(session)
        if session.attachment is not None:
            session.attachment.close(code, reason)
            session.attachment = None
        self.slots.forget(session.sid)
        tasks = [*session.turns.values(), *([session.runner] if session.runner else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # A cancelled task keeps its traceback, whose frames hold the session: let go of it now,
        # so its buffers are freed at once rather than at the next full garbage collection.
        session.runner = None
        if forget:
            await self.sessions.drop_session(session.sid, self.replica)

    async def _open_session(self, hello: Envelope, identity: Any) -> Session:
        """The session a hello resumes (here, or taken over from another replica), or a new one."""
        if not self.sessions.shared:
            session = self.registry.resumable(hello, identity)
            if session is None:
                await self._make_room(identity)
                session = self.registry.create(identity)
        else:
            session = await self.replicas.take_over(hello.sid, identity) if hello.sid else None
            if session is None:
                await self._make_room(identity)
                session = self.registry.create(identity)
                await self.sessions.create_session(session.sid, self.replica, device_of(identity))
        session.identity = identity  # the same device; its newest token
        if session.runner is None:
            session.runner = asyncio.create_task(self._run(session), name=f"session-{session.sid}")
        return session

    async def _make_room(self, identity: Any) -> None:
        """Before a new session: end the device's oldest idle one if it is at its bound; refuse
        (`LimitError`) if none of its sessions is idle or the gateway is full."""
        cfg = self.config
        while len(mine := self.registry.of_device(identity)) >= cfg.max_sessions_per_device:
            idle = [s for s in mine if not s.turns]
            if not idle:
                raise LimitError("too_many_sessions", f"this device already has {len(mine)} sessions, each waiting "
                                 "for a reply, the most the gateway keeps for one device",
                                 "Wait for a reply to finish, then connect again.", "max_sessions_per_device")
            oldest = min(idle, key=lambda s: (s.attachment is not None, s.last_active))
            log.info("session %s ended: its device opened more than %d sessions (oldest idle one goes)",
                     oldest.sid, cfg.max_sessions_per_device)
            await self._close_session(oldest, CLOSE_LIMIT, "too_many_sessions (link.max_sessions_per_device)")
        if len(self.registry) >= cfg.max_sessions:
            raise LimitError("gateway_full", f"the gateway holds {len(self.registry)} sessions, its most",
                             "Try again later; the server's operator may raise link.max_sessions.", "max_sessions",
                             status=503)

    def _attach(self, session: Session, attachment: WsAttachment | PollAttachment) -> None:
        """`attachment` now carries the session; an older one is closed (it is superseded)."""
        if session.attachment is not None:
            session.attachment.close(CLOSE_SUPERSEDED, "a newer connection took over this session")
        session.attachment = attachment
        session.detached_since = None
        session.last_active = self.clock()
        session.link.connection_made()

    def _detach(self, session: Session, attachment: object) -> None:
        if session.attachment is attachment:
            session.attachment = None
            session.detached_since = session.last_active = self.clock()
            session.link.connection_lost()

    # --- the session loop -----------------------------------------------------------------

    async def _run(self, session: Session) -> None:
        """Timers, events and output of one session, until it is closed."""
        link = session.link
        while not session.closed:
            deadline = link.next_deadline()
            timeout = None if deadline is None else max(0.0, deadline - self.clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(session.wake.wait(), timeout)
            session.wake.clear()
            link.tick()
            for event in link.events():
                try:
                    await self._on_event(session, event)
                except Exception:  # a bug must not take the session's loop down with it
                    log.exception("session %s: failed to handle a %s event", session.sid, type(event).__name__)
            if session.closed:
                return
            await self._flush(session)

    async def _flush(self, session: Session) -> None:
        if not await self.replicas.write_ahead(session):
            return
        att = session.attachment  # read after the write: a newer connection may have taken over
        if isinstance(att, WsAttachment):
            att.push(session.link.data_to_send())
        elif isinstance(att, PollAttachment) and session.link.pending_output:
            att.ready.set()

    async def _on_event(self, session: Session, event: Event) -> None:
        if isinstance(event, Message):
            await self._on_message(session, event)
        elif isinstance(event, Connected):
            log.info("session %s %s over %s by %s", session.sid, "resumed" if event.resumed else "opened",
                     getattr(session.attachment, "kind", "?"), session.link.peer_agent or "a client")
        elif isinstance(event, LinkDead):
            log.info("session %s: connection dead: %s", session.sid, event.reason)
            att = session.attachment
            if att is not None:
                att.close(CLOSE_DEAD, "heartbeat timeout")
                self._detach(session, att)
        elif isinstance(event, Goodbye):
            log.info("session %s closed by the client", session.sid)
            task = asyncio.create_task(self._close_session(session, 1000, "bye"))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        elif isinstance(event, PeerError):
            log.warning("session %s: client reported %s: %s", session.sid, event.code, event.message)

    async def _on_message(self, session: Session, msg: Message) -> None:
        rid = msg.body.get("rid", "")
        if msg.type is Type.CHAT:
            if rid in session.turns:
                return  # in flight: its reply is already streaming
            most = self.config.max_generations_per_device
            if self._generating[device_of(session.identity)] >= most:
                self._send(session, Type.ERROR, {
                    "rid": rid, "code": "too_many_generations",
                    "message": f"This device already has {most} replies being written, the most the gateway "
                               "allows at once (link.max_generations_per_device).",
                    "action": "Wait for a reply to finish or cancel one, then ask again.",
                })
            elif await self.sessions.claim_rid(rid, session.sid, msg.seq):
                # The seed is fixed here so a replica taking over can generate the same reply again.
                request = msg.body | {"seed": msg.body.get("seed") if msg.body.get("seed") is not None
                                      else secrets.randbelow(2**31)}
                turn = session.progress[rid] = TurnProgress(request)
                self._start_turn(session, rid, turn)
            else:
                self._send(session, Type.ERROR, {
                    "rid": rid, "code": "duplicate_request",
                    "message": f"Request {rid} was already received and answered; a request id is used once.",
                    "action": "Send the question again as a new request (a new id) to get a new reply.",
                })
        elif msg.type is Type.CANCEL:
            turn = session.turns.get(rid)
            if turn is not None:
                turn.cancel()
        elif msg.type is Type.OUTFIT:
            log.info("session %s: outfit %s", session.sid, msg.body["outfit"])
        elif msg.type is Type.WARM:  # a hint: skipped while the device is at its bound of replies
            if self._generating[device_of(session.identity)] < self.config.max_generations_per_device:
                self.slots.warm(session.sid, msg.body["messages"])

    def _start_turn(self, session: Session, rid: str, turn: TurnProgress) -> None:
        """Generate reply `rid`, counted against its device until the task is over."""
        who = device_of(session.identity)
        self._generating[who] += 1
        task = session.turns[rid] = asyncio.create_task(self.relay.generate(session, rid, turn))
        task.add_done_callback(lambda _: self._turn_over(who))

    def _turn_over(self, who: str) -> None:
        self._generating[who] -= 1
        if self._generating[who] <= 0:
            del self._generating[who]

    def _send(self, session: Session, kind: Type, body: dict[str, Any]) -> None:
        if not session.closed:
            session.link.send(kind, body)
            session.wake.set()

    # --- WebSocket ------------------------------------------------------------------------

    async def websocket(self, ws: WebSocket) -> None:
        try:
            identity = await self.authenticate(ws)
        except AuthError as exc:  # before accept: the handshake gets the HTTP status and the reason
            await ws.send_denial_response(auth_error_response(exc))
            return
        if identity is None:
            await ws.close(CLOSE_UNAUTHORIZED)  # before accept: the handshake gets HTTP 403
            return
        await ws.accept()
        try:
            first = await asyncio.wait_for(self._ws_frame(ws), self.config.handshake_timeout)
        except (TimeoutError, WebSocketDisconnect):
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await ws.close(CLOSE_DEAD)
            return
        try:
            hello = decode(first, self.config.max_frame_bytes)
            if hello.type is not Type.HELLO:
                raise ProtocolError("hello_required", "the first envelope on a connection must be 'hello'")
        except ProtocolError as exc:
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await ws.send_text(error_frame(exc.code, exc.message, exc.action).decode())
                await ws.close(exc.close_code)
            return
        try:
            session = await self._open_session(hello, identity)
        except (StateError, LimitError) as exc:
            if isinstance(exc, LimitError):
                log.info("refused a new session: %s", exc)
                refusal, code, reason = error_frame(exc.code, exc.message, exc.action), exc.close_code, exc.reason
            else:
                log.error("cannot open a session: %s", exc)
                refusal, code, reason = error_frame(*STATE_DOWN), 1011, ""
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await ws.send_text(refusal.decode())
                await ws.close(code, reason)
            return
        att = WsAttachment(self.config.outbound_bytes)
        self._attach(session, att)
        writer = asyncio.create_task(self._ws_writer(ws, att))
        att.reader = asyncio.create_task(self._ws_read(ws, session, att, first))
        try:
            await asyncio.wait([att.reader])
        finally:
            att.reader.cancel()
            self._detach(session, att)
            att.close(att.close_code, att.close_reason)
            if att.stuck:  # the writer waits for a socket the client does not read: drop the connection
                log.info("session %s: the client is not reading (over %d bytes waiting, link.outbound_bytes); "
                         "connection dropped, the session is kept", session.sid, att.limit)
                writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            if att.stuck:
                with contextlib.suppress(Exception):  # it is only told if it reads again soon
                    await asyncio.wait_for(ws.close(att.close_code, att.close_reason), 0.5)

    async def _ws_read(self, ws: WebSocket, session: Session, att: WsAttachment, frame: bytes | str) -> None:
        """Feed the client's frames to its session until it disconnects, breaks the protocol or
        another connection takes the session over."""
        with contextlib.suppress(WebSocketDisconnect):
            while session.attachment is att:
                try:
                    session.link.receive(frame)
                except ProtocolError as exc:
                    log.warning("session %s: bad envelope from the client: %s", session.sid, exc)
                    if await self.replicas.write_ahead(session):
                        att.push(session.link.data_to_send())
                    att.close(exc.close_code, exc.reason)
                    return
                finally:
                    session.wake.set()
                frame = await self._ws_frame(ws)

    @staticmethod
    async def _ws_frame(ws: WebSocket) -> bytes | str:
        msg = await ws.receive()
        if msg["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(msg.get("code", 1000))
        return msg.get("text") if msg.get("text") is not None else msg.get("bytes", b"")

    @staticmethod
    async def _ws_writer(ws: WebSocket, att: WsAttachment) -> None:
        with contextlib.suppress(Exception):  # the socket may already be gone: nothing to do
            while (frame := await att.queue.get()) is not None:
                att.queued -= len(frame)
                await ws.send_text(frame.decode())
            await ws.close(att.close_code, att.close_reason)

    # --- long-poll ------------------------------------------------------------------------

    async def _identify(self, request: Request) -> Any:
        """The identity behind a long-poll request, or the Response refusing it."""
        try:
            identity = await self.authenticate(request)
        except AuthError as exc:
            return auth_error_response(exc)
        if identity is None:
            return error_response(401, "unauthorized", "this device is not allowed to connect",
                                  "Pair the device with the server again.")
        return identity

    async def longpoll_send(self, request: Request) -> Response:
        identity = await self._identify(request)
        if isinstance(identity, Response):
            return identity
        try:
            frames = await read_ndjson(request, self.config.max_frame_bytes)
        except ProtocolError as exc:
            status = 413 if exc.code == "frame_too_large" else 400
            return error_response(status, exc.code, exc.message, exc.action)
        if not frames:
            return error_response(400, "bad_request", "the request carries no envelopes",
                                   "Send one envelope per line.")
        try:
            first = decode(frames[0], self.config.max_frame_bytes)
        except ProtocolError as exc:
            return error_response(400, exc.code, exc.message, exc.action)
        if first.type is Type.HELLO:
            try:
                session = await self._open_session(first, identity)
            except StateError as exc:
                log.error("cannot open a session: %s", exc)
                return error_response(503, *STATE_DOWN)
            except LimitError as exc:
                log.info("refused a new session: %s", exc)
                return error_response(exc.status, exc.code, exc.message, exc.action)
            att: PollAttachment = PollAttachment()
            self._attach(session, att)
        else:
            found = self._polled_session(request, identity)
            if isinstance(found, Response):
                return found
            session, att = found
        try:
            for frame in frames:
                session.link.receive(frame)
        except ProtocolError as exc:
            log.warning("session %s: bad envelope from the client: %s", session.sid, exc)
            self._detach(session, att)
            return error_response(exc.status if isinstance(exc, LimitError) else 400, exc.code, exc.message,
                                  exc.action)
        finally:
            session.wake.set()
        if first.type is Type.HELLO:  # answer with the welcome (and any replay) at once
            if not await self.replicas.write_ahead(session):
                return error_response(503, *STATE_DOWN)
            return ndjson(session.link.data_to_send())
        return Response(status_code=204)

    async def longpoll_poll(self, request: Request) -> Response:
        identity = await self._identify(request)
        if isinstance(identity, Response):
            return identity
        found = self._polled_session(request, identity)
        if isinstance(found, Response):
            return found
        session, att = found
        try:
            ack = int(request.query_params.get("ack", ""))
            if ack < 0:
                raise ValueError
            hold = float(request.query_params.get("hold", self.config.longpoll_hold))
            if not 0 <= hold < math.inf:
                raise ValueError
            hold = min(hold, self.config.longpoll_hold)
        except ValueError:
            return error_response(400, "bad_request", "'ack' must be a non-negative integer, 'hold' "
                                   "a number of seconds", "This is a bug in the client; update Stella.")
        att.poll_id += 1
        mine = att.poll_id
        att.ready.set()  # an older poll still waiting returns now
        try:
            session.link.resync(ack)
        except ProtocolError as exc:
            self._detach(session, att)
            return error_response(400, exc.code, exc.message, exc.action)
        session.link.acked_out_of_band()
        session.wake.set()
        deadline = self.clock() + hold
        while True:
            await asyncio.sleep(0)  # let an older poll see it lost, and the loop run its timers
            written = await self.replicas.write_ahead(session)
            if not written or att.closed or session.attachment is not att:
                return error_response(409, "not_attached", "this session is not carried by long-poll now",
                                       "Send a hello to open or resume the session.")
            if att.poll_id != mine:
                return ndjson([])
            frames = session.link.data_to_send()
            if frames:
                return ndjson(frames)
            att.ready.clear()
            remaining = deadline - self.clock()
            if remaining <= 0:
                return ndjson([])
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(att.ready.wait(), remaining)

    def _polled_session(self, request: Request, identity: Any) -> tuple[Session, PollAttachment] | Response:
        session = self.registry.get(request.query_params.get("sid", ""))
        if session is None or session.identity != identity or not isinstance(session.attachment, PollAttachment):
            return error_response(409, "not_attached", "no long-poll session with that id is open here",
                                  "Send a hello to open or resume the session.")
        session.identity = identity  # its newest token, for the recheck
        return session, session.attachment

    # --- health ---------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        results = await asyncio.gather(*(u.health() for u in self.upstreams))
        ok = any(h.ok for h in results)
        body: dict[str, Any] = {"status": "ok" if ok else "degraded"}
        if await self._may_inspect(request):
            body["version"] = _VERSION
            body["sessions"] = len(self.registry)
            body["upstreams"] = [{"url": u.base_url, "api": u.api, "ok": h.ok, "loading": h.loading,
                                  "idle_slots": h.idle_slots, "detail": h.detail}
                                 for u, h in zip(self.upstreams, results, strict=True)]
        return JSONResponse(body, 200 if ok else 503)

    async def _may_inspect(self, request: Request) -> bool:
        """The health details (upstream URLs, load) are for the operator and paired devices only."""
        if is_operator(request, self.operator_secret):
            return True
        if "authorization" not in request.headers:
            return False  # a plain liveness probe: not a failed sign-in
        try:
            return await self.authenticate(request) is not None
        except AuthError:
            return False


def create_app(
    config: LinkConfig,
    upstreams: list[Upstream],
    *,
    authenticate: Authenticator = allow_all,
    recheck: Rechecker | None = None,
    codec_factory: CodecFactory = plain_codec,
    sessions: SessionStore | None = None,
    replica: str = "",
    routes: Sequence[BaseRoute] = (),
    health_interval: float = 5.0,
    recheck_interval: float = 5.0,
    operator_secret: str = "",
) -> Starlette:
    """The gateway as an ASGI app; `app.state.gateway` is the `Gateway` behind it.

    `routes` are further endpoints (the pairing and refresh endpoints of `remote_api.auth`).
    """
    gateway = Gateway(config, upstreams, authenticate=authenticate, recheck=recheck, codec_factory=codec_factory,
                      sessions=sessions, replica=replica, health_interval=health_interval,
                      recheck_interval=recheck_interval, operator_secret=operator_secret)
    app = Starlette(
        routes=[
            WebSocketRoute("/link/ws", gateway.websocket),
            Route("/link/send", gateway.longpoll_send, methods=["POST"]),
            Route("/link/poll", gateway.longpoll_poll, methods=["GET"]),
            Route("/health", gateway.health, methods=["GET"]),
            *routes,
        ],
        lifespan=gateway.lifespan,
    )
    app.state.gateway = gateway
    return app
