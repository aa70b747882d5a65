"""The trained "hey stella" model: the app's streaming detector sees the windows it was trained
on, the stored file round-trips, and it hears the name from voices it was never trained on."""

from __future__ import annotations

import numpy as np
import pytest

from remote_api.shared.models.provision import Models
from sidecar.voice.audio import to_int16
from sidecar.voice.wake import WakeModel
from sidecar.voice.wake_net import FEATURES, WINDOW, WakeNet
from tests.voice import wake_train

from .speech import concat, flite, silence


@pytest.fixture(scope="module")
def model() -> WakeModel:
    return WakeModel(Models().path("wakeword"), "hey_stella")


def scores(model: WakeModel, audio: np.ndarray) -> np.ndarray:
    model.reset()
    return np.array(model.scores(to_int16(audio)))


def test_the_app_scores_the_windows_the_model_was_trained_on(model):
    """Training builds its windows from the same streaming front end (tests/voice/wake_train.py)."""
    audio = concat(silence(0.5), flite("Hey Stella, what time is it?", voice="slt"), silence(0.5))
    trained_on = wake_train.embeddings(audio).reshape(-1, WINDOW * FEATURES).astype(np.float32)
    streamed = scores(model, audio)
    net = WakeNet.builtin("hey_stella")
    # the first chunk yields a burst of embeddings (the front end's pre-filled buffer): compare from its last
    np.testing.assert_allclose(streamed[-len(trained_on):], net.score(trained_on), atol=2e-3)


def test_the_stored_model_round_trips(tmp_path):
    net = WakeNet.builtin("hey_stella")
    net.save(tmp_path / "again.npz")
    x = np.random.default_rng(0).normal(0, 1, (8, WINDOW * FEATURES)).astype(np.float32)
    np.testing.assert_allclose(WakeNet.load(tmp_path / "again.npz").score(x), net.score(x), atol=1e-6)
    with pytest.raises(ValueError, match="no trained wake model 'hey_bob'"):
        WakeNet.builtin("hey_bob")
