"""Desktop benchmark: how soon the window is there and ready to listen, what a turn feels like,
and what the app costs in memory and idle CPU — on the system's WebKitGTK and on Qt WebEngine, side by side.

Run: ``.venv/bin/python tests/bench/bench_desktop.py [--runs N]``. Starts its own llama-server
(gemma3 270M), gateway, Xvfb, Secret Service and PulseAudio (the sound card), then launches
``stella run`` N times per web view on one store (alternating WebKitGTK and Qt), as a user would, with
the voice on. Prints the figures and writes them as a markdown section to ``tests/bench/results/desktop.md``.

- window visible: launch → the window is mapped (xdotool sees it);
- UI ready: → the page lists the outfits, has drawn the character and reached the server;
- character on screen: → the screen shows Stella (screenshot);
- ready to listen: → the voice loop runs (models loaded, microphone open) and the link is up;
- one typed turn (xdotool typing, Enter): → the first words on screen, → her voice starts,
  → she has finished speaking;
- then one spoken turn ("Hey Stella." and a question played into the microphone sink), so that whisper,
  the turn model and piper have all run;
- memory after that spoken turn: resident set (VmRSS) of the shell (Python + the toolkit + the web view's UI
  side), of the web view's helper processes (WebKitWebProcess / WebKitNetworkProcess, or QtWebEngine's
  renderer and zygotes), and of the engine; the whole app is their sum (shared pages counted in each);
- idle CPU between turns: each part over 5 s of doing nothing, 2 s after the turn (the character blinks, and
  breathes with a GPU; the engine listens; the speaker stays up within a conversation);
- memory once quiet: the whole app's PSS 20 s after the spoken turn, the speaker resting;
- idle CPU once quiet: each part over the next 10 s, the state the app spends its day in (waiting for its name;
  the speaker rests 15 s after her last word).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests import services  # noqa: E402
from tests.desktop import screen  # noqa: E402
from tests.desktop.app_window import READY, AppWindow, abandon, launch  # noqa: E402
from tests.desktop.gateway import running_gateway  # noqa: E402
from tests.desktop.processes import cpu_seconds, descendants, pss_kib, rss_kib  # noqa: E402
from tests.sound import play  # noqa: E402
from tests.voice.speech import Piper, concat, silence  # noqa: E402

OUT = Path(__file__).parent / "results" / "desktop.md"
PARTS = ("shell", "webview", "engine")
WEBVIEWS = {"gtk": "WebKitGTK", "qt": "Qt WebEngine"}
HELPERS = (b"QtWebEngineProcess", b"WebKitWebProcess", b"WebKitNetworkProcess", b"WebKitGPUProcess")
MESSAGE = "Hello Stella! What do you like to do?"
QUESTION = "What kind of books do you like to read?"  # spoken after the wake phrase; no test asks it
QUIET_S = 20.0  # after the turn: the speaker rests 15 s after her last word (sidecar/voice/playback.py)
QUIET_CPU_S = 10.0  # idle once quiet, measured this long: a blink every ~4 s, so a few of them
LISTENING = ("document.getElementById('wake').dataset.voice === 'ready'"
             " && document.getElementById('link').dataset.transport === 'websocket'")
WATCH_TURN = """(() => {
  window.turn = {};
  const list = document.getElementById('transcript');
  const state = document.getElementById('state');
  new MutationObserver(() => {
    const b = list.querySelector('.bubble.assistant:last-child');
    if (b && !b.classList.contains('thinking') && !turn.words) turn.words = performance.now();
  }).observe(list, {subtree: true, childList: true, characterData: true, attributes: true});
  new MutationObserver(() => {
    if (state.dataset.state === 'speaking' && !turn.voice) turn.voice = performance.now();
    if (state.dataset.state === 'idle' && turn.voice) turn.done = performance.now();
  }).observe(state, {attributes: true});
  return true;
})()"""


def kind(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "gone"
    if b"sidecar.engine" in cmd:
        return "engine"
    return "webview" if any(helper in cmd for helper in HELPERS) else "shell"


def cpu_shares(parts: dict[str, set[int]], seconds: float) -> dict[str, float]:
    """Each part's CPU over the next `seconds`, in % of a core."""
    before, t = {part: cpu_seconds(pids) for part, pids in parts.items()}, time.monotonic()
    time.sleep(seconds)
    took = time.monotonic() - t
    return {part: (cpu_seconds(pids) - before[part]) / took * 100 for part, pids in parts.items()}


