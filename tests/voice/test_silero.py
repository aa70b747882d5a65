"""silero VAD's network in numpy (sidecar/voice/silero.py) against onnxruntime running the model file itself."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from remote_api.shared.models.errors import ConversionError
from remote_api.shared.models.provision import Models
from sidecar.voice.vad import WINDOW, SileroVad, silero_model

from .speech import concat, espeak, load, noise, silence


def onnx_probabilities(windows: list[np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(str(silero_model()), providers=["CPUExecutionProvider"])
    state, heard, out = np.zeros((2, 1, 128), np.float32), np.zeros((1, 64 + WINDOW), np.float32), []
    for window in windows:
        heard[0, :64] = heard[0, -64:]
        heard[0, 64:] = window
        p, state = session.run(["output", "stateN"], {"input": heard, "state": state, "sr": np.array([16000])})
        out.append(float(p.reshape(-1)[0]))
    return np.array(out)


def test_each_window_gets_the_probability_the_model_file_gives_on_speech_noise_and_quiet_speech():
    """A real voice, a synthetic one, noise, silence and the real voice 20 dB quieter: the LSTM's state runs
    through all of it, so an error in the state would grow from window to window."""
    jfk = load(Models().path("jfk-sample"))
    audio = concat(jfk, silence(0.5), espeak("Hey Stella, what is the weather like tomorrow?"),
                   noise(2.0, 0.05, seed=5), silence(1.0), 0.1 * jfk)
    windows = [audio[i:i + WINDOW] for i in range(0, len(audio) - WINDOW + 1, WINDOW)]
    vad = SileroVad()
    ours, theirs = np.array([vad(w) for w in windows]), onnx_probabilities(windows)
    assert 0.2 < np.mean(theirs > 0.5) < 0.8, "speech and not speech both in the clip"
    assert np.max(np.abs(ours - theirs)) < 1e-4  # measured: 5e-6
    assert np.array_equal(ours >= 0.5, theirs >= 0.5)


def test_a_model_file_that_cannot_be_read_says_to_reinstall(tmp_path):
    broken = tmp_path / "silero_vad.onnx"
    broken.write_bytes(silero_model().read_bytes()[:100_000])
    with pytest.raises(ConversionError, match="reinstall Stella"):
        SileroVad(broken)
    other = tmp_path / "other.onnx"
    other.write_bytes(Models().path("smart-turn").read_bytes())
    with pytest.raises(ConversionError, match="no 16 kHz network.*reinstall Stella"):
        SileroVad(other)
