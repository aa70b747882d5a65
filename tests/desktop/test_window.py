"""The real Stella window (pywebview on the system's WebKitGTK, the Linux default) under Xvfb: what is on the
screen, a real mouse click on an outfit, closing it, restarting it, and what it leaves behind. The first test
runs on the fallback Qt WebEngine too.

The page is read through the shell's page automation socket only to know where things are and to catch the
first frame after a click; what the user sees is checked on the screen itself.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests import services
from tests.desktop import screen
from tests.desktop.app_window import OUTFIT_IDS, abandon, launch, stella
from tests.desktop.gateway import Gateway
from tests.desktop.polling import wait_for
from tests.desktop.processes import alive, cpu_seconds, descendants

pytestmark = [pytest.mark.llama, pytest.mark.keyring, pytest.mark.display]

WEB_PROCESS = {"gtk": "WebKitWebProcess", "qt": "QtWebEngineProcess"}  # the web view's own helper program

# Catch the first frame drawn after the next click on an outfit: a rAF callback queued once the page's own
# click handler has run comes after the page's drawing callback in the same display frame, so it reads the
# canvas that frame presents.
CATCH_NEXT_FRAME = """(() => {
  window.caught = null;
  document.addEventListener('click', () => {
    const clicked = performance.now();
    const canvas = document.getElementById('character');
    requestAnimationFrame(() => { window.caught = {frame: canvas.toDataURL(), ms: performance.now() - clicked}; });
  }, {once: true});
  return true;
})()"""


def commands(pid: int) -> list[str]:
    """The command lines of the app's processes."""
    found = []
    for p in descendants(pid):
        with contextlib.suppress(OSError):
            found.append(Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    return found


def png_pixels(data_url: str) -> np.ndarray:
    with Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))) as img:
        return np.asarray(img.convert("RGB"))


@pytest.mark.parametrize("webview", ["gtk", "qt"])
def test_the_window_shows_stella_and_a_real_click_changes_her_outfit_within_a_frame(
        xvfb: services.Xvfb, gateway: Gateway, engine_env: dict[str, str], tmp_path: Path, webview: str) -> None:
    with stella(xvfb.display, gateway.url, tmp_path / "stella.db", engine_env, webview=webview) as window:
        shot = screen.grab(xvfb.display)
        Image.fromarray(shot).save(tmp_path / "window.png")
        print(f"screenshot: {tmp_path / 'window.png'}")
        assert screen.shown_outfit(window.look("#character", shot)) == "hoodie"
        assert window.page.eval(OUTFIT_IDS) == ["hoodie", "red_dress", "school", "space", "pyjamas", "formal", "hanfu",
                                                "cyberpunk"]
        assert window.outfits_shown(shot), "an outfit button is not drawn"

        before = screen.outfit_distances(window.look("#character", shot))
        assert window.page.eval(CATCH_NEXT_FRAME)
        window.click('.outfit[data-outfit="red_dress"]')
        caught = window.page.wait("window.caught", 5)
        after = screen.outfit_distances(png_pixels(caught["frame"]))
        gap = before["red_dress"] - before["hoodie"]
        assert after["red_dress"] < before["red_dress"] - 0.05 * gap, (
            f"the first frame after the click ({caught['ms']:.0f} ms later) does not show the red dress coming: "
            f"before {before}, after {after}")

        wait_for(lambda: screen.shown_outfit(window.look("#character")) == "red_dress", 10, "the red dress on screen")
        assert window.page.eval("document.querySelector('.outfit[aria-pressed=true]').dataset.outfit") == "red_dress"
        assert WEB_PROCESS[webview] in " ".join(commands(window.proc.pid)), f"not on {webview}"
        window.close_and_check_nothing_is_left()


