"""Several llama-servers behind one gateway: which one takes the next reply, from health sweeps."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from dataclasses import dataclass, replace

from remote_api.upstream import Upstream
from remote_api.upstream_types import Health, UpstreamError, describe_exception

log = logging.getLogger(__name__)


@dataclass
class _Status:
    health: Health | None = None
    failed_at: float = -math.inf  # time.monotonic() of the last report_failure


class UpstreamPool:
    """Several llama-servers; `pick` answers at once from a health sweep kept fresh in the background.

    A sweep (`/health` + `/slots` on every upstream, concurrently) runs every `check_interval`
    seconds once the first `pick` starts it. `report_failure` takes an upstream out of rotation
    until a later sweep finds it healthy again.
    """

    def __init__(self, upstreams: list[Upstream], *, check_interval: float = 5.0) -> None:
        if not upstreams:
            raise ValueError("an upstream pool needs at least one llama-server URL")
        self.check_interval = check_interval
        self._status = {u: _Status() for u in upstreams}
        self._order = {u: i for i, u in enumerate(upstreams)}
        self._monitor: asyncio.Task[None] | None = None
        self._swept = asyncio.Event()

    async def pick(self) -> Upstream:
        """A healthy upstream, preferring one with idle slots, then the least recently failed."""
        if self._monitor is None:
            self._monitor = asyncio.create_task(self._watch(), name="upstream-health")
        await self._swept.wait()
        healthy = [u for u, s in self._status.items() if s.health and s.health.ok]
        if not healthy:  # one may have come up since the last sweep: look again before refusing
            await self._sweep()
            healthy = [u for u, s in self._status.items() if s.health and s.health.ok]
        if not healthy:
            states = "; ".join(f"{u.base_url}: {s.health.detail if s.health else 'not checked'}"
                               for u, s in self._status.items())
            raise UpstreamError(
                "no_healthy_upstream",
                f"No llama-server is ready ({states}). Start one, wait for it to finish loading, or "
                "fix the upstream URLs in the gateway's configuration.",
            )
        best = min(healthy, key=self._preference)
        status = self._status[best]
        if status.health and status.health.idle_slots:  # until the next sweep, count the slot it takes
            status.health = replace(status.health, idle_slots=status.health.idle_slots - 1)
        return best

    def healthy(self, upstream: Upstream) -> bool:
        """Whether the last sweep found `upstream` healthy (and no request failed on it since)."""
        health = self._status[upstream].health
        return bool(health and health.ok)

    def slot_count(self, upstream: Upstream) -> int | None:
        """How many slots the last sweep saw on `upstream` (None if it does not say)."""
        health = self._status[upstream].health
        return health.slots if health else None

    def _preference(self, upstream: Upstream) -> tuple:
        status = self._status[upstream]
        idle = status.health.idle_slots if status.health else None
        return (idle == 0, status.failed_at, -(idle or 0), self._order[upstream])

    def report_failure(self, upstream: Upstream) -> None:
        """Avoid `upstream` until a sweep finds it healthy (not for context_exceeded: that is the request)."""
        status = self._status[upstream]
        status.failed_at = time.monotonic()
        status.health = Health(False, False, None, "failed a request; waiting for a health check")
        log.warning("%r reported failing; out of rotation until healthy", upstream)

    async def _watch(self) -> None:
        while True:
            await self._sweep()
            self._swept.set()
            await asyncio.sleep(self.check_interval)

    async def _sweep(self) -> None:
        upstreams = list(self._status)
        results = await asyncio.gather(*(u.health() for u in upstreams), return_exceptions=True)
        for upstream, health in zip(upstreams, results, strict=True):
            if isinstance(health, BaseException):
                log.error("%r: health check crashed: %s", upstream, describe_exception(health))
                health = Health(False, False, None, f"health check failed ({describe_exception(health)})")
            previous = self._status[upstream].health
            if previous is not None and previous.ok != health.ok:
                log.info("%r is now %s", upstream, health.detail)
            self._status[upstream].health = health

    async def aclose(self) -> None:
        """Stop the health sweeps and close the upstreams' HTTP clients."""
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._monitor
            self._monitor = None
        for upstream in self._status:
            await upstream.aclose()
