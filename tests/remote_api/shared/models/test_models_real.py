"""Every provisioned model, used for real: piper speaks, whisper hears it, the wake word fires."""

from __future__ import annotations

import re
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest
import soxr

from remote_api.shared.models.provision import Models

MODELS = Models()


def _words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]", " ", text.lower()).split()


@pytest.fixture(scope="module")
def whisper():
    from pywhispercpp.model import Model

    return Model(str(MODELS.path("whisper-tiny.en")), n_threads=2, print_progress=False,
                 print_realtime=False, redirect_whispercpp_logs_to=None)


@pytest.fixture(scope="module")
def piper_voice():
    from piper import PiperVoice

    return PiperVoice.load(str(MODELS.path("piper-joe")))


def _speak(voice, text: str) -> np.ndarray:
    """Piper speech resampled to 16 kHz float32, as the microphone path would see it."""
    chunks = list(voice.synthesize(text))
    audio = np.concatenate([c.audio_float_array for c in chunks]).astype(np.float32)
    return soxr.resample(audio, chunks[0].sample_rate, 16000).astype(np.float32)


def _transcribe(whisper, audio: np.ndarray) -> str:
    return " ".join(seg.text for seg in whisper.transcribe(audio))


def test_whisper_transcribes_real_speech(whisper):
    with wave.open(str(MODELS.path("jfk-sample"))) as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    text = " ".join(_words(_transcribe(whisper, audio)))
    assert "ask not what your country can do for you" in text


@pytest.mark.parametrize("sentence", [
    "The weather is lovely today, so let us go for a walk in the park.",
    "Please put on the red dress and turn the music down.",
])
def test_piper_speech_is_transcribed_back_by_whisper(whisper, piper_voice, sentence):
    heard = _words(_transcribe(whisper, _speak(piper_voice, sentence)))
    expected = _words(sentence)
    matched = sum(1 for w in expected if w in heard)
    assert matched / len(expected) >= 0.9, (sentence, heard)


def _wake_scores(audio16k: np.ndarray, model_name: str) -> list[float]:
    from pyopen_wakeword import OpenWakeWord, OpenWakeWordFeatures
    from pyopen_wakeword.openwakeword import _find_tensorflowlite_c

    folder = MODELS.path("wakeword")
    lib = _find_tensorflowlite_c()
    features = OpenWakeWordFeatures(folder / "melspectrogram.tflite", folder / "embedding_model.tflite", lib)
    detector = OpenWakeWord.from_model(folder / f"{model_name}.tflite", lib)
    pcm = np.clip(audio16k * 32767, -32768, 32767).astype("<i2")
    padded = np.concatenate([np.zeros(16000, "<i2"), pcm, np.zeros(16000, "<i2")])
    scores: list[float] = []
    for start in range(0, len(padded) - 1280 + 1, 1280):  # 80 ms blocks, as a microphone delivers
        for embedding in features.process_streaming(padded[start:start + 1280].tobytes()):
            scores.extend(detector.process_streaming(embedding))
    return scores


def test_wake_word_fires_on_hey_jarvis_and_not_on_other_speech(piper_voice):
    wake = max(_wake_scores(_speak(piper_voice, "Hey Jarvis."), "hey_jarvis"))
    other = max(_wake_scores(_speak(piper_voice, "Hello there, what a nice morning for a cup of tea."),
                             "hey_jarvis"))
    assert wake > 0.5, f"hey jarvis scored only {wake:.3f}"
    assert other < 0.2, f"other speech scored {other:.3f}"


def test_wake_word_fires_on_an_espeak_voice_too(tmp_path: Path):
    wav = tmp_path / "wake.wav"
    subprocess.run(["espeak-ng", "-s", "140", "-w", str(wav), "hey jarvis"], check=True)
    with wave.open(str(wav)) as w:
        rate = w.getframerate()
        audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    score = max(_wake_scores(soxr.resample(audio, rate, 16000).astype(np.float32), "hey_jarvis"))
    assert score > 0.5, f"espeak-ng 'hey jarvis' scored only {score:.3f}"