def test_without_webkitgtk_the_window_falls_back_to_qt_webengine_and_says_why(
        xvfb: services.Xvfb, gateway: Gateway, engine_env: dict[str, str], tmp_path: Path,
        capfd: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "no-pygobject" / "gi"  # fault injection: PyGObject that does not load, ahead of the real one
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("PyGObject removed by the test")\n')
    env = {**engine_env, "PYTHONPATH": str(broken.parent)}
    with stella(xvfb.display, gateway.url, tmp_path / "stella.db", env) as window:
        assert WEB_PROCESS["qt"] in " ".join(commands(window.proc.pid))
        assert screen.shown_outfit(window.look("#character")) == "hoodie"
        window.close_and_check_nothing_is_left()
    assert ("web view: Qt WebEngine — the system's WebKitGTK cannot be used (PyGObject does not load: PyGObject "
            "removed by the test), so the fallback Qt WebEngine; to use the lighter system web view, install the "
            "system's web view (Debian/Ubuntu: sudo apt install gir1.2-webkit2-4.1)") in capfd.readouterr().err


def test_a_display_that_answers_late_still_gets_the_window_and_one_that_never_does_gets_plain_words(
        gateway: Gateway, engine_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    number = services.Xvfb.free_number()
    display = f":{number}"
    proc, _ = launch(display, gateway.url, tmp_path / "stella.db", engine_env)
    said = ""
    try:
        def heard(text: str) -> bool:
            nonlocal said
            said += capfd.readouterr().err
            return text in said

        wait_for(lambda: heard("web view: WebKitGTK") or proc.poll() is not None, 60, "the app choosing its web view")
        time.sleep(0.5)  # it has asked for the display: now the session comes up
        with services.Xvfb(number=number):
            wid = screen.find_window(display, "Stella")
            screen.close_window(display, wid)
            assert proc.wait(20) == 0
        assert heard(f"the display {display} answered after")
    finally:
        abandon(proc, None)

    never = f":{services.Xvfb.free_number()}"
    proc, _ = launch(never, gateway.url, tmp_path / "stella.db", engine_env)
    try:
        assert proc.wait(60) == 2
    finally:
        abandon(proc, None)
    assert (f"stella: the display '{never}' did not answer for 5 s: is the desktop session running? (Without "
            "DISPLAY, Stella starts its terminal chat instead.)") in capfd.readouterr().err


def test_outfit_and_window_geometry_survive_a_restart_and_a_killed_shell_leaves_nothing(
        xvfb: services.Xvfb, gateway: Gateway, engine_env: dict[str, str], tmp_path: Path) -> None:
    store = tmp_path / "stella.db"
    with stella(xvfb.display, gateway.url, store, engine_env) as window:
        window.click('.outfit[data-outfit="space"]')
        window.page.wait("document.body.dataset.outfit === 'space'")
        screen.xdotool(xvfb.display, "windowsize", str(window.wid), "980", "660")
        screen.xdotool(xvfb.display, "windowmove", str(window.wid), "60", "40")
        wait_for(lambda: window.geometry() == (60, 40, 980, 660), 5, "the window moving")
        window.close_and_check_nothing_is_left()

    with stella(xvfb.display, gateway.url, store, engine_env) as window:
        assert window.geometry() == (60, 40, 980, 660)
        assert window.page.eval("document.querySelector('.outfit[aria-pressed=true]').dataset.outfit") == "space"
        wait_for(lambda: screen.shown_outfit(window.look("#character")) == "space", 5, "the space suit on screen")
        family = descendants(window.proc.pid)
        os.kill(window.proc.pid, signal.SIGKILL)
        window.proc.wait()
        wait_for(lambda: not alive(family), 15, "the engine and the web processes dying with the shell")


# Every WebGL draw from now on, with the float uniforms set before it (the last one is u_time: the breath).
RECORD_DRAWS = """(() => {
  const proto = WebGL2RenderingContext.prototype;
  const uniform1f = proto.uniform1f, drawArrays = proto.drawArrays;
  let floats = [];
  window.drawn = [];
  proto.uniform1f = function (where, x) { floats.push(x); return uniform1f.call(this, where, x); };
  proto.drawArrays = function (...args) { drawn.push(floats); floats = []; return drawArrays.apply(this, args); };
  return true;
})()"""


def test_on_software_gl_the_window_leaves_the_cores_to_listening_and_thinking(
        xvfb: services.Xvfb, gateway: Gateway, engine_env: dict[str, str], tmp_path: Path) -> None:
    """Xvfb has only llvmpipe: a smooth 60 fps animation there costs a whole core, which whisper and
    the model need while the state dot says "listening" or "thinking" (measured: ASR 1.4 s -> 0.7 s);
    and each frame of the character a few per cent, so she stands still between blinks (no breath)."""
    with stella(xvfb.display, gateway.url, tmp_path / "stella.db", engine_env) as window:
        assert window.page.eval("document.body.classList.contains('software-gl')")
        window.page.eval(RECORD_DRAWS)
        screen.xdotool(xvfb.display, "windowsize", str(window.wid), "1000", "700")  # a new size: drawn again
        drawn = wait_for(lambda: window.page.eval("drawn.length && drawn"), 5, "the character redrawn")
        assert all(floats[-1] == 0 for floats in drawn), f"a breath offset (u_time) was drawn: {drawn}"
        window.page.eval("(document.getElementById('state').dataset.state = 'thinking') && true")
        family = descendants(window.proc.pid)
        used, start = cpu_seconds(family), time.monotonic()
        time.sleep(3)
        share = (cpu_seconds(family) - used) / (time.monotonic() - start)
        assert window.page.eval("getComputedStyle(document.querySelector('#state .dot')).animationName") == "pulse"
        assert share < 0.5, f"the window used {share:.0%} of a core while showing 'thinking'"
        window.close_and_check_nothing_is_left()
