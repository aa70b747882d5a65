"""The link's reliability rules as a sans-I/O state machine (like h11, wsproto, websockets).

A `LinkProtocol` is one end of one *session*; it outlives connections. Transports feed it
frames (`receive`), tell it when a connection opens or dies (`connection_made`,
`connection_lost`), call `tick` at `next_deadline()`, and write out `data_to_send()`. The
application calls `send` and reads `events()`. Nothing here touches a socket, a task or the
real clock, so every rule is testable with a fake clock:

- every data envelope gets the next per-direction `seq` and is kept until the peer's
  cumulative `ack` covers it; it is resent after `retransmit_timeout` and on every new
  connection (from the resume point the peer names), so nothing is lost;
- received data is delivered in seq order exactly once: duplicates are dropped, early
  arrivals wait in a bounded reorder buffer until the gap is filled;
- each connection starts with hello (client: session id + last seq received) and welcome
  (server: session id + last seq received), so either side resumes where the other stopped;
- the client pings every `heartbeat_interval`; an unanswered ping for `heartbeat_timeout`
  (server: no frame for interval + timeout) declares the connection dead (`LinkDead`);
- a `BodyCodec` may seal data bodies (`remote_api.seal`): its key shares ride in hello and
  welcome, and a body is sealed when first transmitted under the current keys, so it is sealed
  again only after a reconnect agreed new ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from remote_api.envelope import (
    CLIENT_TYPES,
    DATA_TYPES,
    MAX_ID_LEN,
    SERVER_TYPES,
    Envelope,
    LimitError,
    ProtocolError,
    Type,
    decode,
    encode,
    encode_body,
    header_ad,
    validate_body,
)
from remote_api.link_config import LinkConfig

Clock = Callable[[], float]


class Role(StrEnum):
    CLIENT = "client"
    SERVER = "server"


class State(StrEnum):
    IDLE = "idle"  # no connection
    HANDSHAKE = "handshake"  # connected, hello/welcome not yet exchanged
    OPEN = "open"


class BodyCodec(Protocol):
    """Seam for sealing data bodies end to end (`remote_api.seal.SealCodec`).

    Keys are agreed per connection: the client's `hello()` fields go into its hello, the
    server answers them with `welcome()` fields, which the client takes in `welcomed()`. A body
    is sealed once per key `epoch`, when first transmitted, so a retransmit on the same
    connection resends the same ciphertext and no nonce is ever reused. `ad` is the
    envelope's unchanging header (`header_ad`). Control bodies are never sealed.
    """

    @property
    def epoch(self) -> str: ...

    def hello(self) -> dict[str, Any]: ...

    def welcome(self, sid: str, hello: dict[str, Any]) -> dict[str, Any]: ...

    def welcomed(self, sid: str, welcome: dict[str, Any]) -> None: ...

    def seal(self, ad: bytes, body: dict[str, Any]) -> dict[str, Any]: ...

    def open(self, ad: bytes, body: dict[str, Any]) -> dict[str, Any]: ...

    def expansion(self, size: int) -> int: ...


class PlainCodec:
    """Bodies travel as they are (a gateway without sealing, and the link's own tests)."""

    epoch = ""

    def hello(self) -> dict[str, Any]:
        return {}

    def welcome(self, sid: str, hello: dict[str, Any]) -> dict[str, Any]:
        return {}

    def welcomed(self, sid: str, welcome: dict[str, Any]) -> None:
        pass

    def seal(self, ad: bytes, body: dict[str, Any]) -> dict[str, Any]:
        return body

    def open(self, ad: bytes, body: dict[str, Any]) -> dict[str, Any]:
        return body

    def expansion(self, size: int) -> int:
        return 0


# --- events ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Connected:
    """hello/welcome done: data flows; `resumed` says the peer picked up an existing session."""

    sid: str
    resumed: bool


@dataclass(frozen=True, slots=True)
class Message:
    """One data envelope from the peer, delivered exactly once and in order."""

    type: Type
    body: dict[str, Any]
    seq: int
    ts: int


@dataclass(frozen=True, slots=True)
class SessionLost:
    """Client only: the server no longer knows our session (it restarted or expired it).

    Everything unacknowledged in both directions is gone; replies in progress will not finish.
    """

    old_sid: str
    new_sid: str


@dataclass(frozen=True, slots=True)
class LinkDead:
    """The connection is silent or broken; the transport should close it (client: reconnect)."""

    reason: str


@dataclass(frozen=True, slots=True)
class PeerError:
    """The peer reported a link-level error (it will usually close the connection next)."""

    code: str
    message: str
    action: str


@dataclass(frozen=True, slots=True)
class Goodbye:
    """Server only: the client ended the session."""


Event = Connected | Message | SessionLost | LinkDead | PeerError | Goodbye


@dataclass(frozen=True, slots=True)
class Outbound:
    """A data envelope sent and not yet acknowledged, as a gateway shares it with its replicas."""

    seq: int
    type: Type
    body: dict[str, Any]  # plain
    ts: int


@dataclass(slots=True)
class _Outgoing:
    seq: int
    type: Type
    body: dict[str, Any]  # plain
    ts: int
    size: int = 0  # the most its frame can take on the wire
    wire: dict[str, Any] | None = None  # the body as sealed under the keys of `epoch`
    epoch: str = ""
    sent_at: float | None = None  # last handed to a transport
    queued: bool = False  # waiting in the output queue


_Control = tuple[Type, dict[str, Any]]

# The most a data envelope's header can add to its body (longest type, id and numbers).
_HEADER_BOUND = len(encode(Envelope(max(DATA_TYPES, key=len), 2**53, 2**53, "x" * MAX_ID_LEN, 2**53))) - 2


class LinkProtocol:
    """One end of a session. See the module docstring for the rules."""

    def __init__(
        self,
        role: Role,
        config: LinkConfig | None = None,
        *,
        clock: Clock = time.monotonic,
        wall: Clock = time.time,
        sid: str = "",
        codec: BodyCodec | None = None,
        agent: str = "",
    ) -> None:
        if role is Role.SERVER and not sid:
            raise ValueError("a server-side LinkProtocol needs the session id the registry assigned")
        self.role = role
        self.config = config or LinkConfig()
        self._clock = clock
        self._wall = wall
        self._sid = sid
        self._codec: BodyCodec = codec or PlainCodec()
        self._agent = agent
        self._mine = SERVER_TYPES if role is Role.SERVER else CLIENT_TYPES
        self._theirs = CLIENT_TYPES if role is Role.SERVER else SERVER_TYPES
        self._state = State.IDLE
        self._ever_open = False
        self._out_seq = 0
        self._peer_acked = 0
        self._unacked: dict[int, _Outgoing] = {}  # insertion order == seq order
        self._unacked_bytes = 0
        self._recv_seq = 0
        self._reorder: dict[int, tuple[Message, int]] = {}  # seq -> (message, its frame's size)
        self._reorder_bytes = 0
        self._outq: list[int | _Control] = []
        self._events: list[Event] = []
        self._ack_due: float | None = None
        self._opened_at = 0.0
        self._last_rx = 0.0
        self._interval = self.config.heartbeat_interval
        self._timeout = self.config.heartbeat_timeout
        self._ping_n = 0
        self._pings: dict[int, float] = {}
        self._next_ping = 0.0
        self.rtt: float | None = None  # the last ping's round trip (client), for status displays
        self.peer_agent = ""  # what the client's hello called itself (server), for logs

    # --- introspection ----------------------------------------------------------------------

    @property
    def sid(self) -> str:
        return self._sid

    @property
    def state(self) -> State:
        return self._state

    @property
    def established(self) -> bool:
        return self._state is State.OPEN

    @property
    def ever_opened(self) -> bool:
        """Whether any connection ever completed its handshake (the session exists)."""
        return self._ever_open

    @property
    def recv_seq(self) -> int:
        """Highest seq received in order: our cumulative ack, and the client's resume point."""
        return self._recv_seq

    @property
    def pending_output(self) -> bool:
        """True when `data_to_send()` would return frames (long-poll waits for this)."""
        return bool(self._outq)

    @property
    def backlog(self) -> int:
        """Data envelopes sent but not yet acknowledged (the replay buffer's length)."""
        return len(self._unacked)

    @property
    def backlog_bytes(self) -> int:
        """The replay buffer's size: what its envelopes take on the wire, at most."""
        return self._unacked_bytes

    @property
    def sent_seq(self) -> int:
        """The seq of the last data envelope queued by `send`."""
        return self._out_seq

    @property
    def acked_seq(self) -> int:
        """The peer's cumulative ack: everything up to it has left the replay buffer."""
        return self._peer_acked

    def unacked_after(self, seq: int) -> list[Outbound]:
        """The replay buffer's envelopes with a seq above `seq`, oldest first."""
        newer = []
        for out in reversed(self._unacked.values()):
            if out.seq <= seq:
                break
            newer.append(Outbound(out.seq, out.type, out.body, out.ts))
        return newer[::-1]

    def use_codec(self, codec: BodyCodec) -> None:
        """Client, before its first connection: seal with `codec` after all (nothing was sealed
        yet: bodies are sealed when first transmitted). For credentials found late."""
        if self._ever_open or self._state is not State.IDLE:
            raise ValueError("the codec can only change before the first connection")
        self._codec = codec

    def restore(self, sent_seq: int, recv_seq: int, acked_seq: int, unacked: list[Outbound]) -> None:
        """Server: carry on a session another gateway replica held, from its shared state.

        The next hello resumes it like any other: the replay buffer is resent from the point the
        client names, under keys agreed on the new connection.
        """
        if self.role is not Role.SERVER or self._ever_open:
            raise ValueError("only a fresh server-side LinkProtocol can take over a session")
        self._out_seq, self._recv_seq, self._peer_acked = sent_seq, recv_seq, acked_seq
        self._unacked = {o.seq: _Outgoing(o.seq, o.type, o.body, o.ts, self._frame_size(o.body))
                         for o in unacked if o.seq > acked_seq}
        self._unacked_bytes = sum(o.size for o in self._unacked.values())
        self._ever_open = True

    # --- connection lifecycle ---------------------------------------------------------------

    def connection_made(self) -> None:
        """A new connection (or long-poll exchange) starts; the client queues its hello."""
        self._reset_connection()
        self._state = State.HANDSHAKE
        self._opened_at = self._last_rx = self._clock()
        if self.role is Role.CLIENT:
            hello = {"agent": self._agent} if self._agent else {}
            self._outq.append((Type.HELLO, hello | self._codec.hello()))

    def connection_lost(self) -> None:
        """The connection is gone; unacknowledged data waits for the next one."""
        if self._state is not State.IDLE:
            self._state = State.IDLE
            self._reset_connection()

    def goodbye(self) -> None:
        """Client: end the session; the server frees it when the bye arrives."""
        if self.role is Role.CLIENT and self._state is State.OPEN:
            self._outq.append((Type.BYE, {}))

    # --- application side -------------------------------------------------------------------

    def send(self, kind: Type, body: dict[str, Any]) -> int:
        """Queue a data envelope for exactly-once delivery; returns its seq.

        A body the peer would refuse (bad shape, or too large to ever be accepted, which would
        otherwise be resent forever) is a ValueError here, before anything is queued.
        """
        if kind not in DATA_TYPES or kind not in self._mine:
            raise ValueError(f"a {self.role} cannot send '{kind}' as data")
        try:
            validate_body(kind, body)
        except ProtocolError as exc:
            raise ValueError(exc.message) from None
        out = _Outgoing(self._out_seq + 1, kind, dict(body), self._now_ms())
        out.size = self._frame_size(out.body)
        if out.size > self.config.max_frame_bytes:
            raise ValueError(f"a '{kind}' of {out.size} bytes exceeds the link's limit of "
                             f"{self.config.max_frame_bytes} bytes; shorten it (trim the history)")
        self._out_seq = out.seq
        self._unacked[out.seq] = out
        self._unacked_bytes += out.size
        if self._state is State.OPEN:
            out.queued = True
            self._outq.append(out.seq)
        return out.seq

    def events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    # --- network side -----------------------------------------------------------------------

    def receive(self, data: bytes | str) -> None:
        """Feed one frame. Bad input queues an error envelope, then raises `ProtocolError`:
        the transport should send `data_to_send()` and close the connection."""
        if self._state is State.IDLE:
            return  # a late frame from a connection already given up
        try:
            env = decode(data, self.config.max_frame_bytes)
            if env.type not in self._theirs:
                raise ProtocolError("unexpected_type", f"a {self.role} does not accept '{env.type}'")
            if env.seq == 0:
                validate_body(env.type, env.body)
            self._last_rx = self._clock()
            if self._state is State.HANDSHAKE:
                self._handshake(env)
            else:
                self._open_receive(env, len(data))
        except ProtocolError as exc:
            self._outq.append((Type.ERROR, exc.body()))
            raise

    def data_to_send(self) -> list[bytes]:
        """Frames to write now, in order; each carries the latest cumulative ack."""
        if not self._outq:
            return []
        now = self._clock()
        frames: list[bytes] = []
        for item in self._outq:
            if isinstance(item, int):
                out = self._unacked.get(item)
                if out is None:
                    continue  # acknowledged while waiting
                out.queued = False
                out.sent_at = now
                if out.wire is None or out.epoch != self._codec.epoch:
                    out.wire = self._codec.seal(header_ad(out.type, out.seq, self._sid, out.ts), out.body)
                    out.epoch = self._codec.epoch
                env = Envelope(out.type, out.seq, self._recv_seq, self._sid, out.ts, out.wire)
            else:
                env = Envelope(item[0], 0, self._recv_seq, self._sid, self._now_ms(), item[1])
            frames.append(encode(env))
        self._outq.clear()
        if frames:
            self._ack_due = None
        return frames

    def resync(self, peer_ack: int) -> None:
        """The peer says it holds everything up to `peer_ack`: resend whatever follows.

        A long-poll request carries this, so a poll response lost on the way is replayed by
        the next poll at once instead of after a retransmit timeout.
        """
        if self._state is State.OPEN:
            self._last_rx = self._clock()
            self._on_ack(peer_ack)
            self._queue_unacked()

    def acked_out_of_band(self) -> None:
        """The transport delivered our ack by other means (a long-poll request's `ack`)."""
        self._ack_due = None

    def tick(self, now: float | None = None) -> None:
        """Run the timers: handshake timeout, retransmit, delayed ack, heartbeat, dead link."""
        now = self._clock() if now is None else now
        if self._state is State.HANDSHAKE:
            if now - self._opened_at >= self.config.handshake_timeout:
                self._die(f"the handshake did not finish within {self.config.handshake_timeout:g} s")
            return
        if self._state is not State.OPEN:
            return
        rto = self.config.retransmit_timeout
        for out in self._unacked.values():
            if not out.queued and out.sent_at is not None and now - out.sent_at >= rto:
                out.queued = True
                self._outq.append(out.seq)
        if self._ack_due is not None and now >= self._ack_due:
            self._outq.append((Type.ACK, {}))
            self._ack_due = None
        if self.role is Role.CLIENT:
            if self._pings and now - min(self._pings.values()) >= self._timeout:
                self._die(f"no answer to a ping within {self._timeout:g} s")
            elif now >= self._next_ping:
                self._ping_n += 1
                self._pings[self._ping_n] = now
                self._outq.append((Type.PING, {"n": self._ping_n}))
                self._next_ping = now + self._interval
        elif now - self._last_rx >= self._interval + self._timeout:
            self._die(f"nothing heard from the client for {self._interval + self._timeout:g} s")

    def next_deadline(self) -> float | None:
        """When `tick` must run next (None: nothing is pending)."""
        if self._state is State.HANDSHAKE:
            return self._opened_at + self.config.handshake_timeout
        if self._state is not State.OPEN:
            return None
        times = [out.sent_at + self.config.retransmit_timeout for out in self._unacked.values()
                 if not out.queued and out.sent_at is not None]
        if self._ack_due is not None:
            times.append(self._ack_due)
        if self.role is Role.CLIENT:
            times.append(self._next_ping)
            if self._pings:
                times.append(min(self._pings.values()) + self._timeout)
        else:
            times.append(self._last_rx + self._interval + self._timeout)
        return min(times)

    # --- internals --------------------------------------------------------------------------

    def _now_ms(self) -> int:
        return int(self._wall() * 1000)

    def _frame_size(self, body: dict[str, Any]) -> int:
        plain = len(encode_body(body))
        return _HEADER_BOUND + plain + self._codec.expansion(plain)

    def _reset_connection(self) -> None:
        self._outq.clear()
        for out in self._unacked.values():
            out.queued = False
        self._pings.clear()
        self._ack_due = None

    def _die(self, reason: str) -> None:
        self._state = State.IDLE
        self._reset_connection()
        self._events.append(LinkDead(reason))

    def _queue_unacked(self) -> None:
        for out in self._unacked.values():
            if not out.queued:
                out.queued = True
                self._outq.append(out.seq)

    def _handshake(self, env: Envelope) -> None:
        if self.role is Role.SERVER:
            if env.type is not Type.HELLO:
                raise ProtocolError("hello_required", "the first envelope on a connection must be 'hello'")
            resumed = self._ever_open and env.sid == self._sid
            if resumed:
                self._on_ack(env.ack)
            self.peer_agent = env.body.get("agent", "")
            welcome = {"resumed": resumed, "heartbeat_interval": self._interval,
                       "heartbeat_timeout": self._timeout}
            self._outq.append((Type.WELCOME, welcome | self._codec.welcome(self._sid, env.body)))
        elif env.type is Type.WELCOME:
            if not env.sid:
                raise ProtocolError("bad_envelope", "a 'welcome' must name the session")
            self._codec.welcomed(env.sid, env.body)
            resumed = bool(self._sid) and env.sid == self._sid and env.body["resumed"]
            if resumed or not self._sid:
                self._sid = env.sid
                self._on_ack(env.ack)
            else:  # the server forgot us: start over under the new session id
                self._events.append(SessionLost(self._sid, env.sid))
                self._sid = env.sid
                self._out_seq = self._peer_acked = self._recv_seq = self._unacked_bytes = self._reorder_bytes = 0
                self._unacked.clear()
                self._reorder.clear()
            self._interval = min(self.config.heartbeat_interval, env.body["heartbeat_interval"])
            self._timeout = min(self.config.heartbeat_timeout, env.body["heartbeat_timeout"])
            self._next_ping = self._clock() + self._interval
        elif env.type is Type.ERROR:
            self._events.append(PeerError(env.body["code"], env.body["message"], env.body["action"]))
            return
        else:
            raise ProtocolError("welcome_required", "the server must answer hello with 'welcome' first")
        self._state = State.OPEN
        self._ever_open = True
        self._queue_unacked()
        self._events.append(Connected(self._sid, resumed))

    def _open_receive(self, env: Envelope, size: int) -> None:
        if env.sid != self._sid:
            raise ProtocolError("wrong_session", f"envelope for session {env.sid!r} on session {self._sid!r}")
        if env.type in (Type.HELLO, Type.WELCOME):
            raise ProtocolError("unexpected_type", f"'{env.type}' may only open a connection")
        self._on_ack(env.ack)
        if env.seq:
            self._on_data(env, size)
        elif env.type is Type.PING:
            self._outq.append((Type.PONG, {"n": env.body["n"]}))
        elif env.type is Type.PONG:
            sent = self._pings.get(env.body["n"])
            if sent is not None:
                self.rtt = self._clock() - sent
            self._pings = {n: t for n, t in self._pings.items() if n > env.body["n"]}
        elif env.type is Type.ERROR:
            self._events.append(PeerError(env.body["code"], env.body["message"], env.body["action"]))
        elif env.type is Type.BYE:
            self._events.append(Goodbye())

    def _on_ack(self, ack: int) -> None:
        if ack > self._out_seq:
            raise ProtocolError("bad_seq", f"ack {ack} is beyond the {self._out_seq} envelopes sent")
        if ack <= self._peer_acked:
            return
        for seq in range(self._peer_acked + 1, ack + 1):
            out = self._unacked.pop(seq, None)
            if out is not None:
                self._unacked_bytes -= out.size
        self._peer_acked = ack

    def _on_data(self, env: Envelope, size: int) -> None:
        now = self._clock()
        if env.seq <= self._recv_seq or env.seq in self._reorder:
            self._ack_due = now  # a duplicate: the peer may have missed our ack, send it at once
            return
        if env.seq > self._recv_seq + self.config.reorder_window:
            raise ProtocolError(
                "bad_seq", f"seq {env.seq} is over {self.config.reorder_window} ahead of {self._recv_seq}"
            )
        early = env.seq > self._recv_seq + 1
        if early and self._reorder_bytes + size > self.config.reorder_bytes:
            raise LimitError(
                "reorder_overflow", f"more than {self.config.reorder_bytes} bytes of envelopes arrived ahead of "
                f"envelope {self._recv_seq + 1}, which is still missing", "Send the missing envelope first.",
                "reorder_bytes", status=413)
        body = self._codec.open(header_ad(env.type, env.seq, env.sid, env.ts, env.v), env.body)
        validate_body(env.type, body)
        self._reorder[env.seq] = (Message(env.type, body, env.seq, env.ts), size if early else 0)
        self._reorder_bytes += size if early else 0
        while self._recv_seq + 1 in self._reorder:
            self._recv_seq += 1
            message, held = self._reorder.pop(self._recv_seq)
            self._reorder_bytes -= held
            self._events.append(message)
        if self._ack_due is None:
            self._ack_due = now + self.config.ack_delay
