"""The generation relay: one reply from llama-server to the client, token by token.

`ReplyStream` is its sans-I/O core, fed each item the upstream streams; `Relay` is the thin
I/O around it (the pinned slot, the upstream stream, failures worded for the client). Rules:

- a token goes to the client as ``token`` (its index `i`), and counts in the reply's progress
  (`TurnProgress`: what a replica taking the session over must regenerate);
- the end goes as ``done`` with the reason, the token count and llama-server's timings;
- while the client is not receiving, a reply may not outgrow its replay buffer
  (`link.replay_limit` messages or `link.outbound_bytes`): past it, ``replay_overflow`` ends it;
- a reply taken over from another replica (`turn.sent` > 0 at the start) is generated again
  with the same seed: its first `turn.sent` tokens are the client's already, so they are not
  sent, and their text must hash to the digest the previous owner wrote ahead; if it does not
  (or the reply ends sooner), ``reply_diverged`` ends it;
- an upstream failure ends it with an ``error`` in the upstream's words, a cancel with ``done``
  (reason "cancelled").
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from remote_api.envelope import Type
from remote_api.link_config import LinkConfig
from remote_api.link_sessions import Session, TurnProgress
from remote_api.state import SessionStore
from remote_api.upstream import Upstream
from remote_api.upstream_pool import UpstreamPool
from remote_api.upstream_types import ACTIONS, ChatRequest, Finished, TokenDelta, UpstreamError
from remote_api.warmup import SlotKeeper

log = logging.getLogger(__name__)

REPLY_DIVERGED = {
    "code": "reply_diverged",
    "message": "The gateway writing this reply stopped, and the model did not write the same beginning again, "
               "so the rest could not be added to it.",
    "action": "Ask again. (A reply survives a gateway failure when it is generated with temperature 0 or a "
              "fixed seed.)",
}

# Failures that say the upstream itself is unwell (not the request): take it out of rotation.
UPSTREAM_FAULTS = frozenset({"unreachable", "broken_stream", "stalled", "bad_response", "unauthorized"})


@dataclass(frozen=True)
class Outgoing:
    """An envelope for the client; `final`: the reply ends with it."""

    kind: Type
    body: dict[str, Any]
    final: bool = False


class ReplyStream:
    """What each item of the upstream's stream means for the client (sans-I/O; rules above)."""

    def __init__(self, rid: str, turn: TurnProgress, config: LinkConfig) -> None:
        self.rid = rid
        self.turn = turn
        self.config = config
        self._skip = turn.sent  # tokens the client already has (a reply taken over)
        self._prefix = hashlib.sha256()

    def feed(self, item: TokenDelta | Finished, backlog: int, backlog_bytes: int) -> Outgoing | None:
        """The envelope `item` gives (None: nothing to send), `backlog*` being the link's unacknowledged output."""
        rid, turn = self.rid, self.turn
        if self._skip:
            if isinstance(item, Finished):
                return Outgoing(Type.ERROR, {"rid": rid, **REPLY_DIVERGED}, final=True)
            self._prefix.update(item.text.encode())
            self._skip -= 1
            if not self._skip:
                if self._prefix.hexdigest() != turn.prefix_digest:
                    return Outgoing(Type.ERROR, {"rid": rid, **REPLY_DIVERGED}, final=True)
                turn.resume(self._prefix)
            return None
        if isinstance(item, Finished):
            return Outgoing(Type.DONE, {"rid": rid, "reason": item.reason, "tokens": turn.sent,
                                        "timings": item.timings}, final=True)
        cfg = self.config
        if backlog >= cfg.replay_limit or backlog_bytes >= cfg.outbound_bytes:
            return Outgoing(Type.ERROR, {
                "rid": rid, "code": "replay_overflow",
                "message": f"The reply outgrew the gateway's replay buffer ({cfg.replay_limit} messages, "
                           f"link.replay_limit, or {cfg.outbound_bytes} bytes, link.outbound_bytes) while the app "
                           "was not receiving; the rest was dropped.",
                "action": "Check the network connection, then ask again.",
            }, final=True)
        sent = Outgoing(Type.TOKEN, {"rid": rid, "i": turn.sent, "text": item.text})
        turn.add(item.text)
        return sent


Send = Callable[[Session, Type, dict[str, Any]], None]


class Relay:
    """Generates replies on the session's upstream and slot, each envelope handed to `send`."""

    def __init__(self, config: LinkConfig, slots: SlotKeeper, pool: UpstreamPool, sessions: SessionStore,
                 send: Send) -> None:
        self.config = config
        self.slots = slots
        self.pool = pool
        self.sessions = sessions
        self.send = send

    async def generate(self, session: Session, rid: str, turn: TurnProgress) -> None:
        """Relay one reply; errors and cancels end it with a clear envelope."""
        body = turn.request
        upstream: Upstream | None = None
        try:
            req = ChatRequest(
                messages=body["messages"], max_tokens=body.get("max_tokens", 128),
                temperature=body.get("temperature", 0.7), seed=body.get("seed"), stop=body.get("stop", []),
                repeat_penalty=body.get("repeat_penalty"), dry_multiplier=body.get("dry_multiplier"),
            )
            reply = ReplyStream(rid, turn, self.config)
            async with self.slots.chat(session.sid, req.messages) as (upstream, slot), \
                    contextlib.aclosing(upstream.stream(replace(req, slot=slot))) as stream:
                async for item in stream:
                    out = reply.feed(item, session.link.backlog, session.link.backlog_bytes)
                    if out is not None:
                        self.send(session, out.kind, out.body)
                        if out.final:
                            return
        except UpstreamError as exc:
            log.warning("session %s: reply %s failed: %s", session.sid, rid, exc)
            if upstream is not None and exc.code in UPSTREAM_FAULTS:
                self.pool.report_failure(upstream)
            self.send(session, Type.ERROR, {"rid": rid, "code": exc.code, "message": exc.message,
                                            "action": ACTIONS.get(exc.code, "Ask again.")})
        except ValueError as exc:
            self.send(session, Type.ERROR, {"rid": rid, "code": "bad_request", "message": str(exc),
                                            "action": "Fix the request and send it again."})
        except asyncio.CancelledError:
            self.send(session, Type.DONE, {"rid": rid, "reason": "cancelled", "tokens": turn.sent})
            raise
        finally:
            session.turns.pop(rid, None)
            if session.progress.pop(rid, None) is not None and self.sessions.shared:
                session.finished.add(rid)
