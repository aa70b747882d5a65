"""Personal enrolment (sidecar/voice/wake_verifier.py) on real speech through the real acoustic wake:
three takes of her name teach it a voice; then that voice's name wakes her at once and another
voice's, or a look-alike, does not; what the store keeps comes back the same, and a broken one
is a clear error."""

from __future__ import annotations

import numpy as np
import pytest

from remote_api.shared.models.provision import Models
from sidecar.config import VoiceConfig
from sidecar.frames import EndFrame, EnrolFrame, EnrolmentFrame, Frame
from sidecar.voice.audio import RATE
from sidecar.voice.wake import AcousticWake, WakeModel
from sidecar.voice.wake_confirm import AcousticOpinion, WakeCandidateFrame
from sidecar.voice.wake_verifier import PATIENCE_S, TAKES, WIDTH, Verifier, fit, others

from . import harness
from .speech import Piper, concat, espeak, silence
from .test_wake_confirm import frames_of

CONFIG = VoiceConfig()
OPINION = AcousticOpinion.of(CONFIG)


@pytest.fixture(scope="module")
def piper() -> Piper:
    return Piper()


def utterances(*said: np.ndarray, gap: float = 1.5) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """The utterances one after another with gaps, and where each is (s)."""
    parts, spans, t = [silence(1.0)], [], 1.0
    for audio in said:
        spans.append((t, t + len(audio) / RATE))
        parts += [audio, silence(gap)]
        t = spans[-1][1] + gap
    return concat(*parts), spans


def verdicts(out: list[Frame], spans: list[tuple[float, float]]) -> list[bool]:
    """Whether each utterance would wake her on the acoustic say alone (`AcousticOpinion`, as the turn
    taker weighs its candidates), whisper having written the name in all of them."""
    found = []
    for start, end in spans:
        inside = [f for f in out if isinstance(f, WakeCandidateFrame) and start <= f.t <= end + 0.6]
        score = max((f.score for f in inside), default=0.0)
        personal = max((f.personal for f in inside if f.personal is not None), default=None)
        found.append(OPINION.weigh(score, True, personal))
    return found


def test_three_takes_teach_it_a_voice_whose_name_then_wakes_her_and_no_other(piper):
    takes = [piper(text) for text in ("Hey Stella.", "Hey Stella!", "Hey, Stella.")]
    after = [piper("Hey Stella, what time is it?"), espeak("Hey Stella, what time is it?", voice="en-us+m3"),
             piper("Hey Della."), piper("Hey Stella, turn on the lights.", length_scale=1.25)]
    audio, spans = utterances(*takes, *after)
    model = WakeModel(Models().path("wakeword"), "hey_stella")
    wake = AcousticWake(model, CONFIG.wake_acoustic_floor, candidates=True, bank=lambda: others("hey_stella"))
    out = harness.run([EnrolFrame(start=True), *frames_of(audio), EndFrame()], [wake])

    progress = [(f.status, f.taken) for f in out if isinstance(f, EnrolmentFrame)]
    assert progress == [("listening", 0), ("listening", 1), ("listening", 2), ("done", TAKES)]
    done = [f for f in out if isinstance(f, EnrolmentFrame) and f.status == "done"][0]
    assert isinstance(done.verifier, Verifier) and wake.verifier is done.verifier
    assert "verifier" not in done.event_data(), "the window hears how it went, never the voice itself"
    assert not [f for f in out if isinstance(f, WakeCandidateFrame) and f.t < spans[TAKES][0]], \
        "the takes are learnt, not taken as wake words"

    mine, other_voice, look_alike, mine_slower = verdicts(out, spans[TAKES:])
    assert mine and mine_slower, "the taught voice's name wakes her (said faster or slower too)"
    assert not other_voice, "another voice's name no longer wakes her"
    assert not look_alike, "nor does the taught voice's look-alike"


