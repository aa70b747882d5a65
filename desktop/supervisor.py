"""Keeps Stella's engine (`python -m sidecar.engine`) running beside the window.

- The engine is a child process spawned with PR_SET_PDEATHSIG, so it gets SIGTERM when the
  shell dies, even by SIGKILL. Linux sends that signal when the *thread* that forked the child
  ends, so every spawn happens on the supervisor's own thread, which lives exactly as long as
  the supervision does.
- The channel secret and port go to the engine in its environment (never on its command line);
  it answers with ``channel_port=<port>`` on stdout. A restarted engine is asked for the same
  port, so the page simply reconnects.
- An engine that exits without being asked is started again after a backoff (0.5 s, doubling
  up to 15 s; back to 0.5 s once a run lasted 30 s), told how many restarts there were and how
  the last run ended, so the UI can say what happened.
- Its heap is tuned (`sidecar/memory.py`: two malloc arenas).
- `stop()` terminates it (SIGTERM, then SIGKILL after a grace period) and waits for it.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import IO, Literal

from remote_api.shared.processes import die_with_parent, stop_process
from sidecar.launch import PORT_LINE, Launch
from sidecar.memory import engine_env

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineStatus:
    state: Literal["starting", "running", "restarting", "stopped"]
    port: int | None = None
    pid: int | None = None
    restarts: int = 0
    detail: str = ""
    retry_in: float | None = None


@dataclass(frozen=True)
class Backoff:
    first: float = 0.5
    factor: float = 2.0
    cap: float = 15.0
    stable_after: float = 30.0  # a run this long was healthy: the next crash starts from `first` again

    def delay(self, failures_in_a_row: int) -> float:
        return min(self.cap, self.first * self.factor ** max(0, failures_in_a_row - 1))


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"it was stopped by {name}"
    return f"it exited with code {code}"


def engine_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "sidecar.engine", *args]


class Supervisor:
    def __init__(self, command: list[str], launch: Launch, *, env: dict[str, str] | None = None,
                 on_status: Callable[[EngineStatus], None] | None = None, backoff: Backoff = Backoff(),
                 start_timeout: float = 60.0, stderr: IO[str] | None = None) -> None:
        self.command = command
        self.stderr = stderr  # where the engine's log lines go (None: our own stderr)
        self.launch = launch
        self.env = env
        self.on_status = on_status
        self.backoff = backoff
        self.start_timeout = start_timeout
        self.status = EngineStatus("stopped")
        self._port = launch.port
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._running = threading.Condition(self._lock)
        self._thread = threading.Thread(target=self._supervise, name="engine-supervisor", daemon=True)

    @property
    def pid(self) -> int | None:
        with self._lock:
            return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def start(self) -> None:
        self._thread.start()

    def wait_running(self, timeout: float) -> EngineStatus:
        """The status once the engine listens (or whatever it is when `timeout` runs out)."""
        with self._running:
            self._running.wait_for(lambda: self.status.state == "running", timeout)
            return self.status

    def stop(self, grace: float = 5.0) -> None:
        self._stopping.set()
        with self._lock:
            proc = self._proc
        if proc is not None and stop_process(proc, grace) == -signal.SIGKILL:
            log.warning("the engine did not stop within %.0f s; it was killed", grace)
        if self._thread.is_alive():
            self._thread.join()
        self._set(EngineStatus("stopped", restarts=self.status.restarts))

    def _supervise(self) -> None:
        restarts, failures, last_exit = 0, 0, ""
        while not self._stopping.is_set():
            launch = replace(self.launch, port=self._port, restarts=restarts, last_exit=last_exit)
            began = time.monotonic()
            last_exit = self._run_once(launch)
            if self._stopping.is_set():
                return
            failures = 1 if time.monotonic() - began >= self.backoff.stable_after else failures + 1
            delay = self.backoff.delay(failures)
            restarts += 1
            log.warning("Stella's engine stopped unexpectedly (%s); restarting in %.1f s", last_exit, delay)
            self._set(EngineStatus("restarting", restarts=restarts, detail=last_exit, retry_in=delay))
            self._stopping.wait(delay)

    def _run_once(self, launch: Launch) -> str:
        """Run the engine until it exits; returns how it ended, in words."""
        try:
            proc = subprocess.Popen(self.command, env=engine_env({**(self.env or os.environ), **launch.env()}),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr,
                                    text=True, preexec_fn=die_with_parent)
        except OSError as exc:
            return f"it could not be started ({exc})"
        with self._lock:
            self._proc = proc
        self._set(EngineStatus("starting", pid=proc.pid, restarts=launch.restarts))
        hung = threading.Timer(self.start_timeout, proc.kill)  # no port in time: treat it as a crash
        hung.daemon = True
        hung.start()
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        hung.cancel()
        if first.startswith(PORT_LINE) and first[len(PORT_LINE):].isdigit():
            self._port = int(first[len(PORT_LINE):])
            self._set(EngineStatus("running", port=self._port, pid=proc.pid, restarts=launch.restarts))
        elif first:
            log.warning("unexpected first line from the engine: %r", first)
        for line in proc.stdout:  # keep the pipe drained: a full pipe would block the engine
            log.info("engine: %s", line.rstrip())
        return describe_exit(proc.wait())

    def _set(self, status: EngineStatus) -> None:
        with self._running:
            self.status = status
            self._running.notify_all()
        if self.on_status is not None:
            try:
                self.on_status(status)
            except Exception:
                log.exception("engine status callback failed")
