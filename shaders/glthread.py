"""A dedicated GL thread: the only thread that ever touches a moderngl context.

A GL context made current on the Qt GUI thread turns the webview black, so the app never does GL
work anywhere else: callers hand functions to ``submit``/``call`` and get results back.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import moderngl

T = TypeVar("T")
_STOP = object()


def create_context() -> moderngl.Context:
    """Headless-friendly context: EGL first on Linux (no display needed), the platform default otherwise."""
    backends: list[str | None] = ["egl", None] if sys.platform.startswith("linux") else [None]
    errors = []
    for backend in backends:
        try:
            kwargs = {"backend": backend} if backend else {}
            return moderngl.create_standalone_context(require=330, **kwargs)
        except Exception as exc:  # noqa: BLE001 - each backend fails in its own way; report them all
            errors.append(f"{backend or 'default'}: {exc}")
    raise RuntimeError(
        "no OpenGL 3.3 context available (" + "; ".join(errors) + "); on Linux install "
        "Mesa's EGL (libegl1 libegl-mesa0 libgl1-mesa-dri)"
    )


class GLThread:
    """Owns one standalone context on its own thread and runs submitted work there, in order."""

    def __init__(self, name: str = "stella-gl") -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        started: Future = Future()
        self._thread.start()
        self._jobs.put((started, create_context, (), {}))
        self.ctx: moderngl.Context = started.result()

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future:
        """Queue ``fn`` for the GL thread without waiting (jobs run in submission order)."""
        future: Future = Future()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the GL thread and return its result (inline if already on it)."""
        if threading.current_thread() is self._thread:
            return fn(*args, **kwargs)
        return self.submit(fn, *args, **kwargs).result()

    def close(self) -> None:
        if self._thread.is_alive():
            self.call(self.ctx.release)
            self._jobs.put(_STOP)
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            future, fn, args, kwargs = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                future.set_exception(exc)
