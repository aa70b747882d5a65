"""`stella run` as a user starts it, under Xvfb, with its page automation socket open so a test can find
things on the page; what the user sees is read from the screen (tests/desktop/screen.py).

The web view is the app's own choice (WebKitGTK on Linux) unless a test asks for one (`webview="qt"`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests import services
from tests.desktop import screen
from tests.desktop.polling import wait_for
from tests.desktop.processes import alive, descendants


def ready(outfits: int = 8) -> str:
    """The page is up: the outfits listed with their thumbnails, the character drawn once with WebGL2, the server
    reached."""
    return (f"document.querySelectorAll('.outfit').length === {outfits} && document.body.dataset.character === "
            "'webgl' && document.getElementById('link').dataset.transport === 'websocket' && "
            "[...document.querySelectorAll('.outfit img')].every((i) => i.complete && i.naturalWidth > 0)")


READY = ready()  # the built-in atlas's eight outfits
OUTFIT_IDS = "[...document.querySelectorAll('.outfit')].map((b) => b.dataset.outfit)"


@dataclass
class AppWindow:
    proc: subprocess.Popen
    display: str
    wid: int
    page: screen.Page

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

    def outfits_shown(self, shot: np.ndarray | None = None) -> bool:
        """Every outfit button is on the screen with its thumbnail (the web view paints decoded images in its
        own time, after the page has them)."""
        shot = screen.grab(self.display) if shot is None else shot
        buttons = [self.look(f'.outfit[data-outfit="{o}"]', shot) for o in self.page.eval(OUTFIT_IDS)]
        return all(button.shape[0] >= 60 and button.std() > 20 for button in buttons)

    def close_and_check_nothing_is_left(self) -> None:
        """Close it as a window manager's close button does; every process of the app must exit."""
        family = descendants(self.proc.pid)
        assert len(family) >= 3, f"expected the shell, the engine and the web view's processes, got {family}"
        screen.close_window(self.display, self.wid)
        assert self.proc.wait(20) == 0
        wait_for(lambda: not alive(family), 10, "every process of the app exiting")


def launch(display: str, server: str, store: Path, env: dict[str, str], voice: str = "off",
           webview: str | None = None) -> tuple[subprocess.Popen, Path]:
    """Start `stella run` (on `webview`, else the app's own choice); returns the process and its page socket."""
    socket = store.parent / "page.sock"
    chosen = {"STELLA_WINDOW__BACKEND": webview} if webview else {}
    proc = subprocess.Popen(
        [sys.executable, "-m", "desktop.cli", "run", "--server", server, "--store", str(store), "--voice", voice],
        env={**env, **chosen, "DISPLAY": display, "STELLA_WINDOW__AUTOMATION_SOCKET": str(socket)})
    return proc, socket


def abandon(proc: subprocess.Popen, page: screen.Page | None) -> None:
    """Leave nothing behind after a run that may have failed half-way: the page socket is
    closed and the app, if still running, killed."""
    if page is not None:
        page.close()
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def stella(display: str, server: str, store: Path, env: dict[str, str], voice: str = "off",
           outfits: int = 8, webview: str | None = None) -> Iterator[AppWindow]:
    """The window once it is ready (with `outfits` buttons) and Stella is on the screen; killed if the
    test leaves it open."""
    proc, socket = launch(display, server, store, env, voice, webview)
    page = None
    try:
        wid = screen.find_window(display, "Stella")
        page = screen.Page(socket)
        page.wait(ready(outfits), 30)
        window = AppWindow(proc, display, wid, page)
        wait_for(window.character_shown, 10, "the character reaching the screen")
        wait_for(window.outfits_shown, 10, "the outfit buttons reaching the screen")
        yield window
    finally:
        abandon(proc, page)


@dataclass
class UserDesktop:
    """`stella run` as a user starts it (the embedded gateway and llama-server unless `server`), in a
    private desktop session of its own: Xvfb, a D-Bus session with an unlocked gnome-keyring, and a
    PulseAudio daemon whose default microphone and speaker are null sinks. For the benches."""

    app: subprocess.Popen
    page: screen.Page
    pulse: services.PulseAudio
    sound: dict[str, str]  # the environment to play into / record from its sinks
    state: Path  # the app's state folder: its store and its log (app.log, no words in it)

    @property
    def log(self) -> str:
        return (self.state / "app.log").read_text(errors="replace")


def user_desktop(stack: contextlib.ExitStack, server: str | None = None, env: dict[str, str] | None = None,
                 sound_setup: Callable[[dict[str, str], services.PulseAudio], None] | None = None) -> UserDesktop:
    """The app started in a desktop session entered on `stack`, its voice listening (`env`: more of the
    app's settings, e.g. STELLA_VOICE__...; `sound_setup`: sinks and loopbacks made before the app starts)."""
    os.environ.pop("DISPLAY", None)
    pulse = stack.enter_context(services.PulseAudio())
    keyring = stack.enter_context(services.SecretService())
    xvfb = stack.enter_context(services.Xvfb())
    sound = {**os.environ, **pulse.env, "HOME": os.environ["HOME"]}
    if sound_setup is not None:
        sound_setup(sound, pulse)
    state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="stella-bench-")))
    app_env = {**os.environ, **keyring.env, "PULSE_SERVER": pulse.env["PULSE_SERVER"],
               "PULSE_SOURCE": f"{pulse.mic}.monitor", "PULSE_SINK": pulse.speaker, "DISPLAY": xvfb.display,
               "HOME": os.environ["HOME"], "XDG_STATE_HOME": str(state),
               "STELLA_WINDOW__AUTOMATION_SOCKET": str(state / "page.sock"), **(env or {})}
    cmd = [sys.executable, "-m", "desktop.cli", "run", "--store", str(state / "stella.db"), "--voice", "auto"]
    output = stack.enter_context((state / "app.log").open("w"))
    app = subprocess.Popen([*cmd, *(["--server", server] if server else [])], env=app_env,
                           cwd=Path(__file__).resolve().parents[2], stdout=output, stderr=subprocess.STDOUT)
    stack.callback(lambda: (app.poll() is None and (app.terminate(), app.wait(30))))
    page = screen.Page(state / "page.sock", timeout=300)
    stack.callback(page.close)
    page.wait("document.getElementById('wake')?.dataset.voice === 'ready'", 300)  # the DOM may not be there yet
    time.sleep(2.0)  # the microphone stream delivers 1-2 s after it starts
    return UserDesktop(app, page, pulse, sound, state)