def when_each(conditions: dict[str, Callable[[], object]], t0: float, timeout: float) -> dict[str, float]:
    """How long after `t0` each condition was first seen true, polling them side by side (one waited for after
    the other would count the first one's time in the second's)."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(seen) < len(conditions):
        for name, condition in conditions.items():
            if name not in seen and condition():
                seen[name] = time.monotonic() - t0
        if time.monotonic() > deadline:
            raise AssertionError(f"{', '.join(sorted(conditions.keys() - seen.keys()))} not within {timeout:g} s")
        time.sleep(0.01)
    return seen


def one_run(display: str, server: str, store: Path, env: dict[str, str], webview: str,
            spoken: tuple[str, np.ndarray]) -> dict[str, float]:
    """One launch; `spoken` is the microphone sink and what the user says into it for the spoken turn."""
    t0 = time.monotonic()
    proc, socket = launch(display, server, store, env, voice="auto", webview=webview)
    page = None
    try:
        res: dict[str, float] = {}
        wid = screen.find_window(display, "Stella", 60)
        res["window"] = time.monotonic() - t0
        page = screen.Page(socket)
        page.wait(READY, 60)
        res["ui"] = time.monotonic() - t0
        window = AppWindow(proc, display, wid, page)
        res |= when_each({"character": window.character_shown, "listening": lambda: page.eval(LISTENING)}, t0, 60)

        page.eval(WATCH_TURN)
        window.click("#message")
        screen.xdotool(display, "type", "--delay", "5", MESSAGE)
        sent = page.eval("performance.now()")
        screen.xdotool(display, "key", "Return")
        turn = page.wait("window.turn.done && window.turn", 90)
        res["first_words"] = (turn["words"] - sent) / 1000
        res["voice_starts"] = (turn["voice"] - sent) / 1000
        res["turn_done"] = (turn["done"] - sent) / 1000
        page.eval(WATCH_TURN)
        # A pause first, as a user's: right after launch her first reply can still be playing when the page
        # says it is over (a stream just opened on a null sink plays its first block up to 2 s late, and
        # the page goes by when it was due), and "Hey Stella" over her voice is taken for her echo.
        time.sleep(2.0)
        play(env, *spoken)
        page.wait("window.turn.done && window.turn", 90)
        turn_over = time.monotonic()

        family = descendants(proc.pid)
        parts = {part: {p for p in family if kind(p) == part} for part in PARTS}
        for part, pids in parts.items():
            res[f"rss_{part}"] = rss_kib(pids) / 1024
        res["pss_total"] = pss_kib(family) / 1024
        time.sleep(2)  # let the turn's work settle
        res.update({f"cpu_{part}": share for part, share in cpu_shares(parts, 5.0).items()})
        time.sleep(max(0.0, turn_over + QUIET_S - time.monotonic()))
        res["pss_quiet"] = pss_kib(family) / 1024
        res.update({f"quiet_cpu_{part}": share for part, share in cpu_shares(parts, QUIET_CPU_S).items()})
        window.close_and_check_nothing_is_left()
        return res
    finally:
        abandon(proc, page)


ROWS = [
    ("window", "launch → window visible", "s"),
    ("ui", "launch → UI ready (outfits, character drawn, server reached)", "s"),
    ("character", "launch → character on screen", "s"),
    ("listening", "launch → ready to listen (voice loop + link up)", "s"),
    ("first_words", "typed message sent → first words of the reply on screen", "s"),
    ("voice_starts", "typed message sent → her voice starts", "s"),
    ("turn_done", "typed message sent → she has finished speaking", "s"),
    ("rss_shell", "memory after a spoken turn: shell (Python, the toolkit, the web view's UI side)", "MiB"),
    ("rss_webview", "memory after a spoken turn: the web view's helper processes", "MiB"),
    ("rss_engine", "memory after a spoken turn: engine (voice models, link, store)", "MiB"),
    ("rss_total", "memory after a spoken turn: whole app", "MiB"),
    ("pss_total", "memory after a spoken turn: whole app, shared pages counted once (PSS)", "MiB"),
    ("pss_quiet", "memory once the conversation has gone quiet (20 s after the spoken turn): whole app, PSS", "MiB"),
    ("cpu_shell", "idle CPU between turns (2-7 s after): shell (toolkit, compositing the window) (% of a core)", "%"),
    ("cpu_webview", "idle CPU between turns: the web view's helper processes (the page, its WebGL2 character) "
                    "(% of a core)", "%"),
    ("cpu_engine", "idle CPU between turns: engine, listening (microphone, VAD; the speaker still up) (% of a core)",
     "%"),
    ("cpu_total", "idle CPU between turns: whole app (% of a core)", "%"),
    ("quiet_cpu_shell", "idle CPU once quiet (20-30 s after the turn: the app waiting for its name): shell "
                        "(% of a core)", "%"),
    ("quiet_cpu_webview", "idle CPU once quiet: the web view's helper processes (% of a core)", "%"),
    ("quiet_cpu_engine", "idle CPU once quiet: engine, listening (the speaker resting) (% of a core)", "%"),
    ("quiet_cpu_total", "idle CPU once quiet: whole app (% of a core)", "%"),
]


def report(runs: dict[str, list[dict[str, float]]], loads: tuple[str, str]) -> str:
    for r in (r for by_view in runs.values() for r in by_view):
        r["rss_total"] = sum(r[f"rss_{part}"] for part in PARTS)
        r["cpu_total"] = sum(r[f"cpu_{part}"] for part in PARTS)
        r["quiet_cpu_total"] = sum(r[f"quiet_cpu_{part}"] for part in PARTS)
    count = len(next(iter(runs.values())))
    lines = [
        "### Desktop app (tests/bench/bench_desktop.py)",
        "",
        f"Machine: 2-core VM, no GPU, Xvfb (WebGL2 and compositing in software, Mesa llvmpipe); PulseAudio null "
        f"sinks as the sound card; gemma3 270M on llama-server through the gateway. `stella run --voice auto` "
        f"launched {count} times per web view on one store, alternating (the first run creates the store). "
        f"`uptime` at the start: {loads[0]}; at the end: {loads[1]}.",
        "",
        "| measure | " + " | ".join(f"{WEBVIEWS[v]} median (runs)" for v in runs) + " |",
        "| --- |" + " ---: |" * len(runs),
    ]
    for key, label, unit in ROWS:
        fmt = (lambda v: f"{v:.2f}") if unit == "s" else (lambda v: f"{v:.0f}")
        cells = []
        for by_view in runs.values():
            values = [r[key] for r in by_view]
            cells.append(f"{fmt(statistics.median(values))} {unit} ({', '.join(fmt(v) for v in values)})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Ready to listen is bounded by the engine's start beside the window's (Python and its imports, "
              "then its channel, which the page reaches), by loading what listening needs (whisper tiny.en and "
              "silero VAD, while the sound devices are looked up) and by the microphone's first sound; piper loads "
              "in the background right after, and the n-best check's CTranslate2 copy of whisper at the first check "
              "that needs it. The microphone is a null sink with a recorder kept on it, as a real microphone "
              "delivers at once: a null sink nobody records from gives a new recorder its first sound 0-2 s later "
              "(tests/services.py). The idle CPU of the "
              "window is the character drawn and composited in software (on software GL she stands still between "
              "blinks, the page asleep; full rate only while blinking, talking or changing outfit; with a GPU, "
              "30 frames a second with the idle breath, at a small cost). The engine's is the "
              "always-on listening. The whole app's RSS counts the pages its processes share (libraries, the "
              "engine's model files) once per process; PSS shares them out.", ""]
    return "\n".join(lines)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="stella-bench-")))
        llama = services.llama_server(tmp)
        llama.start()
        stack.callback(llama.stop)
        gateway = stack.enter_context(running_gateway(llama.url, tmp / "gateway", llama.env))
        xvfb = stack.enter_context(services.Xvfb())
        keyring = stack.enter_context(services.SecretService())
        sound = stack.enter_context(services.PulseAudio(mic_awake=True))  # a microphone, not a cold null sink
        env = {**os.environ, **keyring.env, **sound.env, "HOME": os.environ["HOME"], "STELLA_CHAT__TEMPERATURE": "0"}
        piper = Piper()
        spoken = (sound.mic, concat(silence(0.4), piper("Hey Stella."), silence(0.3), piper(QUESTION), silence(0.4)))
        started = uptime()
        runs: dict[str, list[dict[str, float]]] = {view: [] for view in WEBVIEWS}
        for i in range(args.runs):
            for view, done in runs.items():
                done.append(one_run(xvfb.display, gateway.url, tmp / "stella.db", env, view, spoken))
                print(f"run {i + 1} {view}: " + ", ".join(f"{k} {v:.2f}" for k, v in done[-1].items()), flush=True)
        text = report(runs, (started, uptime()))
    print(text)
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
