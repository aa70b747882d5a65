"""Which llama-server slot holds each link session's prompt, and when a warm-up may use it.

llama-server (`-np N`) keeps one KV cache per slot and reuses it for the next request whose
prompt starts the same (`cache_prompt`). Left to itself it picks a slot by prompt similarity or
least recent use, so a session's turn can land on a slot that holds another session's prompt
and be evaluated cold. The gateway therefore pins each session to a slot (`id_slot`) on its
upstream, and warms that slot with the session's prefix (persona + history) when the session
starts and after each reply, so the next turn only evaluates the user's new words.

Sans-I/O rules (`SlotMap`, one per upstream; the gateway does the I/O):

- A session is pinned, at its first request, to the slot with the fewest sessions pinned
  (lowest id on ties); more sessions than slots share slots. The pin lasts until `forget`.
- A real turn (`chat`) always goes ahead. On its pinned slot when that slot is idle or only
  warming (the warm-up, whoever's, is named in `Lease.preempt` for the gateway to end first:
  cancelled, or, when it is the session's own warm-up of the turn's very prefix, waited for,
  since that is the turn's own work); unpinned (`slot=None`: the server chooses) when another
  real turn is on it, or when the slot count is unknown.
- A warm-up (`warm`) only runs on an idle pinned slot: never when a real turn is on it, never
  when the slot count is unknown (a warm-up on a slot the next turn may not use is wasted work).
  A session has one warm-up at a time (the gateway runs the newest it was sent once the one in
  hand ends); `preempt` names one still holding the slot.
- Every lease is given back with `release`; a lease that no longer owns its slot (preempted,
  or the map resized) releases nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["chat", "warm"]


@dataclass(frozen=True)
class Lease:
    """What a request may do: `slot` is the id_slot to send (None: let the server choose),
    `preempt` the session whose warm-up must be cancelled first (None: nothing to cancel)."""

    session: str
    kind: Kind
    slot: int | None
    preempt: str | None = None


class SlotMap:
    """The slots of one llama-server: pins and what each slot is busy with."""

    def __init__(self, slots: int | None = None) -> None:
        self.slots: int | None = None
        self._pins: dict[str, int] = {}
        self._busy: dict[int, Lease] = {}
        self.resize(slots)

    def resize(self, slots: int | None) -> None:
        """The server's slot count (from /slots; None when it does not say). Pins beyond it are dropped."""
        if slots is not None and slots < 1:
            slots = None
        if slots == self.slots:
            return
        self.slots = slots
        limit = slots or 0
        self._pins = {s: n for s, n in self._pins.items() if n < limit}
        self._busy = {n: lease for n, lease in self._busy.items() if n < limit}

    def pinned(self, session: str) -> int | None:
        """The session's slot, pinning it now if it has none (None when the slot count is unknown)."""
        if self.slots is None:
            return None
        if session not in self._pins:
            load = [0] * self.slots
            for n in self._pins.values():
                load[n] += 1
            self._pins[session] = min(range(self.slots), key=lambda n: (load[n], n))
        return self._pins[session]

    def chat(self, session: str) -> Lease:
        """A real turn: never refused, never kept waiting behind a warm-up."""
        slot = self.pinned(session)
        if slot is None:
            return Lease(session, "chat", None)
        holder = self._busy.get(slot)
        if holder is not None and holder.kind == "chat":
            return Lease(session, "chat", None)  # another turn is on it: any free slot beats waiting
        lease = Lease(session, "chat", slot, holder.session if holder is not None else None)
        self._busy[slot] = lease
        return lease

    def warm(self, session: str) -> Lease | None:
        """A warm-up of the session's slot, or None when it must not run now."""
        slot = self.pinned(session)
        if slot is None:
            return None
        holder = self._busy.get(slot)
        if holder is not None and (holder.kind == "chat" or holder.session != session):
            return None
        lease = Lease(session, "warm", slot, holder.session if holder is not None else None)
        self._busy[slot] = lease
        return lease

    def release(self, lease: Lease) -> None:
        """The request is over (finished, failed or cancelled)."""
        if lease.slot is not None and self._busy.get(lease.slot) is lease:
            del self._busy[lease.slot]

    def forget(self, session: str) -> None:
        """The session is gone: its slot may be pinned to the next one."""
        self._pins.pop(session, None)
