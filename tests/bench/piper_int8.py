"""Piper's voice with int8 convolution weights against the published float32 one: memory, speed, and how much
the voice changes — measured against how much piper's own voice changes from one run to the next.

Run: ``.venv/bin/python tests/bench/piper_int8.py [--no-write]``; writes ``tests/bench/results/piper_int8.md``.

- memory: the process's resident set after loading each voice, and after a sentence (one process each);
- speed: each voice's time per sentence, the two alternated, one intra-op thread (the app's setting);
- change: each sentence made without piper's noise (noise_scale 0, noise_w 0, so a run is deterministic) by
  both voices; the log-mel spectra aligned by dynamic time warping (the durations may move by a frame), their
  mean absolute difference in dB. The yardstick: the same float32 voice as the app runs it (with its noise)
  against its own noiseless run — the change a listener already hears between two runs of one sentence;
- intelligibility: whisper base's word errors on both voices as the app runs them (with noise).

The sentences were written for this bench (no tuning was done on them: the conversion has no parameter).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from remote_api.shared.models.catalogue import find  # noqa: E402
from remote_api.shared.models.onnx_int8 import store_as_int8  # noqa: E402
from remote_api.shared.models.provision import Models  # noqa: E402
from remote_api.shared.models.sources import materialise  # noqa: E402
from sidecar.voice.asr_ct2 import CT2Transcriber  # noqa: E402
from sidecar.voice.audio import resample  # noqa: E402
from sidecar.voice.logmel import log_mel  # noqa: E402
from sidecar.voice.tts import PiperSynth  # noqa: E402
from tests.voice.speech import word_errors, words  # noqa: E402

OUT = Path(__file__).parent / "results" / "piper_int8.md"
SENTENCES = [
    "Good morning! Did you sleep well?", "I think the blue one suits you better.",
    "Honestly, I had never heard of that band before, but I like them now.",
    "The train to Edinburgh leaves at a quarter past nine.", "Would you like me to read it again?",
    "Thirty-seven people signed up, which is more than last year.", "Oh no, that sounds frustrating.",
    "Let's try something different: close your eyes and count to ten.", "Yes.",
    "Photosynthesis turns sunlight, water and carbon dioxide into sugar.",
    "My grandmother used to bake bread every Sunday, and the whole house smelled of it.",
    "Could you say that one more time, a little slower?", "Penguins can't fly, but they swim beautifully.",
    "It's twenty past four, so you still have time for a cup of tea.",
    "Why don't we make a list of everything you need for the trip?",
    "That's a lovely idea.", "The museum is closed on Mondays, but open late on Thursdays.",
    "I'm not sure, to be honest; what do you think?", "Seven, eight, nine, ten. Ready or not, here I come!",
    "Rain is expected in the afternoon, clearing by the evening.",
]
MEMORY_CHILD = """
import json, sys, onnxruntime, piper  # the runtime and piper's code before the first reading: only the voice counted
from pathlib import Path
from sidecar.voice.tts import PiperSynth
def rss():
    return [int(l.split()[1]) / 1024 for l in open('/proc/self/status') if l.startswith('VmRSS')][0]
before = rss()
voice = PiperSynth(Path(sys.argv[1]), threads=1)
loaded = rss() - before
voice("Honestly, I had never heard of that band before, but I like them now.")
print(json.dumps({"loaded": loaded, "after_sentence": rss() - before}))
"""


def say(voice: PiperSynth, text: str, noise: bool) -> np.ndarray:
    """`text` by the app's piper loader's voice, 16 kHz; without `noise`, deterministic (no noise in the graph)."""
    from piper import SynthesisConfig

    config = SynthesisConfig() if noise else SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    audio = np.concatenate([c.audio_float_array for c in voice._voice.synthesize(text, config)])
    return resample(audio.astype(np.float32), voice._voice.config.sample_rate, 16000)


def aligned_db(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute log-mel difference (dB) along the best alignment of the two spectrograms' frames."""
    x, y = log_mel(a).T * 40.0, log_mel(b).T * 40.0  # whisper's features are log10 power / 4: back to dB
    cost = np.abs(x[:, None, :] - y[None, :, :]).mean(axis=2)
    total = np.full((len(x) + 1, len(y) + 1), np.inf)
    steps = np.zeros((len(x) + 1, len(y) + 1), np.int32)
    total[0, 0] = 0.0
    for i in range(1, len(x) + 1):
        for j in range(max(1, i - 40), min(len(y), i + 40) + 1):  # a band: durations move by a few frames
            k = int(np.argmin((total[i - 1, j - 1], total[i - 1, j], total[i, j - 1])))
            prev = ((i - 1, j - 1), (i - 1, j), (i, j - 1))[k]
            total[i, j] = cost[i - 1, j - 1] + total[prev]
            steps[i, j] = steps[prev] + 1
    return float(total[-1, -1] / steps[-1, -1])


