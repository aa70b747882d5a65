"""The gateway's sessions: who is connected, what each still owes its client, what ran already.

A session outlives its connections: its `LinkProtocol` keeps every unacknowledged envelope
(the replay buffer) so a client that reconnects with (session id, last seq) gets exactly what
it missed. Nothing else of a conversation is kept: a chat request lives only while its reply
is generated (`TurnProgress`), and the buffer empties as the client acknowledges.

With shared state (Redis) a session also knows what it last wrote there (`delta`), so every
write carries only what changed: new envelopes, the positions, replies started, advanced or
finished.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from remote_api.envelope import Envelope
from remote_api.link_config import LinkConfig
from remote_api.protocol import BodyCodec, Clock, LinkProtocol, PlainCodec, Role
from remote_api.state import SessionDelta, SessionRecord, TurnRecord

CodecFactory = Callable[[Any], BodyCodec]  # identity -> the session's codec


def plain_codec(identity: Any) -> BodyCodec:
    return PlainCodec()


def device_of(identity: Any) -> str:
    """An identity as sessions are counted and replicas compare it: the device, not the token."""
    return str(getattr(identity, "device_id", identity))


class TurnProgress:
    """A reply being generated: its request and the tokens sent so far (count + text hash).

    A replica taking the reply over generates it again and skips `sent` tokens, checking that
    their text hashes to `prefix_digest` (as the previous owner recorded it); `resume` then
    carries on from the rebuilt running hash.
    """

    def __init__(self, request: dict[str, Any], record: TurnRecord | None = None) -> None:
        self.request = request
        self.sent = record.sent if record else 0
        self.prefix_digest = record.digest if record else ""
        self._hash: Any = hashlib.sha256()
        self.stored = record is not None  # the request is in the shared state
        self.dirty = False  # `sent` changed since the last write

    @property
    def digest(self) -> str:
        return self._hash.hexdigest()

    def add(self, text: str) -> None:
        self._hash.update(text.encode())
        self.sent += 1
        self.dirty = True

    def resume(self, prefix_hash: Any) -> None:
        self._hash = prefix_hash


@dataclass(eq=False)
class Session:
    """One client session. `attachment` is the transport currently carrying it (or None)."""

    sid: str
    link: LinkProtocol
    identity: Any = None  # what authenticate() said about the client (updated by every request)
    attachment: Any = None
    detached_since: float | None = None
    last_active: float = 0.0  # last attached or detached: the oldest idle session goes first
    turns: dict[str, asyncio.Task[None]] = field(default_factory=dict)  # rid -> generation
    progress: dict[str, TurnProgress] = field(default_factory=dict)  # rid -> how far it got
    finished: set[str] = field(default_factory=set)  # turns to forget in the shared state
    wake: asyncio.Event = field(default_factory=asyncio.Event)  # input arrived: run the loop
    runner: asyncio.Task[None] | None = None
    closed: bool = False
    saved: tuple[int, int, int] = (0, 0, 0)  # (sent, received, acked) seqs as last written
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def delta(self) -> SessionDelta | None:
        """What the shared state lacks (None: nothing)."""
        link = self.link
        positions = (link.sent_seq, link.recv_seq, link.acked_seq)
        delta = SessionDelta(*positions, envelopes=link.unacked_after(self.saved[0]),
                             finished=sorted(self.finished))
        for rid, turn in self.progress.items():
            if not turn.stored:
                delta.started[rid] = turn.request
            if turn.dirty or not turn.stored:
                delta.progress[rid] = (turn.sent, turn.digest)
        if positions == self.saved and not (delta.envelopes or delta.progress or delta.finished):
            return None
        return delta

    def written(self, delta: SessionDelta) -> None:
        """`delta` is in the shared state now (more may have happened meanwhile)."""
        self.saved = (delta.sent_seq, delta.recv_seq, delta.acked_seq)
        for rid, (sent, _) in delta.progress.items():
            turn = self.progress.get(rid)
            if turn is not None:
                turn.stored = True
                turn.dirty = turn.sent != sent
        self.finished.difference_update(delta.finished)


class SessionRegistry:
    """This process's sessions by id."""

    def __init__(self, config: LinkConfig, *, clock: Clock = time.monotonic,
                 codec_factory: CodecFactory = plain_codec) -> None:
        self.config = config
        self._clock = clock
        self._codec_factory = codec_factory
        self._sessions: dict[str, Session] = {}
        self._by_device: dict[str, dict[str, Session]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self):
        return iter(list(self._sessions.values()))

    def resumable(self, hello: Envelope, identity: Any = None) -> Session | None:
        """The session a hello asks to resume, if it is here (None: a new one is needed).

        Only the identity that opened a session may resume it; anyone else gets a new one.
        """
        existing = self._sessions.get(hello.sid) if hello.sid else None
        if existing is not None and not existing.closed and existing.identity == identity:
            return existing
        return None

    def create(self, identity: Any) -> Session:
        return self._add(secrets.token_urlsafe(18), identity)

    def adopt(self, record: SessionRecord, identity: Any) -> Session:
        """A session another replica held, rebuilt from the shared state."""
        session = self._add(record.sid, identity)
        session.link.restore(record.sent_seq, record.recv_seq, record.acked_seq, record.envelopes)
        session.saved = (record.sent_seq, record.recv_seq, record.acked_seq)
        session.progress = {rid: TurnProgress(turn.request, turn) for rid, turn in record.turns.items()}
        return session

    def _add(self, sid: str, identity: Any) -> Session:
        link = LinkProtocol(Role.SERVER, self.config, clock=self._clock, sid=sid,
                            codec=self._codec_factory(identity))
        session = Session(sid, link, identity, detached_since=self._clock(), last_active=self._clock())
        self._sessions[sid] = session
        self._by_device.setdefault(device_of(identity), {})[sid] = session
        return session

    def get(self, sid: str) -> Session | None:
        return self._sessions.get(sid)

    def remove(self, session: Session) -> None:
        session.closed = True
        if self._sessions.get(session.sid) is session:
            del self._sessions[session.sid]
            device = self._by_device[device_of(session.identity)]
            del device[session.sid]
            if not device:
                del self._by_device[device_of(session.identity)]

    def of_device(self, identity: Any) -> list[Session]:
        """The sessions of `identity`'s device."""
        return list(self._by_device.get(device_of(identity), {}).values())

    def expired(self) -> list[Session]:
        """Sessions nobody has carried for longer than `session_ttl`."""
        limit = self._clock() - self.config.session_ttl
        return [s for s in self._sessions.values()
                if s.detached_since is not None and s.detached_since <= limit]