def test_without_enrolment_the_candidates_carry_no_voice_and_whisper_decides_as_before(piper):
    audio, spans = utterances(piper("Hey Stella."))
    wake = AcousticWake(WakeModel(Models().path("wakeword"), "hey_stella"), CONFIG.wake_acoustic_floor,
                        candidates=True)
    out = harness.run([*frames_of(audio), EndFrame()], [wake])
    candidates = [f for f in out if isinstance(f, WakeCandidateFrame)]
    assert candidates and all(f.personal is None for f in candidates)
    assert verdicts(out, spans) == [True]
    assert not OPINION.weigh(0.9, False), "not enrolled: a score under sure needs the name whisper wrote"


def test_an_enrolled_voice_is_sure_another_is_refused_and_one_the_verifier_is_unsure_of_needs_whisper():
    assert OPINION.weigh(0.6, False, personal=0.95), "her voice over the model's floor: whatever whisper wrote"
    assert not OPINION.asks_whisper(0.6, personal=0.95) and OPINION.sure_of(0.6, personal=0.95)
    assert not OPINION.weigh(0.3, True, personal=0.99), "the model's floor still holds"
    assert not OPINION.weigh(0.99, True, personal=0.5), "another voice: not even with whisper's name"
    assert not OPINION.asks_whisper(0.8, personal=0.5) and not OPINION.sure_of(0.99, personal=0.5)
    unsure = (OPINION.stranger + OPINION.personal) / 2  # her voice in a noisy room, say
    assert OPINION.weigh(0.6, True, personal=unsure) and not OPINION.weigh(0.6, False, personal=unsure), \
        "in between, whisper's reading decides as before she was taught"
    assert OPINION.asks_whisper(0.6, personal=unsure) and OPINION.weigh(0.99, False, personal=unsure)
    with pytest.raises(ValueError, match="'wake_stranger' and 'wake_personal' .* got 0.95 and 0.9"):
        VoiceConfig(wake_stranger=0.95)


def test_other_words_are_not_taken_and_half_a_minute_without_her_name_teaches_nothing_and_says_so(piper):
    said = [piper(text) for text in ("Hello there, how are you today?", "Set a timer for ten minutes.",
                                     "Good morning, what is the weather like?", "Can you tell me a story?")]
    said.append(espeak("We went to the market on Sunday.", voice="en-us+f3"))  # scores 0.26: once a take
    audio, _ = utterances(*said, gap=4.0)
    audio = concat(audio, silence(PATIENCE_S + 1 - len(audio) / RATE))
    wake = AcousticWake(WakeModel(Models().path("wakeword"), "hey_stella"), CONFIG.wake_acoustic_floor,
                        candidates=True, bank=lambda: others("hey_stella"))
    out = harness.run([EnrolFrame(start=True), *frames_of(audio), EndFrame()], [wake])
    assert [(f.status, f.taken) for f in out if isinstance(f, EnrolmentFrame)] == [("listening", 0), ("unheard", 0)]
    assert wake.verifier is None


def test_enrolment_without_a_model_of_ours_says_it_cannot(piper):
    from sidecar.voice.wake import MicroWakeModel

    out = harness.run([EnrolFrame(start=True), EndFrame()],
                      [AcousticWake(MicroWakeModel("hey_jarvis"), 0.5, candidates=True)])
    assert [f.status for f in out if isinstance(f, EnrolmentFrame)] == ["unavailable"]


def test_what_the_store_keeps_comes_back_the_same_and_a_broken_one_is_a_clear_error():
    rng = np.random.default_rng(0)
    verifier = fit(rng.normal(1, 1, (9, WIDTH)), rng.normal(0, 1, (50, WIDTH)), steps=20)
    again = Verifier.from_stored(verifier.to_stored())
    x = rng.normal(0, 1, (5, WIDTH)).astype(np.float32)
    np.testing.assert_allclose(again.score(x), verifier.score(x), atol=1e-6)
    with pytest.raises(ValueError, match="unreadable .* teach her your voice again in Settings"):
        Verifier.from_stored({"mean": [0.0]})
    with pytest.raises(ValueError, match="another wake model: teach her your voice again"):
        Verifier.from_stored({**verifier.to_stored(), "w": [0.0] * 10})
