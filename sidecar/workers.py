"""The thread pool the engine's blocking work runs in (whisper, piper, loading models, the
store, character frames): below the audio threads' CPU priority.

On a 2-core machine whisper and piper take every core for hundreds of milliseconds, and they do
it exactly when a reply starts. PortAudio's callback threads, at the same priority, then missed
their deadlines (ALSA logged "underrun occurred" dozens of times in a 20-turn session under
load): her voice stuttered, and each stutter moved her echo off the timeline that the echo
canceller and the echo guard expect, which is how her own voice came to interrupt her. The
voice loop cannot raise the audio threads (that needs privileges), so it lowers the rest: on
Linux each worker thread takes a higher nice value, and the threads whisper.cpp and onnxruntime
start from it inherit it. Elsewhere the pool is an ordinary one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


def _lower_priority(nice: int) -> None:
    if not nice or not sys.platform.startswith("linux"):  # elsewhere PRIO_PROCESS would nice the whole process
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError as exc:
        log.debug("could not lower a worker thread's priority: %s", exc)


def background_executor(nice: int) -> ThreadPoolExecutor:
    """A pool whose threads run `nice` steps below the thread that starts them."""
    return ThreadPoolExecutor(thread_name_prefix="stella-work", initializer=_lower_priority, initargs=(nice,))


async def with_background_workers(main: Awaitable[T], nice: int) -> T:
    """Run `main` with `asyncio.to_thread` (the loop's default executor) on a niced pool."""
    asyncio.get_running_loop().set_default_executor(background_executor(nice))
    return await main
