"""The trained "hey stella" model: the app's streaming detector sees the windows it was trained
on, the stored file round-trips, and it hears the name from voices it was never trained on."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from remote_api.shared.models.provision import Models
from sidecar.config import VoiceConfig
from sidecar.frames import EndFrame, UserTurnFrame, WakeFrame
from sidecar.voice.audio import RATE
from sidecar.voice.wake import WakeModel
from sidecar.voice.wake_net import FEATURES, WINDOW, WakeNet
from sidecar.voice_loop import listening
from tests.voice import wake_train

from . import harness
from .speech import concat, flite, silence
from .test_wake_confirm import frames_of


@pytest.fixture(scope="module")
def model() -> WakeModel:
    return WakeModel(Models().path("wakeword"), "hey_stella")


def scores(model: WakeModel, audio: np.ndarray) -> np.ndarray:
    model.reset()
    return np.array(model.scores(wake_train.pcm_of(audio)))


def test_the_app_scores_the_windows_the_model_was_trained_on(model):
    """Training builds its windows from the same streaming front end (tests/voice/wake_train.py)."""
    audio = concat(silence(0.5), flite("Hey Stella, what time is it?", voice="slt"), silence(0.5))
    trained_on = wake_train.embeddings(audio).reshape(-1, WINDOW * FEATURES).astype(np.float32)
    streamed = scores(model, audio)
    net = WakeNet.builtin("hey_stella")
    # The first chunk yields a burst of embeddings (the front end's pre-filled buffer): compare from its
    # last; a window one chunk off moves the name's scores by far more.
    np.testing.assert_allclose(streamed[-len(trained_on):], net.score(trained_on), atol=1e-4)
    assert streamed.max() > 0.5 and np.abs(np.roll(streamed, 1)[-len(trained_on):] - net.score(trained_on)).max() > 0.1


def test_the_stored_model_round_trips(tmp_path):
    net = WakeNet.builtin("hey_stella")
    net.save(tmp_path / "again.npz")
    x = np.random.default_rng(0).normal(0, 1, (8, WINDOW * FEATURES)).astype(np.float32)
    np.testing.assert_allclose(WakeNet.load(tmp_path / "again.npz").score(x), net.score(x), atol=1e-6)
    with pytest.raises(ValueError, match="no trained wake model 'hey_bob'"):
        WakeNet.builtin("hey_bob")


def test_an_ensemble_is_one_network_whose_logit_is_its_members_mean():
    """How the stored model holds its three networks (tests/voice/wake_train.py: ensemble)."""
    rng = np.random.default_rng(1)
    n = WINDOW * FEATURES

    def member(hidden: int) -> WakeNet:
        def normal(scale: float, shape: int | tuple[int, int]) -> np.ndarray:
            return rng.normal(0, scale, shape).astype(np.float32)

        return WakeNet(mean, std, normal(0.05, (n, hidden)),
                       normal(0.1, hidden), normal(0.2, (hidden, hidden)), normal(0.1, hidden), normal(0.3, hidden),
                       np.asarray(rng.normal(), np.float32))

    mean, std = rng.normal(0, 1, n).astype(np.float32), rng.uniform(0.5, 2, n).astype(np.float32)  # their data's
    members = [member(8), member(8), member(16)]
    x = rng.normal(0, 1, (32, n)).astype(np.float32)
    np.testing.assert_allclose(wake_train.ensemble(members).logit(x), np.mean([m.logit(x) for m in members], axis=0),
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="trained on different windows"):
        wake_train.ensemble([members[0], dataclasses.replace(members[1], std=std * 2)])
    assert WakeNet.builtin("hey_stella").w1.shape == (n, 256 * len(wake_train.SEEDS))


@pytest.mark.parametrize("voice", ["slt", "rms", "awb"])
def test_it_hears_her_name_from_a_synthesiser_it_never_heard_and_not_a_look_alike(model, voice):
    """flite: nothing was trained on it (the bench's set v5, where the decision rules were chosen, has it)."""
    floor = VoiceConfig().wake_acoustic_floor
    best = {text: scores(model, concat(silence(0.5), flite(text, voice=voice), silence(0.5))).max()
            for text in ("Hey Stella, what time is it?", "Hey Della, pass the bread.",
                         "The bus was late again this morning.")}
    assert best["Hey Stella, what time is it?"] >= floor, best
    assert best["Hey Della, pass the bread."] < floor and best["The bus was late again this morning."] < floor, best


def test_the_phrase_engine_with_the_model_wakes_on_her_name_and_not_on_a_look_alike(engines, model):
    """Real VAD, whisper (and its n-best check) and the model, the app's default phrase engine: she is
    asked, then someone else is called — a look-alike whisper may spell as her name."""
    config = VoiceConfig()
    assert config.wake_engine == "phrase" and config.wake_listener == "hey_stella"
    loaded = dataclasses.replace(engines, wake=model)
    ask, other = flite("Hey Stella, what time is it?", voice="rms"), flite("Hey Della, pass the bread.", voice="rms")
    audio = concat(silence(1.0), ask, silence(2.5), other, silence(2.5))
    out = harness.run([*frames_of(audio), EndFrame()], listening(config, loaded, harness.Feed([]))[1:], timeout=120)
    wakes = [f for f in out if isinstance(f, WakeFrame)]
    turns = [f.text for f in out if isinstance(f, UserTurnFrame)]
    assert len(wakes) == 1 and wakes[0].t < 1.0 + len(ask) / RATE + 1.0, [(f.t, f.engine) for f in wakes]
    assert len(turns) == 1 and "time" in turns[0].lower(), turns
