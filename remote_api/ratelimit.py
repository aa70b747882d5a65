"""Failed sign-ins are counted per client address and per device, so codes cannot be guessed
and a flood of junk cannot lock a device out.

Each failure is counted under every key it belongs to (``addr:<ip>``, and ``device:<id>`` once
the request proved which device it is). A key with `limit` failures within `window` seconds is
*over the limit* until its oldest failure ages out. What that costs is the caller's choice
(`remote_api.auth`): failing requests then get 429 instead of their reason, pairing attempts
from that address are refused before their code is checked, and valid credentials are never
refused - a web page or a local process spamming the gateway from 127.0.0.1 must not lock the
desktop app out of its own gateway. Kept in memory per process (with several replicas a key
gets `limit` tries at each); bounded to `max_keys` keys. Sans-I/O: the clock is injected.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable


class FailureLimiter:
    def __init__(self, limit: int = 10, window: float = 60.0, *, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = 10_000) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("the failure limit must be at least 1 per a positive window")
        self.limit, self.window = limit, window
        self._clock = clock
        self._max_keys = max_keys
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, *keys: str) -> float:
        """0 if none of `keys` is over the limit, else the seconds until all of them are under."""
        waits = [0.0]
        for key in keys:
            failures = self._recent(key)
            if len(failures) >= self.limit:
                waits.append(max(0.001, failures[-self.limit] + self.window - self._clock()))
        return max(waits)

    def failed(self, *keys: str) -> None:
        """Count one failure under each of `keys`."""
        for key in keys:
            failures = self._recent(key)
            failures.append(self._clock())
            self._failures[key] = failures
            self._failures.move_to_end(key)
        while len(self._failures) > self._max_keys:
            self._failures.popitem(last=False)

    def _recent(self, key: str) -> deque[float]:
        failures = self._failures.get(key, deque())
        horizon = self._clock() - self.window
        while failures and failures[0] <= horizon:
            failures.popleft()
        if not failures:
            self._failures.pop(key, None)
        return failures
