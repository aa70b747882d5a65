"""Several gateway replicas serving the same sessions through shared state (Redis).

- Write-ahead: what changed in a session is written to the store before any frame of it
  leaves, so the replica a client resumes on knows everything the client may have seen.
- Take-over: a hello resuming a session this replica does not own takes it from the store
  (fencing the previous owner out: its next write-ahead fails) and restarts the replies in
  flight, which the relay regenerates with the same seed (`remote_api.relay`).
- Letting go: a replica that finds its session owned elsewhere drops it without a word to the
  client (the client is already talking to the new owner).

`resume_plan` is the take-over's decision, apart from the store's answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Literal

from remote_api.attachments import CLOSE_SUPERSEDED
from remote_api.link_sessions import Session, SessionRegistry, TurnProgress, device_of
from remote_api.state import SessionRecord, SessionStore, StateError
from remote_api.warmup import SlotKeeper

log = logging.getLogger(__name__)

Plan = Literal["keep_local", "adopt", "new"]


def resume_plan(local: Session | None, record: SessionRecord | None, replica: str) -> Plan:
    """After the store answered a take-over of a session `local` to this replica (None: not here).

    keep_local: it was ours all along, so memory is as new as the store (or newer); adopt: build it
    from the store's record (a local copy is stale and let go); new: the store has no such session.
    """
    if record is not None and record.previous_owner == replica and local is not None:
        return "keep_local"
    return "adopt" if record is not None else "new"


class Replicas:
    """This replica's side of the shared sessions; `start_turn` restarts a reply in flight."""

    def __init__(self, store: SessionStore, replica: str, registry: SessionRegistry, slots: SlotKeeper,
                 start_turn: Callable[[Session, str, TurnProgress], None]) -> None:
        self.store = store
        self.replica = replica
        self.registry = registry
        self.slots = slots
        self.start_turn = start_turn

    async def take_over(self, sid: str, identity: Any) -> Session | None:
        """The session `sid` of this device, taken over from the store; None if there is none to resume."""
        local = self.registry.get(sid)
        if local is not None and local.identity != identity:
            return None  # another device's session: leave it alone
        record = await self.store.take_session(sid, self.replica, device_of(identity))
        plan = resume_plan(local, record, self.replica)
        if plan == "keep_local":
            return local
        if local is not None:
            self.let_go(local, "the session was carried on elsewhere; using the shared state")
        if record is None:
            return None
        session = self.registry.adopt(record, identity)
        log.info("session %s taken over from replica %s (%d replies in flight)", sid, record.previous_owner,
                 len(session.progress))
        for rid, turn in session.progress.items():
            self.start_turn(session, rid, turn)
        return session

    async def write_ahead(self, session: Session) -> bool:
        """Write what changed before any frame leaves. False: the session is gone (or the write failed).

        Call `link.data_to_send()` right after, with no await in between, so nothing unwritten
        slips out.
        """
        if not self.store.shared:
            return True
        async with session.write_lock:
            while not session.closed and (delta := session.delta()) is not None:
                try:
                    owned = await self.store.save_session(session.sid, self.replica, delta)
                except StateError as exc:  # keep the frames; the retransmit timer tries again
                    log.warning("session %s: %s", session.sid, exc)
                    return False
                if not owned:
                    self.let_go(session, "another gateway took the session over")
                    return False
                session.written(delta)
        return not session.closed

    def let_go(self, session: Session, reason: str) -> None:
        """Another replica owns the session now: drop it here without a word to the client."""
        log.info("session %s: %s", session.sid, reason)
        self.slots.forget(session.sid)
        self.registry.remove(session)
        if session.attachment is not None:
            session.attachment.close(CLOSE_SUPERSEDED, reason)
            session.attachment = None
        me = asyncio.current_task()
        for task in [*session.turns.values(), session.runner]:
            if task is not None and task is not me:
                task.cancel()
        session.wake.set()