def memory(path: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(path)], capture_output=True, text=True,
                         check=True, cwd=REPO)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    spec = find("piper-joe")
    with tempfile.TemporaryDirectory(prefix="stella-piper-int8-") as tmp:
        published = Path(tmp)
        materialise(spec, published)  # the float32 file as its package ships it
        f32 = published / spec.files[0].name
        config = published / spec.files[1].name
        i8 = Path(tmp) / "int8.onnx"
        i8.write_bytes(f32.read_bytes())
        Path(f"{i8}.json").write_bytes(config.read_bytes())  # beside the model, where piper's loader reads it
        store_as_int8(i8)
        mem = {"float32": memory(f32), "int8": memory(i8)}
        voices = {"float32": PiperSynth(f32, threads=1), "int8": PiperSynth(i8, threads=1)}
        times: dict[str, list[float]] = {name: [] for name in voices}
        for _ in range(2):
            for text in SENTENCES:
                for name, voice in voices.items():
                    began = time.perf_counter()
                    say(voice, text, noise=True)
                    times[name].append((time.perf_counter() - began) * 1000)
        changes, yardstick = [], []
        for text in SENTENCES:
            plain = say(voices["float32"], text, noise=False)
            changes.append(aligned_db(plain, say(voices["int8"], text, noise=False)))
            yardstick.append(aligned_db(plain, say(voices["float32"], text, noise=True)))
        whisper = CT2Transcriber(Models().path("whisper-base-ct2"), 2)
        errors = {name: sum(word_errors(text, whisper(say(voice, text, noise=True))) for text in SENTENCES)
                  for name, voice in voices.items()}
    total_words = sum(len(words(t)) for t in SENTENCES)
    lines = [
        "### Piper's voice in int8 (tests/bench/piper_int8.py)", "",
        f"Machine: {platform.machine()}, `{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}`."
        f" Voice en_US-joe-medium, {len(SENTENCES)} sentences, one intra-op thread.", "",
        "| | float32 (published) | int8 convolution weights |", "| --- | ---: | ---: |",
        f"| memory: loaded (RSS) | +{mem['float32']['loaded']:.0f} MiB | +{mem['int8']['loaded']:.0f} MiB |",
        f"| memory: after one sentence | +{mem['float32']['after_sentence']:.0f} MiB | "
        f"+{mem['int8']['after_sentence']:.0f} MiB |",
        f"| time per sentence, median (p90) | {statistics.median(times['float32']):.0f} ms "
        f"({np.percentile(times['float32'], 90):.0f}) | {statistics.median(times['int8']):.0f} ms "
        f"({np.percentile(times['int8'], 90):.0f}) |",
        f"| whisper base's word errors | {errors['float32']} of {total_words} | {errors['int8']} of {total_words} |",
        "",
        f"Change of the voice (log-mel, aligned, mean |dB|): int8 against float32, both without noise: median "
        f"**{statistics.median(changes):.2f} dB** (max {max(changes):.2f}); piper's own run-to-run change (float32 "
        f"as the app runs it against its noiseless run): median **{statistics.median(yardstick):.2f} dB** (min "
        f"{min(yardstick):.2f}). Ratio of the medians: "
        f"{statistics.median(changes) / statistics.median(yardstick):.2f}.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
