"""Failed sign-ins are rate-limited per client address, so codes and tokens cannot be guessed.

After `limit` failures within `window` seconds an address is refused outright - good
credentials included, or an attacker could keep guessing between two good requests - until
its oldest failure ages out. Kept in memory per process (with several replicas an address gets
`limit` tries at each); bounded to `max_keys` addresses. Sans-I/O: the clock is injected.
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

    def retry_after(self, key: str) -> float:
        """0 if `key` may try now, else the seconds until it may."""
        failures = self._recent(key)
        if len(failures) < self.limit:
            return 0.0
        return max(0.001, failures[-self.limit] + self.window - self._clock())

    def failed(self, key: str) -> None:
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
