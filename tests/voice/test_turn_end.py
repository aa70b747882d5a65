"""Ending a turn when it sounds finished: the decision on a fake model, the Endpointer with a
fake model in the pipeline, and the real Smart Turn model on real speech."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.config import VoiceConfig
from sidecar.frames import AudioFrame, EndFrame, UtteranceFrame
from sidecar.voice.audio import RATE, to_int16
from sidecar.voice.turn_end import Ask, End, TurnEnd
from sidecar.voice.vad import WINDOW_S, AskTurn, Discarded, Endpointer, Segmenter, Utterance

from .harness import Feed, run
from .speech import concat, espeak, silence
from .test_vad import QUIET, VOICE, feed, finals, windows


def silences(turn: TurnEnd, upto_s: float, step_s: float = 0.032) -> list[tuple[float, Ask | End]]:
    """Feed growing silence (one VAD window at a time); the decisions with the silence they came at."""
    out, s = [], 0.0
    while s < upto_s:
        s = round(s + step_s, 6)
        decision = turn.silence(s)
        if decision is not None:
            out.append((s, decision))
    return out


def test_the_model_is_asked_once_the_first_silence_has_passed():
    turn = TurnEnd(ask_s=0.15, retry_s=0.3, max_s=1.0, threshold=0.5)
    turn.begin()
    (at, ask), *rest = silences(turn, 0.5)
    assert isinstance(ask, Ask) and at == pytest.approx(0.16)
    assert rest == [], "no second question while the first is unanswered"


def test_a_complete_turn_ends_as_soon_as_the_model_says_so():
    turn = TurnEnd(0.15, 0.3, 1.0, 0.5)
    turn.begin()
    ((_, ask),) = silences(turn, 0.2)
    assert turn.verdict(ask.pause, 0.9) == End("complete")


def test_an_incomplete_turn_is_asked_again_then_ended_by_the_timeout():
    turn = TurnEnd(0.15, 0.3, 1.0, 0.5)
    turn.begin()
    decisions = []
    s = 0.0
    while not decisions or not isinstance(decisions[-1][1], End):
        s = round(s + 0.032, 6)
        d = turn.silence(s)
        if isinstance(d, Ask):
            assert turn.verdict(d.pause, 0.1) is None, "not complete: wait"
        if d is not None:
            decisions.append((s, d))
    asks = [at for at, d in decisions if isinstance(d, Ask)]
    assert asks == pytest.approx([0.16, 0.48, 0.8]), "asked again every retry_s of further silence"
    assert decisions[-1] == (pytest.approx(1.024), End("timeout"))


def test_an_unsure_model_ends_the_turn_after_the_usual_hang_over_and_only_a_sure_one_waits():
    def ended(p: float) -> tuple[float, End]:
        turn = TurnEnd(0.15, 1.0, 1.0, 0.5, wait_below=0.2, hangover_s=0.3)
        turn.begin()
        s = 0.0
        while s < 1.2:
            s = round(s + 0.032, 6)
            d = turn.silence(s)
            if isinstance(d, Ask):
                assert turn.verdict(d.pause, p) is None
            elif isinstance(d, End):
                return s, d
        raise AssertionError("never ended")

    assert ended(0.35) == (pytest.approx(0.32), End("hang-over")), "unsure: no longer than without the model"
    assert ended(0.05) == (pytest.approx(1.024), End("timeout")), "sure the user goes on: the long wait"


def test_an_answer_about_a_pause_the_user_broke_is_ignored():
    turn = TurnEnd(0.15, 0.3, 1.0, 0.5)
    turn.begin()
    ((_, ask),) = silences(turn, 0.2)
    turn.voice()  # the user went on while the model was thinking
    assert turn.verdict(ask.pause, 0.99) is None
    (at, again), = silences(turn, 0.2)
    assert isinstance(again, Ask) and again.pause != ask.pause, "the new pause gets its own question"
    assert turn.verdict(ask.pause, 0.99) is None and turn.verdict(again.pause, 0.99) == End("complete")


def test_a_new_utterance_forgets_the_last_ones_question():
    turn = TurnEnd(0.15, 0.3, 1.0, 0.5)
    turn.begin()
    ((_, ask),) = silences(turn, 0.2)
    turn.begin()
    assert turn.verdict(ask.pause, 0.99) is None


def test_the_first_question_must_come_before_the_longest_wait():
    with pytest.raises(ValueError, match="longest wait"):
        TurnEnd(1.2, 0.3, 1.0, 0.5)
    with pytest.raises(ValueError, match="turn_ask_ms"):
        VoiceConfig(turn_ask_ms=1200, turn_max_ms=1000)


def segmenter(**settings) -> Segmenter:
    config = VoiceConfig(preroll_ms=0, **settings)
    return Segmenter(config, TurnEnd.of(config))


def test_the_segmenter_asks_with_the_utterance_so_far_and_ends_on_a_complete_answer():
    seg = segmenter(turn_ask_ms=150, turn_max_ms=1000)
    results = feed(seg, windows(0.5, QUIET) + windows(1, VOICE) + windows(0.3, QUIET))
    (ask,) = [r for r in results if isinstance(r, AskTurn)]
    assert not finals(results), "no fixed hang-over: only the model or the timeout ends it"
    assert ask.silence == pytest.approx(0.16)
    assert len(ask.audio) == pytest.approx((1 + 0.16) * RATE, abs=2 * WINDOW_S * RATE), \
        "the model hears the words and the silence so far"
    (utterance,) = seg.verdict(ask, 0.9, ask.t + 0.09)
    assert isinstance(utterance, Utterance) and utterance.final
    assert utterance.endpoint == pytest.approx(ask.t + 0.09), "dated when the model answered"
    assert utterance.end == pytest.approx(1.5, abs=WINDOW_S)


def test_the_segmenter_waits_through_a_mid_thought_pause():
    seg = segmenter(turn_ask_ms=150, turn_retry_ms=300, turn_max_ms=1000)
    out = []
    probabilities = windows(0.5, QUIET) + windows(1, VOICE) + windows(0.7, QUIET) + windows(1, VOICE) \
        + windows(1.2, QUIET)
    for i, p in enumerate(probabilities):
        for r in seg.feed(np.zeros(512, np.float32), i * WINDOW_S, p):
            out.append(r)
            if isinstance(r, AskTurn):
                out += seg.verdict(r, 0.02, r.t)  # sure it goes on: only the timeout ends it
    (utterance,) = finals(out)
    assert utterance.start < 1.0 and utterance.end == pytest.approx(3.2, abs=WINDOW_S), "one utterance, not two"
    assert utterance.endpoint - utterance.end == pytest.approx(1.0, abs=WINDOW_S), "ended by the timeout"


def test_a_click_is_not_worth_asking_about_and_is_discarded_at_the_timeout():
    seg = segmenter(min_speech_ms=150)
    out = feed(seg, windows(0.5, QUIET) + [VOICE, VOICE] + windows(1.2, QUIET))
    assert not [r for r in out if isinstance(r, AskTurn)] and not finals(out)
    assert any(isinstance(r, Discarded) for r in out)


def test_push_to_talk_never_asks_the_model():
    seg = segmenter()
    out = seg.push_to_talk(True, 0.0)
    out += feed(seg, windows(0.5, VOICE) + windows(1.5, QUIET))
    assert not [r for r in out if isinstance(r, AskTurn)] and not finals(out)


class FakeTurnModel:
    """Answers from a list and records what it was asked about."""

    def __init__(self, answers: list[float]) -> None:
        self.answers = answers
        self.heard: list[int] = []

    def __call__(self, audio: np.ndarray) -> float:
        self.heard.append(len(audio))
        return self.answers[min(len(self.heard), len(self.answers)) - 1]


class ScriptedVad:
    """Speech probability from the sample values: loud windows are speech."""

    def reset(self) -> None:
        pass

    def __call__(self, window: np.ndarray) -> float:
        return VOICE if float(np.abs(window).max()) > 0.1 else QUIET


def frames(audio: np.ndarray, block: int = 320) -> list:
    pcm = to_int16(audio)
    return [AudioFrame(pcm=pcm[i:i + block], rate=RATE, t=i / RATE) for i in range(0, len(pcm), block)] + [EndFrame()]


def utterances(model: FakeTurnModel, audio: np.ndarray, **settings) -> list[UtteranceFrame]:
    endpointer = Endpointer(VoiceConfig(**settings), ScriptedVad(), turn_model=model)  # type: ignore[arg-type]
    return [f for f in run(frames(audio), [endpointer]) if isinstance(f, UtteranceFrame) and f.final]


def tone(seconds: float) -> np.ndarray:
    return (0.5 * np.sin(2 * np.pi * 220 * np.arange(int(seconds * RATE)) / RATE)).astype(np.float32)


def test_the_endpointer_ends_a_complete_turn_at_the_first_question():
    model = FakeTurnModel([0.95])
    (utterance,) = utterances(model, concat(silence(0.5), tone(1.0), silence(1.5)))
    assert len(model.heard) == 1
    assert utterance.t - utterance.end < 0.5, "long before the 1 s timeout"


def test_the_endpointer_keeps_one_utterance_across_a_pause_the_model_calls_unfinished():
    model = FakeTurnModel([0.02, 0.02, 0.9])  # sure it goes on, twice in the pause, then complete at the end
    (utterance,) = utterances(model, concat(silence(0.5), tone(1.0), silence(0.6), tone(0.8), silence(1.5)),
                              turn_retry_ms=300)
    assert utterance.end - utterance.start > 2.3, "the pause did not split the turn"
    assert len(model.heard) == 3 and model.heard[-1] > model.heard[0], "asked again on the longer audio"


# The real model on real (synthetic) speech: deterministic espeak voices, questions it hears as
# complete with a wide margin, and the same questions cut off mid-sentence.
COMPLETE = ["What is the capital of France?", "How tall is a giraffe?", "Can you tell me a joke?"]


@pytest.fixture(scope="module")
def smart_turn():
    from remote_api.shared.models.provision import Models
    from sidecar.voice.turn_end import SmartTurn

    return SmartTurn(Models().path("smart-turn"))


@pytest.mark.parametrize("text", COMPLETE)
def test_the_real_model_hears_a_whole_question_as_complete(smart_turn, text):
    assert smart_turn(concat(silence(0.3), espeak(text), silence(0.2))) > 0.7


@pytest.mark.parametrize("text", ["So what I want to know is,", "What I really wanted was"])
def test_the_real_model_hears_an_unfinished_thought_as_incomplete(smart_turn, text):
    assert smart_turn(concat(silence(0.3), espeak(text), silence(0.2))) < 0.3


def test_the_real_model_in_the_endpointer_ends_a_question_before_the_timeout(smart_turn, engines):
    audio = concat(silence(0.5), espeak("What is the capital of France?"), silence(2.5))
    engines.vad.reset()
    endpointer = Endpointer(VoiceConfig(turn_max_ms=2000), engines.vad, turn_model=smart_turn)
    (utterance,) = [f for f in run(frames(audio), [endpointer]) if isinstance(f, UtteranceFrame) and f.final]
    assert utterance.t - utterance.end < 2.0, "the model, not the 2 s timeout, ended it"


def test_without_the_new_models_the_loop_falls_back_and_says_how_to_get_them(tmp_path, caplog):
    """A models folder from before (whisper.cpp's and piper's models only): the voice loop still
    starts, on whisper.cpp and the fixed hang-over, and the log names the install command."""
    from remote_api.shared.models.catalogue import find
    from remote_api.shared.models.provision import Models
    from sidecar.voice.asr import Transcriber
    from sidecar.voice_loop import LoadedModels, listening

    real = Models()
    for name in ("whisper-tiny.en", "piper-joe"):
        (tmp_path / name).mkdir()
        for f in real.folder(find(name)).iterdir():
            (tmp_path / name / f.name).symlink_to(f)
    config = VoiceConfig(wake_engine="phrase", endpoint="smart_turn", asr_engine="ctranslate2")
    with caplog.at_level("WARNING"):
        engines = LoadedModels.load(config, Models(tmp_path))
    assert isinstance(engines.transcriber, Transcriber) and engines.turn is None
    assert "stella models install whisper-tiny.en-ct2" in caplog.text
    assert "stella models install smart-turn" in caplog.text
    assert "stella models install wakeword" in caplog.text and engines.wake is None, "whisper alone hears the name"
    (endpointer,) = [p for p in listening(config, engines, Feed([])) if isinstance(p, Endpointer)]
    assert endpointer.turn_model is None and endpointer.segmenter.turn is None, "the fixed hang-over ends turns"
