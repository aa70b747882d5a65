"""`stella run`: the window (or, with no display, the terminal chat) on a gateway — by default
the embedded one: a local gateway that starts its own llama-server with the bundled model, all
stopped together.

The gateway runs as a child process tied to ours (it dies with us, and takes llama-server with
it), so closing the app never leaves an orphan behind. The window does not wait for it: it
shows at once and its link indicator says "Connecting…" until the gateway answers.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from desktop.shell import WindowOptions, run_window
from remote_api.processes import NotHealthy, die_with_parent, free_port, running, wait_healthy

log = logging.getLogger(__name__)


class LaunchError(RuntimeError):
    """The embedded default could not start; the message says why and what to do."""


def has_display(env: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")) or sys.platform in ("darwin", "win32")


@contextlib.contextmanager
def embedded_gateway(config: Path | None = None, timeout: float = 120.0, wait: bool = True) -> Iterator[str]:
    """Start `stella-server serve` on a free loopback port; yield its URL (once healthy if `wait`)."""
    port = free_port()
    cmd = [sys.executable, "-m", "remote_api.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    if config is not None:
        cmd += ["--config", str(config)]
    url = f"http://127.0.0.1:{port}"
    with running(cmd, url, timeout=None, grace=15, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent) as proc:
        if wait:
            _wait_healthy(proc, url, timeout)
        yield url


def _wait_healthy(proc: subprocess.Popen, url: str, timeout: float) -> None:
    try:
        wait_healthy(url, proc, timeout)
    except NotHealthy as exc:
        if exc.returncode is None:
            raise LaunchError(f"the local Stella server did not become ready within {timeout:.0f} s") from None
        raise LaunchError(f"the local Stella server exited with code {exc.returncode} while starting; see the "
                          "messages above (try `bash build/setup.sh` to repair the install)") from None


def run(server: str | None, config: Path | None, window: WindowOptions | None = None) -> int:
    """Start the app on `server`, or on the embedded default when no server is given.

    The window opens when there is a display; `window` carries its options (store, voice…).
    """
    show_window = has_display()
    with contextlib.ExitStack() as stack:
        if server is None:
            print("Starting the embedded default: local llama-server with the bundled model + gateway…",
                  flush=True)
            server = stack.enter_context(embedded_gateway(config, wait=not show_window))
        if show_window:
            return run_window(replace(window or WindowOptions(), server=server))
        print("No display found (DISPLAY / WAYLAND_DISPLAY are unset): starting the terminal chat "
              "instead of the desktop window.", flush=True)
        chat = subprocess.run([sys.executable, "-m", "remote_api.chat_cli", "--server", server, "--interactive"])
    return chat.returncode
