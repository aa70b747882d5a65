"""Barge-in against Stella's own echo in a room: false and missed barge-ins, how fast playback
stops, and how well what the user says over her is transcribed.

    .venv/bin/python -m tests.bench.bargein_echo [--replies 34] [--talk-every 3] [--gains -20,-12,-6,0]
                                                 [--delay 50] [--rt60 250] [--clips held-out]

For each speaker -> microphone coupling (the room impulse's energy, `--delay` ms to the direct
sound, a reverb tail of `--rt60` ms) one simulated real-time conversation
(tests/voice/simulate.py): scripted replies spoken by piper and echoed into the input through
the room, the user talking over every `talk-every`-th reply with the next held-out clip (piper's
joe — Stella's own voice — and espeak-ng voices; the tuning clips are never measured here).
Stop latency: the user's first sound -> silence in out.wav. Word accuracy (1 - word errors /
words; a missed talk-over scores all its words wrong), two ways: each talk-over transcript
against the same audio transcribed in silence (its best of a few readings: see
tests/voice/simulate.py); and against the written words, relative to the silence transcripts'
own accuracy on them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from sidecar.config import AppConfig, VoiceConfig
from sidecar.voice_loop import LoadedModels
from tests.voice.simulate import HELD_OUT, TUNING, Clip, errors_over_her, in_silence, simulate
from tests.voice.speech import Piper, word_errors, words


def accuracy(heard: list[tuple[Clip, list[str], str]]) -> str:
    """Talk-over word accuracy, two ways, from (clip, the readings of its audio in silence, what was
    heard over her voice): against the silence readings, and against the written words as a share
    of what the first silence reading gets right (whisper's own slips on a clip, in silence, are
    not her echo's)."""
    said = sum(len(words(silent[0])) for _, silent, _ in heard)
    if not said:
        return "-"
    vs_silence = max(0.0, 1 - sum(errors_over_her(silent, over) for _, silent, over in heard) / said)
    written = sum(len(words(c.text)) for c, _, _ in heard)
    alone = max(0.0, 1 - sum(word_errors(c.text, silent[0]) for c, silent, _ in heard) / written)
    over_her = max(0.0, 1 - sum(word_errors(c.text, over) for c, _, over in heard) / written)
    return f"{vs_silence:.0%} / {over_her / alone:.0%}" if alone else f"{vs_silence:.0%} / -"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--replies", type=int, default=34)
    p.add_argument("--talk-every", type=int, default=3)
    p.add_argument("--gains", default="-20,-12,-6,0")
    p.add_argument("--delay", type=float, default=50.0)
    p.add_argument("--rt60", type=float, default=250.0)
    p.add_argument("--clips", choices=["held-out", "tuning"], default="held-out")
    args = p.parse_args()
    clips = HELD_OUT if args.clips == "held-out" else TUNING
    began, load = time.monotonic(), os.getloadavg()
    engines = LoadedModels.load(VoiceConfig())
    piper = Piper()
    print(f"load average at the start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; {args.clips} clips")
    print("| echo | replies heard in full | talked over | false barge-ins | missed | "
          "stop latency median / max (ms) | talk-over word accuracy: vs silence transcripts / vs the words | "
          "microphone path behind real time, median / p99 / max (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for gain in (float(g) for g in args.gains.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            o = simulate(AppConfig(), engines, piper, Path(folder), replies=args.replies, talk_every=args.talk_every,
                         echo=(args.delay, gain, args.rt60), clips=clips)
        hits = [ms for ms, onset in zip(o.stop_ms, o.onsets, strict=True) if onset not in o.missed]
        latency = f"{np.median(hits):.0f} / {max(hits):.0f}" if hits else "-"
        reference = in_silence(engines, o.spoken)
        heard = [(c, reference[k], o.heard.get(k, "")) for k, c in enumerate(o.said)]
        print(f"| {gain:+.0f} dB | {o.in_full} | {len(o.onsets)} | {len(o.false)} | {len(o.missed)} | {latency} | "
              f"{accuracy(heard)} | {o.lag()} |", flush=True)
        for k, c in enumerate(o.said):
            print(f"    {c.voice}: {reference[k][0]!r} -> {o.heard.get(k, '(no turn)')!r}")
    load = os.getloadavg()
    print(f"wall time {time.monotonic() - began:.0f} s; load average at the end {load[0]:.2f} / {load[1]:.2f} / "
          f"{load[2]:.2f}")


if __name__ == "__main__":
    main()
