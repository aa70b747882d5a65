"""The session timeline: seconds since the first input sample was captured.

Every event, the input file and the output file share it: sample 0 of in.wav and of out.wav
is t = 0. With a microphone, t = 0 is the first captured block (PortAudio/PulseAudio may take
a second or two to deliver it). A file read faster than real time (tests) moves the clock
forward with `skip_to` instead of sleeping, so file time and clock time stay equal while it is
read; the clock runs at wall speed again afterwards.
"""

from __future__ import annotations

import asyncio
import time


class Clock:
    def __init__(self) -> None:
        self._origin: float | None = None
        self._skipped = 0.0

    @property
    def started(self) -> bool:
        return self._origin is not None

    def start(self, at: float | None = None) -> None:
        """Make `at` (a time.monotonic() instant, default now) the timeline's zero."""
        self._origin = time.monotonic() if at is None else at

    def now(self) -> float:
        if self._origin is None:
            return 0.0
        return time.monotonic() - self._origin + self._skipped

    def monotonic(self, t: float) -> float:
        """The time.monotonic() instant of timeline time `t`."""
        if self._origin is None:
            raise RuntimeError("the clock has not started")
        return self._origin + t - self._skipped

    async def wait_until(self, t: float) -> None:
        await asyncio.sleep(max(0.0, t - self.now()))

    async def skip_to(self, t: float) -> None:
        """Jump forward to `t` at once (never back), letting other tasks run once."""
        self._skipped += max(0.0, t - self.now())
        await asyncio.sleep(0)
