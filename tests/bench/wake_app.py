"""The wake word in the real app: held-out wake words and other speech said into its microphone.

Run: ``.venv/bin/python tests/bench/wake_app.py [--voices 8] [--other 100] [--server URL]``. It writes
``tests/bench/results/wake-app.md`` and prints the figures (about 20 minutes with the defaults).

`stella run` as a user starts it (tests/desktop/app_window.py: `user_desktop`), with its defaults (the
phrase engine, "hey stella", nobody enrolled). The utterances are the held-out set's
(tests/voice/wake_corpus.py: never used for tuning or training), cut from its streams as they were
generated: each chosen voice's wake utterances, clean and at 10 dB SNR, and `--other` utterances of its
other speech spread over every stream (conversations, TV lines over their beds, requests, look-alikes),
each said into the microphone sink on its own. Whether she woke is what Settings' "try it" note says
after each (the wake check the engine sends the page); the follow-up window is 1 s, so each utterance is
judged on its own. The bench on files (wake_rates.py) counts the same decisions on every utterance of
the set; this one checks that the app, through its real audio devices, makes them too.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.bench.wake_enrol_app import Tally, click, cut, publish, say, spread  # noqa: E402
from tests.desktop.app_window import user_desktop  # noqa: E402
from tests.voice import wake_corpus  # noqa: E402

RESULTS = REPO / "tests" / "bench" / "results" / "wake-app.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", type=int, default=8, help="how many of the held-out set's voices say her name")
    parser.add_argument("--other", type=int, default=100, help="how many utterances of its other speech")
    parser.add_argument("--server", help="a running gateway instead of the embedded one")
    args = parser.parse_args()
    started, load = time.time(), os.getloadavg()
    corpus = wake_corpus.load(("heldout",))
    wakes = corpus.wake["heldout"]["phrase"]
    voices = spread(list(dict.fromkeys(s.voice for s in wakes.spans)), args.voices)
    others = spread([(stream, span) for stream in corpus.other["heldout"] for span in stream.spans], args.other)
    tallies = {c: Tally() for c in ("clean", "noisy", "other")}
    with contextlib.ExitStack() as stack:
        desktop = user_desktop(stack, args.server, {"STELLA_VOICE__WAKE_WINDOW_S": "1",
                                                    "STELLA_CHAT__MAX_TOKENS": "8"})
        click(desktop, "open-settings")
        for condition in ("clean", "noisy"):
            pcm = wakes.pcm(condition)
            for span in (s for s in wakes.spans if s.voice in voices):
                woke, shown = say(desktop, cut(pcm, span))
                tallies[condition].add(woke)
                if not woke:
                    tallies[condition].misses.append(f"{condition}: {span.voice} \"{span.text}\" — {shown}")
            print(f"{condition}: woke {tallies[condition].row()}", flush=True)
        pcms = {stream.name: stream.pcm("clean") for stream in {s.name: s for s, _ in others}.values()}
        for stream, span in others:
            woke, shown = say(desktop, cut(pcms[stream.name], span))
            tallies["other"].add(woke)
            if woke:
                tallies["other"].misses.append(f"other ({span.scene}): {span.voice} \"{span.text}\" — {shown}")
        print(f"other speech: woke {tallies['other'].row()}", flush=True)
    write(args, voices, tallies, sum(s.end - s.start for _, s in others), time.time() - started, load[0])
    return 0


def write(args: argparse.Namespace, voices: list[str], tallies: dict[str, Tally], other_s: float, wall: float,
          load: float) -> None:
    clean, noisy, other = tallies["clean"], tallies["noisy"], tallies["other"]
    lines = [
        "## The wake word in the real app (tests/bench/wake_app.py)",
        "",
        f"Command: `.venv/bin/python tests/bench/wake_app.py --voices {args.voices} --other {args.other}`. Machine: "
        f"{os.cpu_count()} cores, {platform.machine()}; load {load:.1f} at the start; wall time {wall:.0f} s. "
        f"Held-out set (folder {wake_corpus.FOLDER['heldout']}), voices: {', '.join(voices)}. The app's defaults "
        "(phrase engine, nobody enrolled); each utterance said into the microphone sink on its own.",
        "",
        "| | said | missed | woke her |",
        "| --- | ---: | ---: | ---: |",
        f"| wake words, clean | {clean.said} | {clean.said - clean.woke} | {clean.woke} |",
        f"| wake words, 10 dB SNR | {noisy.said} | {noisy.said - noisy.woke} | {noisy.woke} |",
        f"| other speech ({other_s / 60:.1f} min) | {other.said} | — | {other.woke} |",
        "",
        "Misses, and other speech that woke her, with the meter's figures:",
        "",
        *[f"- {m}" for t in (clean, noisy, other) for m in t.misses],
    ]
    publish(lines, RESULTS)


if __name__ == "__main__":
    sys.exit(main())
