"""Blocking work runs below the audio threads' priority (sidecar/workers.py)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import pytest

from sidecar.workers import with_background_workers


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_work_sent_to_a_thread_runs_niced_and_the_event_loop_does_not():
    async def main() -> tuple[int, int, int]:
        worker = await asyncio.to_thread(_nice)
        started = await asyncio.to_thread(lambda: _spawned(_nice))  # e.g. whisper.cpp's own threads
        return _nice(), worker, started

    loop_nice, worker, started = asyncio.run(with_background_workers(main(), 5))
    assert loop_nice == _nice(), "the event loop (and the audio callbacks) keep their priority"
    assert worker == min(19, loop_nice + 5)
    assert started == worker, "threads a worker starts inherit its priority"


def _spawned(fn):  # noqa: ANN001, ANN202
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]
