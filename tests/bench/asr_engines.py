"""ASR engines benchmark: whisper.cpp (f16, window >= 15 s) against CTranslate2 (int8, the
utterance's own window), on the same tiny.en weights: time per utterance and word errors.

Run: ``.venv/bin/python tests/bench/asr_engines.py [--no-write]``; writes
``tests/bench/results/asr_engines.md``. Six voices (piper joe at two speeds, four espeak-ng voices),
each utterance prompted with "Hey Stella." as the voice loop does. The CTranslate2 window
(`asr_ct2.MIN_FRAMES`) was chosen on `TUNING`; `HELD_OUT` is what the choice is judged on.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from remote_api.shared.models.provision import Models  # noqa: E402
from sidecar.voice.asr import Transcriber  # noqa: E402
from sidecar.voice.asr_ct2 import CT2Transcriber  # noqa: E402
from tests.voice.speech import concat, silence, voices, word_errors, words  # noqa: E402

OUT = Path(__file__).parent / "results" / "asr_engines.md"
TUNING = ["What is the capital of France?", "Can you tell me a joke?", "What should I cook for dinner?",
          "Where do penguins live?", "How tall is a giraffe?", "Do you like music?", "Tell me about the moon.",
          "Why is the sky blue?"]
HELD_OUT = ["Could you turn on the lights in the kitchen?", "What is your favourite animal?",
            "How many legs does a spider have?", "Please remind me to buy bread.", "What did you do yesterday?",
            "Is it going to rain this afternoon?", "Tell me a story about a dragon.", "Which planet is the biggest?"]


def measure(transcriber, clips: list[tuple[str, np.ndarray]]) -> tuple[list[float], float]:
    transcriber(clips[0][1])  # first run loads caches
    times, errors, total = [], 0, 0
    for text, clip in clips:
        began = time.perf_counter()
        heard = transcriber(clip, None, "Hey Stella.")
        times.append((time.perf_counter() - began) * 1000)
        errors += word_errors(text, heard)
        total += len(words(text))
    return times, errors / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ct2-windows", default="4,8",
                        help="CTranslate2's shortest encoder windows to compare, seconds (comma-separated)")
    args = parser.parse_args()
    make = voices()
    sets = {name: [(t, concat(say(t), silence(0.1))) for say in make.values() for t in texts]
            for name, texts in (("tuning", TUNING), ("held-out", HELD_OUT))}
    engines = {"whisper.cpp f16 (window >= 768 frames)": Transcriber(Models().path("whisper-tiny.en"), args.threads)}
    for seconds in (float(w) for w in args.ct2_windows.split(",")):
        engine = CT2Transcriber(Models().path("whisper-tiny.en-ct2"), args.threads, min_window_s=seconds)
        engines[f"CTranslate2 int8 (window >= {engine.min_frames} mel frames)"] = engine
    load = os.getloadavg()[0]
    lines = ["| engine | set | utterances | time p50 ms | p90 ms | word error rate |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for name, engine in engines.items():
        for set_name, clips in sets.items():
            times, wer = measure(engine, clips)
            lines.append(f"| {name} | {set_name} | {len(clips)} | {statistics.median(times):.0f} | "
                         f"{np.percentile(times, 90):.0f} | {wer:.1%} |")
            print(lines[-1], flush=True)
    text = "\n".join([
        "## ASR engines (tests/bench/asr_engines.py)",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}; load average "
        f"{load:.1f} before / {os.getloadavg()[0]:.1f} after; {args.threads} threads. Voices: {', '.join(make)}; "
        "clips 1-3.5 s, prompt \"Hey Stella.\". Command: `.venv/bin/python tests/bench/asr_engines.py`.",
        "",
        *lines,
        "",
    ])
    print(text)
    if not args.no_write:
        OUT.write_text(text)


if __name__ == "__main__":
    main()
