"""Child processes the gateway, the app and the tests start: a free port to give them, tying
them to our lifetime, waiting until they answer /health, and stopping them without orphans.
One copy of each, so every server the project starts is started and stopped the same way."""

from __future__ import annotations

import contextlib
import ctypes
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any


class NotHealthy(RuntimeError):
    """The process exited (`returncode` set) or did not answer /health with 200 in time."""

    def __init__(self, message: str, returncode: int | None) -> None:
        super().__init__(message)
        self.returncode = returncode


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def die_with_parent() -> None:
    """`preexec_fn` for children: get SIGTERM when the parent dies, even by SIGKILL (Linux)."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float, *, verify: Any = True) -> None:
    """Poll `url`/health until it answers 200; raise NotHealthy as soon as `proc` exits (with its
    stderr if piped) or when `timeout` runs out. `verify` is httpx's (a CA context for TLS)."""
    import httpx  # here: the window's shell imports this module at launch and never polls

    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2.0, verify=verify) as client:
        while True:
            if proc.poll() is not None:
                said = proc.stderr.read() if proc.stderr else ""
                said = said.decode(errors="replace") if isinstance(said, bytes) else said
                raise NotHealthy(f"`{_command(proc)}` exited with code {proc.returncode} while starting"
                                 + (f":\n{said}" if said else ""), proc.returncode)
            try:
                if client.get(f"{url}/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise NotHealthy(f"{url} did not answer /health within {timeout:.0f} s", None)
            time.sleep(0.1)


def _command(proc: subprocess.Popen) -> str:
    return proc.args if isinstance(proc.args, str) else " ".join(map(str, proc.args))


def stop_process(proc: subprocess.Popen, grace: float) -> int:
    """SIGTERM, wait up to `grace` seconds for a clean exit, then SIGKILL; reaps it either way and
    returns the exit code (negative: the signal that ended it)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


@contextlib.contextmanager
def running(cmd: list[str], url: str, *, timeout: float | None, grace: float, verify: Any = True,
            **popen: Any) -> Iterator[subprocess.Popen]:
    """`cmd` as a child process (`popen` goes to Popen), yielded once `url` answers /health
    (`wait_healthy`; at once if `timeout` is None) and always stopped after (`stop_process`)."""
    with subprocess.Popen(cmd, **popen) as proc:  # its pipes are closed on the way out
        try:
            if timeout is not None:
                wait_healthy(url, proc, timeout, verify=verify)
            yield proc
        finally:
            stop_process(proc, grace)
