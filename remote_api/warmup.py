"""The gateway's I/O shell over `remote_api.slots`: each session's upstream and slot, and its warm-ups.

A session keeps the upstream it first got while that upstream stays healthy (its prompt is
cached there), and the slot `SlotMap` pins it to. A warm-up (a link `warm` message: the
session's prefix, persona + history) is one request with no output tokens on that slot; a real
turn cancels it before taking the slot (`SlotMap.chat` names it), so it never holds a turn up —
except the session's own warm-up of the turn's very prefix (or of its user's first words), which
the turn waits for: that is work the turn must do anyway, and a cancel in the middle of a batch
would throw it away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from remote_api.slots import Lease, SlotMap
from remote_api.upstream import Upstream
from remote_api.upstream_pool import UpstreamPool
from remote_api.upstream_types import ChatRequest, Finished, UpstreamError

log = logging.getLogger(__name__)


def starts(messages: list[dict[str, str]], warming: list[dict[str, str]]) -> bool:
    """`warming` is the start of `messages`: its messages theirs, but for the last one, whose text may
    be only the start of theirs (a user's words warmed while they were still speaking)."""
    if not warming or len(warming) > len(messages):
        return not warming
    *head, last = warming
    mine = messages[len(head)]
    return (messages[:len(head)] == head and mine.get("role") == last.get("role")
            and mine.get("content", "").startswith(last.get("content", "")))


class SlotKeeper:
    def __init__(self, pool: UpstreamPool) -> None:
        self.pool = pool
        self._maps: dict[Upstream, SlotMap] = {}
        self._homes: dict[str, Upstream] = {}
        self._warming: dict[str, asyncio.Task[dict | None]] = {}
        self._prefixes: dict[str, list[dict[str, str]]] = {}  # what each session's newest warm-up evaluates

    @contextlib.asynccontextmanager
    async def chat(self, sid: str, messages: list[dict[str, str]]) -> AsyncIterator[tuple[Upstream, int | None]]:
        """The upstream and slot for a real turn of session `sid`, held while the turn runs."""
        upstream, slots = await self._home(sid)
        lease = slots.chat(sid)
        await self._preempt(lease, messages)
        try:
            yield upstream, lease.slot
        finally:
            slots.release(lease)

    async def _preempt(self, lease: Lease, messages: list[dict[str, str]]) -> None:
        """Cancel the warm-up on the turn's slot, unless it is evaluating the turn's own prefix: that
        work the turn needs anyway, and cancelling it mid-batch would throw it away."""
        task = self._warming.get(lease.preempt) if lease.preempt is not None else None
        if task is None:
            return
        warming = self._prefixes.get(lease.preempt, [])
        if lease.preempt != lease.session or not starts(messages, warming):
            task.cancel()  # closes its HTTP stream: llama-server drops it at its next step
        await asyncio.gather(task, return_exceptions=True)

    def warm(self, sid: str, messages: list[dict[str, str]]) -> None:
        """Warm `sid`'s slot with `messages` in the background. One warm-up per session at a time:
        one asked for while another runs waits for it (whose work it reuses), and only the newest
        of those waiting runs, so a client sending many cannot queue up work."""
        self._prefixes[sid] = messages
        if sid in self._warming:
            return
        task = self._warming[sid] = asyncio.create_task(self._warm_newest(sid), name=f"warm-{sid}")
        task.add_done_callback(lambda t: self._warming.pop(sid, None) if self._warming.get(sid) is t else None)

    async def _warm_newest(self, sid: str) -> dict | None:
        timings, done = None, None
        while (newest := self._prefixes.get(sid)) is not None and newest is not done:
            done = newest
            timings = await self._warm(sid, newest)
        return timings

    async def warmed(self, sid: str) -> dict | None:
        """Wait for `sid`'s warm-up, if any; llama-server's timings of it (None if it did not run)."""
        task = self._warming.get(sid)
        if task is None:
            return None
        results = await asyncio.gather(task, return_exceptions=True)
        return results[0] if isinstance(results[0], dict) else None

    async def _warm(self, sid: str, messages: list[dict[str, str]]) -> dict | None:
        try:
            upstream, slots = await self._home(sid)
        except UpstreamError as exc:
            log.info("session %s: no warm-up: %s", sid, exc.code)
            return None
        lease = slots.warm(sid)
        if lease is None:
            log.debug("session %s: no warm-up now (slot busy or slot count unknown)", sid)
            return None
        try:
            req = ChatRequest(messages=messages, slot=lease.slot, warm=True, temperature=0.0)
            async with contextlib.aclosing(upstream.stream(req)) as stream:
                async for item in stream:
                    if isinstance(item, Finished):
                        log.info("session %s: slot %s warmed (%s prompt tokens, %s from cache)", sid, lease.slot,
                                 item.timings.get("prompt_n"), item.timings.get("cache_n"))
                        return item.timings
        except UpstreamError as exc:
            log.info("session %s: warm-up failed: %s", sid, exc.code)
        except ValueError as exc:  # messages a chat request would refuse too
            log.info("session %s: warm-up not sent: %s", sid, exc)
        finally:
            slots.release(lease)
        return None

    async def _home(self, sid: str) -> tuple[Upstream, SlotMap]:
        home = self._homes.get(sid)
        if home is None or not self.pool.healthy(home):
            home = self._homes[sid] = await self.pool.pick()
        slots = self._maps.setdefault(home, SlotMap())
        slots.resize(self.pool.slot_count(home))
        return home, slots

    def forget(self, sid: str) -> None:
        """Session `sid` is over here: stop its warm-up, free its pin."""
        task = self._warming.pop(sid, None)
        if task is not None:
            task.cancel()
        self._prefixes.pop(sid, None)
        home = self._homes.pop(sid, None)
        if home is not None and home in self._maps:
            self._maps[home].forget(sid)
