"""`stella run` as a user starts it, under Xvfb, with DevTools open on a private port so a test
can find things on the page; what the user sees is read from the screen (tests/desktop/screen.py).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from remote_api.shared.processes import free_port
from tests.desktop import screen
from tests.desktop.polling import wait_for
from tests.desktop.processes import alive, descendants


def ready(outfits: int = 6) -> str:
    """The page is up: the outfits listed, the character drawn once with WebGL2, the server reached."""
    return (f"document.querySelectorAll('.outfit').length === {outfits} && document.body.dataset.character === "
            "'webgl' && document.getElementById('link').dataset.transport === 'websocket'")


READY = ready()  # the built-in atlas's six outfits


@dataclass
class AppWindow:
    proc: subprocess.Popen
    display: str
    wid: int
    page: screen.DevTools

    def geometry(self) -> tuple[int, int, int, int]:
        return screen.window_geometry(self.display, self.wid)

    def on_screen(self, selector: str) -> tuple[int, int, int, int]:
        x, y, _, _ = self.geometry()
        left, top, w, h = self.page.rect(selector)
        return x + left, y + top, w, h

    def look(self, selector: str, shot: np.ndarray | None = None) -> np.ndarray:
        """The element as it is on the screen now (or in `shot`)."""
        x, y, w, h = self.on_screen(selector)
        return (screen.grab(self.display) if shot is None else shot)[y:y + h, x:x + w]

    def click(self, selector: str) -> None:
        x, y, w, h = self.on_screen(selector)
        screen.click(self.display, x + w // 2, y + h // 2)

    def character_shown(self) -> bool:
        return bool(self.look("#character").std() > 20)

    def close_and_check_nothing_is_left(self) -> None:
        """Close it as a window manager's close button does; every process of the app must exit."""
        family = descendants(self.proc.pid)
        assert len(family) >= 3, f"expected the shell, the engine and QtWebEngine processes, got {family}"
        screen.close_window(self.display, self.wid)
        assert self.proc.wait(20) == 0
        wait_for(lambda: not alive(family), 10, "every process of the app exiting")


def launch(display: str, server: str, store: Path, env: dict[str, str],
           voice: str = "off") -> tuple[subprocess.Popen, int]:
    """Start `stella run`; returns the process and its DevTools port."""
    devtools = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "desktop.cli", "run", "--server", server, "--store", str(store), "--voice", voice],
        env={**env, "DISPLAY": display, "QTWEBENGINE_REMOTE_DEBUGGING": str(devtools)})
    return proc, devtools


def abandon(proc: subprocess.Popen, page: screen.DevTools | None) -> None:
    """Leave nothing behind after a run that may have failed half-way: the DevTools connection is
    closed and the app, if still running, killed."""
    if page is not None:
        page.close()
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def stella(display: str, server: str, store: Path, env: dict[str, str], voice: str = "off",
           outfits: int = 6) -> Iterator[AppWindow]:
    """The window once it is ready (with `outfits` buttons) and Stella is on the screen; killed if the
    test leaves it open."""
    proc, devtools = launch(display, server, store, env, voice)
    page = None
    try:
        wid = screen.find_window(display, "Stella")
        page = screen.DevTools(devtools)
        page.wait(ready(outfits), 30)
        window = AppWindow(proc, display, wid, page)
        wait_for(window.character_shown, 10, "the character reaching the screen")
        yield window
    finally:
        abandon(proc, page)
