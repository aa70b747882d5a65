"""The gateway's sessions: who is connected, what each still owes its client, what ran already.

A session outlives its connections: its `LinkProtocol` keeps every unacknowledged envelope
(the replay buffer) so a client that reconnects with (session id, last seq) gets exactly what
it missed. Nothing else of a conversation is kept: chat requests are handed to a generation and
forgotten, and the buffer empties as the client acknowledges. Request ids (`rid`) are
remembered, without content, so a resent request never starts a second generation.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from remote_api.envelope import Envelope
from remote_api.link_config import LinkConfig
from remote_api.protocol import BodyCodec, Clock, LinkProtocol, PlainCodec, Role


@dataclass(eq=False)
class Session:
    """One client session. `attachment` is the transport currently carrying it (or None)."""

    sid: str
    link: LinkProtocol
    identity: Any = None  # what authenticate() said about the client (later: the device)
    attachment: Any = None
    detached_since: float | None = None
    turns: dict[str, asyncio.Task[None]] = field(default_factory=dict)  # rid -> generation
    wake: asyncio.Event = field(default_factory=asyncio.Event)  # input arrived: run the loop
    runner: asyncio.Task[None] | None = None
    closed: bool = False


class SessionRegistry:
    """Sessions by id, plus a bounded memory of request ids already accepted."""

    def __init__(
        self,
        config: LinkConfig,
        *,
        clock: Clock = time.monotonic,
        codec_factory: Callable[[], BodyCodec] = PlainCodec,
        rid_memory: int = 16384,
    ) -> None:
        self.config = config
        self._clock = clock
        self._codec_factory = codec_factory
        self._sessions: dict[str, Session] = {}
        self._rids: OrderedDict[str, str] = OrderedDict()  # rid -> sid, oldest first
        self._rid_memory = rid_memory

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self):
        return iter(list(self._sessions.values()))

    def open(self, hello: Envelope, identity: Any = None) -> Session:
        """The session a hello asks to resume, or a new one (unknown or expired id included).

        Only the identity that opened a session may resume it; anyone else gets a new one.
        """
        existing = self._sessions.get(hello.sid) if hello.sid else None
        if existing is not None and not existing.closed and existing.identity == identity:
            return existing
        sid = secrets.token_urlsafe(18)
        link = LinkProtocol(Role.SERVER, self.config, clock=self._clock, sid=sid, codec=self._codec_factory())
        session = Session(sid, link, identity, detached_since=self._clock())
        self._sessions[sid] = session
        return session

    def get(self, sid: str) -> Session | None:
        return self._sessions.get(sid)

    def remove(self, session: Session) -> None:
        session.closed = True
        self._sessions.pop(session.sid, None)

    def expired(self) -> list[Session]:
        """Sessions nobody has carried for longer than `session_ttl`."""
        limit = self._clock() - self.config.session_ttl
        return [s for s in self._sessions.values()
                if s.detached_since is not None and s.detached_since <= limit]

    def claim(self, rid: str, sid: str) -> str | None:
        """Record that `rid` starts a generation; if it was seen before, return its session id."""
        seen = self._rids.get(rid)
        if seen is not None:
            return seen
        self._rids[rid] = sid
        if len(self._rids) > self._rid_memory:
            self._rids.popitem(last=False)
        return None
