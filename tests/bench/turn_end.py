"""Endpointing benchmark: a fixed hang-over against the Smart Turn model, both sides of the trade.

Run: ``.venv/bin/python tests/bench/turn_end.py [--no-write]``. It prints the figures and writes
them to ``tests/bench/results/turn_end.md``.

* **Latency** on complete questions: true end of the words -> end of the turn decided (the
  model's own time included: it runs on the real `Endpointer`, real silero VAD, real model).
* **Cut-offs** on thoughts with a pause inside ("I was wondering … whether penguins can fly"):
  the share of them split into two turns, i.e. the user cut off mid-thought.

Several voices (piper joe at two speeds, four espeak-ng accents/voices). The settings are tuned
on one set of texts (`TUNING`) and reported on another (`HELD_OUT`) none of the tuning used.
The stream is read faster than real time; the model's answer applies where it was asked, so the
figures are those of a live microphone plus the model's measured time.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from remote_api.shared.models.provision import Models  # noqa: E402
from sidecar.config import VoiceConfig  # noqa: E402
from sidecar.frames import UtteranceFrame  # noqa: E402
from sidecar.voice.audio import RATE  # noqa: E402
from sidecar.voice.turn_end import SmartTurn  # noqa: E402
from sidecar.voice.vad import Endpointer, SileroVad  # noqa: E402
from tests.voice.harness import run  # noqa: E402
from tests.voice.speech import concat, silence, voices  # noqa: E402
from tests.voice.test_turn_end import frames  # noqa: E402

OUT = Path(__file__).parent / "results" / "turn_end.md"


@dataclass(frozen=True)
class Texts:
    complete: tuple[str, ...]
    paused: tuple[tuple[str, str], ...]  # (before the pause, after it)


TUNING = Texts(
    complete=("What is the capital of France?", "How are you today?", "Can you tell me a joke?",
              "What should I cook for dinner?", "Tell me about the moon.", "Why is the sky blue?"),
    paused=(("I was wondering", "whether penguins can fly."), ("Can you tell me", "how far away the moon is?"),
            ("My favourite thing to do is", "reading by the fire."), ("So what I want to know is", "why cats purr.")),
)
HELD_OUT = Texts(
    complete=("Where do penguins live?", "Do you like music?", "How tall is a giraffe?", "What is two plus two?",
              "Can you recommend a good book?", "What time do you wake up?"),
    paused=(("I think that maybe", "we should go for a walk."), ("Could you remind me", "to call my sister tomorrow?"),
            ("The thing I keep forgetting is", "where I put my keys."), ("What I really wanted was", "a cup of tea.")),
)
PAUSES_S = (0.5, 0.8)  # mid-thought pauses: both longer than the fixed hang-over


LEAD, TAIL = 0.5, 2.0


def final_utterances(config: VoiceConfig, vad: SileroVad, model: SmartTurn | None, audio: np.ndarray):
    vad.reset()
    endpointer = Endpointer(config, vad, turn_model=model if config.endpoint == "smart_turn" else None)
    return [f for f in run(frames(audio), [endpointer], timeout=120)
            if isinstance(f, UtteranceFrame) and f.final]


def measure(config: VoiceConfig, vad: SileroVad, model: SmartTurn, complete: list[np.ndarray],
            paused: list[tuple[np.ndarray, float, np.ndarray]]) -> dict:
    delays, missed = [], 0
    for clip in complete:
        found = final_utterances(config, vad, model, concat(silence(LEAD), clip, silence(TAIL)))
        if not found:
            missed += 1
            continue
        delays.append((found[-1].t - (LEAD + len(clip) / RATE)) * 1000)
    cut = 0
    for head, pause, tail in paused:
        found = final_utterances(config, vad, model, concat(silence(LEAD), head, silence(pause), tail, silence(TAIL)))
        head_end = LEAD + len(head) / RATE
        cut += any(u.end < head_end + pause / 2 for u in found) or len(found) != 1
    return {"delays": delays, "missed": missed, "cut": cut, "paused": len(paused)}


def clips(texts: Texts, make) -> tuple[list[np.ndarray], list[tuple[np.ndarray, float, np.ndarray]]]:
    complete = [say(t) for say in make.values() for t in texts.complete]
    # each half said on its own, as a speaker who stops mid-thought; no comma (no cue in the text)
    paused = [(say(a), p, say(b)) for say in make.values() for a, b in texts.paused for p in PAUSES_S]
    return complete, paused


def row(name: str, r: dict) -> str:
    d = r["delays"]
    return (f"| {name} | {np.percentile(d, 50):.0f} | {np.percentile(d, 90):.0f} | {statistics.mean(d):.0f} | "
            f"{r['cut']}/{r['paused']} ({r['cut'] / r['paused']:.0%}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    make = voices()
    vad, model = SileroVad(), SmartTurn(Models().path("smart-turn"))
    load_before = os.getloadavg()[0]
    candidates = {
        "silence, hang-over 300 ms": VoiceConfig(endpoint="silence"),
        **{f"smart_turn, threshold {th}, wait only below {wb}, ask at {ask} ms": VoiceConfig(
            endpoint="smart_turn", turn_threshold=th, turn_wait_below=wb, turn_ask_ms=ask)
           for th in (0.5, 0.7) for wb in (0.05, 0.15, th) for ask in (100, 150)},
    }
    header = ["| endpointing | complete: delay p50 ms | p90 ms | mean ms | mid-thought pauses cut off |",
              "| --- | ---: | ---: | ---: | ---: |"]
    tuning = clips(TUNING, make)
    lines = ["### Tuning set", "", *header]
    for name, config in candidates.items():
        lines.append(row(name, measure(config, vad, model, *tuning)))
        print(lines[-1], flush=True)
    held = clips(HELD_OUT, make)
    best = VoiceConfig(endpoint="smart_turn")  # the settings the tuning chose
    lines += ["", "### Held-out set (texts the tuning never saw)", "", *header]
    for name, config in (("silence, hang-over 300 ms", VoiceConfig(endpoint="silence")),
                         (f"smart_turn (threshold {best.turn_threshold}, wait only below {best.turn_wait_below}, "
                          f"ask at {best.turn_ask_ms} ms, again every {best.turn_retry_ms} ms, "
                          f"at most {best.turn_max_ms} ms)", best)):
        lines.append(row(name, measure(config, vad, model, *held)))
        print(lines[-1], flush=True)
    n_complete, n_paused = len(held[0]), len(held[1])
    text = "\n".join([
        "## Endpointing (tests/bench/turn_end.py)",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}; load average "
        f"{load_before:.1f} before / {os.getloadavg()[0]:.1f} after. Voices: {', '.join(make)}. Per set: "
        f"{n_complete} complete questions and {n_paused} thoughts with a pause of "
        f"{' or '.join(f'{p * 1000:.0f}' for p in PAUSES_S)} ms inside. Delay: true end of the words -> end of "
        "turn decided (VAD lag and the model's time included). Command: `.venv/bin/python tests/bench/turn_end.py`.",
        "",
        *lines,
        "",
    ])
    print(text)
    if not args.no_write:
        OUT.write_text(text)


if __name__ == "__main__":
    main()
