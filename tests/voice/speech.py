"""Speech made at test time (never downloaded): piper and espeak-ng voices, noise, mixing.

Everything is float32 mono at 16 kHz, like the microphone path. Large generated sets (the
wake-word benchmark) go to a cache dir outside the repo.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import platformdirs

from remote_api.shared.models.provision import Models
from sidecar.voice.asr import Transcribes
from sidecar.voice.audio import RATE, read_wav, resample, write_wav
from sidecar.voice.tts import EspeakSynth
from sidecar.voice.wake import edit_distance, words

CACHE = Path(os.environ.get("STELLA_TEST_AUDIO") or Path(platformdirs.user_cache_dir("stella")) / "test-audio")


class Piper:
    """The provisioned piper voice, loaded on first use."""

    def __init__(self) -> None:
        self._voice = None

    def __call__(self, text: str, *, length_scale: float = 1.0, noise_scale: float = 0.667,
                 level: float = 0.5) -> np.ndarray:
        from piper import PiperVoice, SynthesisConfig

        if self._voice is None:
            self._voice = PiperVoice.load(str(Models().path("piper-joe")))
        config = SynthesisConfig(length_scale=length_scale, noise_scale=noise_scale)
        chunks = list(self._voice.synthesize(text, config))
        audio = np.concatenate([c.audio_float_array for c in chunks])
        return trim(resample(audio, chunks[0].sample_rate, RATE)) * level


# Plain questions for conversations (the voice-latency bench and the device echo test).
QUESTIONS = [
    "What is the capital of France?", "How are you today?", "What is your favourite colour?",
    "Can you tell me a joke?", "What should I cook for dinner?", "Do you like music?",
    "What is the weather like?", "Tell me about the moon.", "What is two plus two?",
    "Can you recommend a good book?", "Why is the sky blue?", "What time do you wake up?",
    "Where do penguins live?", "What is your name?", "How tall is a giraffe?", "Do you like cats?",
]

def leveled(samples: np.ndarray, rate: int, level: float) -> np.ndarray:
    """A synthesiser's output as test speech: at 16 kHz, silence trimmed, its peak at `level`."""
    peak = float(np.max(np.abs(samples))) or 1.0
    return trim(resample(samples, rate, RATE)) / peak * level


def espeak(text: str, *, voice: str = "en-us", speed: int = 160, pitch: int = 50, level: float = 0.5) -> np.ndarray:
    return leveled(*EspeakSynth(voice, speed, pitch)(text), level)


MALE_FLITE = {"awb", "rms", "kal", "kal16"}


def flite(text: str, *, voice: str = "slt", stretch: float = 1.0, pitch: float = 1.0, level: float = 0.5) -> np.ndarray:
    """CMU flite (Debian's flite): another synthesiser, for voices nothing was trained on.
    `stretch` scales durations, `pitch` the voice's mean pitch."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "say.wav"
        subprocess.run(["flite", "-voice", voice, "--setf", f"duration_stretch={stretch:.3f}",
                        "--setf", f"int_f0_target_mean={110 * pitch if voice in MALE_FLITE else 170 * pitch:.0f}",
                        "-t", text, "-o", str(out)], check=True, capture_output=True)
        return leveled(*read_wav(out), level)


def festival(text: str, *, voice: str = "ked_diphone", stretch: float = 1.0, level: float = 0.5) -> np.ndarray:
    """The Festival Speech Synthesis System (Debian's festival and festvox-* voices): diphone and HTS
    voices of speakers no other synthesiser here has. `stretch` scales durations (diphone voices)."""
    with tempfile.TemporaryDirectory() as tmp:
        said, out = Path(tmp) / "say.txt", Path(tmp) / "say.wav"
        said.write_text(text)
        subprocess.run(["text2wave", "-eval", f"(voice_{voice})", "-eval",
                        f"(Parameter.set 'Duration_Stretch {stretch:.3f})", str(said), "-o", str(out)],
                       check=True, capture_output=True)
        return leveled(*read_wav(out), level)


def shifted(audio: np.ndarray, factor: float) -> np.ndarray:
    """`audio` played `factor` times faster: pitch and formants move together, as from a shorter
    (factor > 1) or longer vocal tract — another speaker from the same voice."""
    return resample(audio, round(RATE * factor), RATE)


def voices() -> dict[str, Callable[[str], np.ndarray]]:
    """Six voices for the benchmarks (piper at two speeds, four espeak-ng voices), by name."""
    piper = Piper()
    return {
        "piper joe": lambda t: piper(t),
        "piper joe slow": lambda t: piper(t, length_scale=1.25),
        "espeak en-us": lambda t: espeak(t),
        "espeak en-gb": lambda t: espeak(t, voice="en-gb", speed=150, pitch=40),
        "espeak f3": lambda t: espeak(t, voice="en-us+f3", speed=175, pitch=65),
        "espeak scotland": lambda t: espeak(t, voice="en-gb-scotland", speed=145),
    }


def trim(audio: np.ndarray, floor: float = 0.01) -> np.ndarray:
    """Cut leading and trailing near-silence: the clip starts abruptly with its first sound."""
    loud = np.flatnonzero(np.abs(audio) > floor * max(float(np.max(np.abs(audio))), 1e-9))
    return audio[loud[0]:loud[-1] + 1].astype(np.float32) if len(loud) else audio


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * RATE)), np.float32)


def noise(seconds: float, level: float, seed: int = 0) -> np.ndarray:
    """Pink-ish background noise (a room, a fan) at RMS `level`."""
    rng = np.random.default_rng(seed)
    white = rng.standard_normal(int(round(seconds * RATE))).astype(np.float32)
    pink = np.convolve(white, np.ones(8, np.float32) / 8, mode="same")
    return (pink / (np.sqrt(np.mean(pink ** 2)) + 1e-9) * level).astype(np.float32)


def concat(*parts: np.ndarray) -> np.ndarray:
    return np.concatenate(parts).astype(np.float32)


def save(path: Path, audio: np.ndarray) -> Path:
    write_wav(path, audio, RATE)
    return path


def load(path: Path) -> np.ndarray:
    audio, rate = read_wav(path)
    return resample(audio, rate, RATE)


def heard_fraction(expected: str, heard: str) -> float:
    """Share of the expected words found in what was heard (one edit allowed on longer words)."""
    want, got = words(expected), words(heard)
    if not want:
        return 1.0
    found = sum(1 for w in want if any(edit_distance(w, g) <= (1 if len(w) >= 4 else 0) for g in got))
    return found / len(want)


def hear_her(transcriber: Transcribes, audio: np.ndarray) -> str:
    """What Stella said, as a listener who knows her name hears it.

    Whisper is told her name, as the app tells it the wake phrase: without it, whisper tiny hears
    piper's clean "I'm Stella." as "I'm still up." in 2 renderings out of 12. Cut or missing speech
    still reads short ("I'm", "you").
    """
    return transcriber(audio, prompt="Stella.")


def word_errors(reference: str, heard: str) -> int:
    """Words substituted, dropped or added in `heard` (Levenshtein distance over words)."""
    return edit_distance(words(reference), words(heard))
