"""Barge-in against Stella's own echo: false and missed barge-ins, and how fast playback stops.

    .venv/bin/python -m tests.bench.bargein_echo [--replies 24] [--talk-every 4] [--gains -20,-12,-6]

For each speaker -> microphone coupling (gain dB, 50 ms delay) one simulated conversation
(tests/voice/simulate.py): scripted replies spoken by piper and echoed into the input, the user
(piper, peak 0.5) talking over every `talk-every`-th reply. Real time, so the stop latency
(user's first sound -> silence in out.wav) includes the pipeline's real delays.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from sidecar.config import AppConfig, VoiceConfig
from sidecar.loop import Engines
from tests.voice.simulate import simulate
from tests.voice.speech import Piper


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--replies", type=int, default=24)
    p.add_argument("--talk-every", type=int, default=4)
    p.add_argument("--gains", default="-20,-12,-6")
    args = p.parse_args()
    engines = Engines.load(VoiceConfig())
    piper = Piper()
    print("| echo gain | replies | talked over | false barge-ins | missed | stop latency median / max (ms) |")
    print("|---|---|---|---|---|---|")
    for gain in (float(g) for g in args.gains.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            o = simulate(AppConfig(), engines, piper, Path(folder), replies=args.replies,
                         talk_every=args.talk_every, echo=(50.0, gain))
        hits = [ms for ms, onset in zip(o.stop_ms, o.onsets, strict=True) if onset not in o.missed]
        latency = f"{np.median(hits):.0f} / {max(hits):.0f}" if hits else "-"
        print(f"| {gain:+.0f} dB | {o.replies} | {len(o.onsets)} | {len(o.false)} | {len(o.missed)} | {latency} |")


if __name__ == "__main__":
    main()
