"""Personal enrolment in the real app: taught through Settings, then her name said into the microphone.

Run: ``.venv/bin/python tests/bench/wake_enrol_app.py [--voices 6] [--server URL]``. It writes
``tests/bench/results/wake-enrol-app.md`` and prints the figures (about 2 minutes a voice).

`stella run` as a user starts it (tests/desktop/app_window.py: `user_desktop`), the phrase engine
("hey stella", the default). The utterances are the held-out wake set's (tests/voice/wake_corpus.py:
never used for tuning or training; folder v6 when the README's figures were measured), cut from its clean
and 10 dB SNR streams. For each of `--voices` voices spread over the set, as its user would:

1. untaught (Settings → Forget my voice, if one was taught): its last three wake utterances, clean
   and noisy, said into the microphone sink: which woke her;
2. Settings → Teach her my voice, and its first three wake utterances said a moment apart;
3. taught: the same six utterances again, and one wake utterance of each other chosen voice.

Whether she woke is what the window's "try it" note says after each utterance (the wake check the
engine sends the page; its meter's figures are kept for the misses). The follow-up window is 1 s
(`STELLA_VOICE__WAKE_WINDOW_S`), so each utterance is judged on its own name, and the bench waits
for her to be idle again (a woken utterance gets its short answer) before the next one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from sidecar.voice.audio import RATE  # noqa: E402
from tests.desktop.app_window import UserDesktop, user_desktop  # noqa: E402
from tests.sound import play  # noqa: E402
from tests.voice import wake_corpus  # noqa: E402
from tests.voice.speech import concat, silence  # noqa: E402
from tests.voice.wake_corpus import Span  # noqa: E402

RESULTS = REPO / "tests" / "bench" / "results" / "wake-enrol-app.md"
TAKES = 3
NOTE = "document.getElementById('wake-try-note').textContent"
METER = "document.getElementById('wake-meter').title"
ENROL_NOTE = "document.getElementById('enrol-note').textContent"
IDLE = "document.getElementById('state').dataset.state === 'idle'"
FORGET_SHOWN = "!document.getElementById('enrol-forget').hidden"
LISTENING = "document.getElementById('wake').dataset.voice === 'ready'"
T = TypeVar("T")


def publish(lines: list[str], path: Path) -> None:
    """Print the report and write it to `path`."""
    text = "\n".join(lines) + "\n"
    print(text)
    path.write_text(text, encoding="utf-8")


def spread(items: list[T], n: int) -> list[T]:
    """`n` of the items, evenly spaced from the first."""
    return items[::max(1, len(items) // n)][:n]


def click(desktop: UserDesktop, element: str) -> None:
    desktop.page.eval(f"(() => {{ document.getElementById('{element}').click(); return true; }})()")


@dataclass
class Tally:
    said: int = 0
    woke: int = 0
    misses: list[str] = field(default_factory=list)  # what was missed, with the meter's figures

    def add(self, woke: bool) -> None:
        self.said, self.woke = self.said + 1, self.woke + woke

    def row(self) -> str:
        return f"{self.woke}/{self.said}" if self.said else "-"


def cut(pcm: np.ndarray, span: Span) -> np.ndarray:
    """The utterance (float, as `play` takes it) with a little of its stream either side (the noisy
    stream's noise too)."""
    return pcm[max(0, int((span.start - 0.5) * RATE)):int((span.end + 0.8) * RATE)].astype(np.float32) / 32768


def say(desktop: UserDesktop, audio: np.ndarray) -> tuple[bool, str]:
    """Say it into the microphone; whether she woke and the meter's figures (once she is idle again)."""
    desktop.page.eval(f"(() => {{ {NOTE} = ''; return true; }})()")
    play(desktop.sound, desktop.pulse.mic, concat(silence(0.3), audio, silence(1.0)), timeout=60)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not desktop.page.eval(NOTE):
        time.sleep(0.1)
    note = desktop.page.eval(NOTE) or "(no wake check)"
    desktop.page.wait(IDLE, 60)
    return note.startswith("She heard her name"), f"{note} [{desktop.page.eval(METER)}]"


def forget(desktop: UserDesktop) -> None:
    """Settings → Forget my voice, if one was taught (the pipeline is rebuilt without it)."""
    if desktop.page.eval(FORGET_SHOWN):
        click(desktop, "enrol-forget")
        desktop.page.wait(f"!({FORGET_SHOWN})", 10)
        desktop.page.wait(LISTENING, 60)


def teach(desktop: UserDesktop, takes: list[np.ndarray]) -> str:
    """Settings → Teach her my voice, the takes a moment apart; the enrolment note at the end."""
    click(desktop, "enrol-start")
    desktop.page.wait(f"{ENROL_NOTE}.includes('0 of 3 heard')", 10)
    play(desktop.sound, desktop.pulse.mic, concat(silence(0.5), *(concat(t, silence(1.5)) for t in takes)),
         timeout=120)
    desktop.page.wait(f"!{ENROL_NOTE}.startsWith('Say')", 60)  # done, or unheard (half a minute)
    return desktop.page.eval(ENROL_NOTE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", type=int, default=6, help="how many of the held-out set's voices")
    parser.add_argument("--server", help="a running gateway instead of the embedded one")
    args = parser.parse_args()
    started, load = time.time(), os.getloadavg()
    stream = wake_corpus.load(("heldout",)).wake["heldout"]["phrase"]
    pcm = {condition: stream.pcm(condition) for condition in ("clean", "noisy")}
    voices = spread(list(dict.fromkeys(s.voice for s in stream.spans)), args.voices)
    spans = {v: [s for s in stream.spans if s.voice == v] for v in voices}
    before = {c: Tally() for c in ("clean", "noisy")}
    after = {c: Tally() for c in ("clean", "noisy", "others")}
    not_taught: list[str] = []
    with contextlib.ExitStack() as stack:
        desktop = user_desktop(stack, args.server, {"STELLA_VOICE__WAKE_WINDOW_S": "1",
                                                    "STELLA_CHAT__MAX_TOKENS": "8"})
        click(desktop, "open-settings")
        for voice in voices:
            tests = spans[voice][TAKES:]
            forget(desktop)  # the voice before this one's
            for condition in ("clean", "noisy"):
                for s in tests:
                    woke, shown = say(desktop, cut(pcm[condition], s))
                    before[condition].add(woke)
            note = teach(desktop, [cut(pcm["clean"], s) for s in spans[voice][:TAKES]])
            print(f"{voice}: {note}", flush=True)
            if not note.startswith("She knows your voice"):
                not_taught.append(voice)
                continue
            plan = [(c, s) for c in ("clean", "noisy") for s in tests]
            plan += [("others", spans[v][TAKES]) for v in voices if v != voice]
            for condition, s in plan:
                woke, shown = say(desktop, cut(pcm["clean" if condition == "others" else condition], s))
                after[condition].add(woke)
                if woke == (condition == "others"):
                    after[condition].misses.append(f"{voice} taught, {condition}: {s.voice} \"{s.text}\" — {shown}")
            print(f"  taught: clean {after['clean'].row()}, noisy {after['noisy'].row()}, others "
                  f"{after['others'].row()} so far", flush=True)
    write(args, voices, not_taught, before, after, time.time() - started, load[0])
    return 0


def write(args: argparse.Namespace, voices: list[str], not_taught: list[str], before: dict[str, Tally],
          after: dict[str, Tally], wall: float, load: float) -> None:
    def missed(t: Tally) -> str:
        return f"{t.said - t.woke}/{t.said}" if t.said else "-"

    lines = [
        "## Personal enrolment in the real app (tests/bench/wake_enrol_app.py)",
        "",
        f"Command: `.venv/bin/python tests/bench/wake_enrol_app.py --voices {args.voices}`. Machine: "
        f"{os.cpu_count()} cores, {platform.machine()}; load {load:.1f} at the start; wall time {wall:.0f} s. "
        f"Held-out voices (set {wake_corpus.FOLDER['heldout']}): {', '.join(voices)}; "
        f"taught: {len(voices) - len(not_taught)}"
        + (f" (not: {', '.join(not_taught)} — no take reached the model's floor in half a minute)" if not_taught
           else "") + ".",
        "",
        "| | missed clean | missed 10 dB SNR | other voices' wake words waking her |",
        "| --- | ---: | ---: | ---: |",
        f"| untaught (the same voices, before) | {missed(before['clean'])} | {missed(before['noisy'])} | — |",
        f"| taught | {missed(after['clean'])} | {missed(after['noisy'])} | {after['others'].row()} |",
        "",
        "Misses (and other voices that woke her), with the meter's figures:",
        "",
        *[f"- {m}" for c in ("clean", "noisy", "others") for m in after[c].misses],
    ]
    publish(lines, RESULTS)


if __name__ == "__main__":
    sys.exit(main())
