"""The session timeline: seconds since the first input sample was captured.

Every event, the input file and the output file share it: sample 0 of in.wav and of out.wav
is t = 0. With a microphone, t = 0 is the first captured block (PortAudio/PulseAudio may take
a second or two to deliver it). A file read faster than real time (tests) moves the clock
forward with `skip_to` instead of sleeping, so file time and clock time stay equal while it is
read; the clock runs at wall speed again afterwards. A microphone's sample clock and the
computer's drift apart (measured through PulseAudio: 120 ppm, 0.2 s in half an hour — past the
echo guard's delay window), so a device input steers the clock onto its samples (`Steer`).
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

    def slew(self, seconds: float) -> None:
        """Move the timeline back by `seconds` (forward if negative): the clock ran ahead."""
        if self._origin is not None:
            self._origin += seconds

    async def wait_until(self, t: float) -> None:
        await asyncio.sleep(max(0.0, t - self.now()))

    async def skip_to(self, t: float) -> None:
        """Jump forward to `t` at once (never back), letting other tasks run once."""
        self._skipped += max(0.0, t - self.now())
        await asyncio.sleep(0)


class Steer:
    """Keeps the clock on a device's sample clock (sans-I/O: times in, corrections out).

    Fed, each time samples arrive, the clock's time and the timeline time of the newest sample.
    The clock is ahead of the samples by the delivery lag; the smallest lag seen in each
    `period_s` is that lag without scheduling noise. The first period sets the lag to keep;
    after each later one the correction that restores it is returned, at most `max_step_s`
    at a time (a step that large is a jolt for the echo canceller, several small ones are not).
    """

    def __init__(self, period_s: float = 5.0, max_step_s: float = 0.002) -> None:
        self.period_s = period_s
        self.max_step_s = max_step_s
        self._keep: float | None = None
        self._least = float("inf")
        self._since: float | None = None

    def feed(self, now: float, sample_t: float) -> float:
        """The seconds to slew the clock by now (0.0 most of the time)."""
        self._least = min(self._least, now - sample_t)
        if self._since is None:
            self._since = now
        if now - self._since < self.period_s:
            return 0.0
        least, self._least, self._since = self._least, float("inf"), now
        if self._keep is None:
            self._keep = least
            return 0.0
        return max(-self.max_step_s, min(self.max_step_s, least - self._keep))
