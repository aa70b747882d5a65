"""Running a coroutine from a synchronous test, even while Playwright's sync API keeps an event
loop running on the test's thread (asyncio.run refuses to start a second one there)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    with ThreadPoolExecutor(1, thread_name_prefix="aio") as pool:
        return pool.submit(asyncio.run, coro).result()
