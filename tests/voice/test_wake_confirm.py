"""The two-stage wake word: candidates (fake stream times), the gate and turn taker around
them, the microWakeWord trigger on real speech, and the whole front end end to end."""

from __future__ import annotations

import numpy as np

from sidecar.config import VoiceConfig
from sidecar.frames import (
    EndFrame,
    Frame,
    ListeningFrame,
    TranscriptFrame,
    UserTurnFrame,
    UtteranceFrame,
    WakeCheckFrame,
    WakeFrame,
)
from sidecar.voice.audio import RATE, to_int16
from sidecar.voice.turn_taking import TurnTaker, WakeGate
from sidecar.voice.wake import AcousticWake, MicroWakeModel
from sidecar.voice.wake_confirm import AcousticOpinion, WakeCandidateFrame, WakeCandidates
from sidecar.voice_loop import listening

from . import harness
from .speech import concat, espeak, silence


def test_a_candidate_is_held_by_the_utterance_around_it_until_spent():
    c = WakeCandidates(max_age_s=10)
    c.trigger(2.4, 0.7)
    c.trigger(2.5, 0.9)
    assert c.held(0.0, 1.0) is None, "an utterance that ended well before the trigger does not hold it"
    assert c.held(1.5, 2.1).score == 0.9, "the trigger lags the words: the best candidate nearby counts"
    assert c.held(1.5, 2.1) is not None, "asking does not spend it (the final utterance frame follows)"
    c.spend(2.1)
    assert c.held(1.5, 2.1) is None


def test_with_a_lead_only_the_candidates_early_in_the_utterance_are_held():
    c = WakeCandidates(max_age_s=10)
    c.trigger(1.2, 0.6)
    c.trigger(3.5, 0.99)
    assert c.held(0.0, 4.0).score == 0.99
    assert c.held(0.0, 4.0, lead_s=2.0).score == 0.6, "a later, surer score is a mention of the name"
    assert c.held(2.0, 4.0, lead_s=2.0).score == 0.99 and c.held(4.5, 6.0, lead_s=2.0) is None


def test_a_candidate_without_speech_around_it_expires():
    c = WakeCandidates(max_age_s=10)
    c.trigger(5.0, 0.8)
    assert c.expire(14.0) == [] and c.held(4.0, 5.5) is not None
    assert [x.t for x in c.expire(15.5)] == [5.0]
    assert c.held(4.0, 5.5) is None and c.dropped == 1


def utterance(start: float, end: float, final: bool = True) -> UtteranceFrame:
    return UtteranceFrame(audio=np.zeros(16, np.float32), start=start, end=end, t=end + 0.3, final=final)


def candidate(t: float, score: float = 0.8) -> WakeCandidateFrame:
    return WakeCandidateFrame(word="hey_jarvis", score=score, t=t)


def passed(frames: list[Frame]) -> list[UtteranceFrame]:
    return [f for f in frames if isinstance(f, UtteranceFrame)]


def test_the_gate_sends_only_candidate_utterances_and_what_follows_them_to_asr():
    chatter, with_candidate, question, late = utterance(0, 2), utterance(3, 5), utterance(6, 7), utterance(30, 31)
    out = harness.run([chatter, candidate(4.6), with_candidate, question, late, EndFrame()],
                      [WakeGate("two_stage", window_s=8)])
    assert passed(out) == [with_candidate, question]
    assert with_candidate.verify_wake and not question.verify_wake, "only the candidate's utterance is checked"
    assert not [f for f in out if isinstance(f, WakeCandidateFrame)], "a candidate is not a wake: the gate keeps it"


def heard(u: UtteranceFrame, text: str) -> TranscriptFrame:
    return TranscriptFrame(text=text, asr_ms=1.0, utterance=u, t=u.t + 0.5)


def two_stage_turns(transcripts: list[tuple[UtteranceFrame, str, float | None]]) -> list[Frame]:
    """Gate then turn taker, each utterance's transcript right after it (as ASR would)."""
    script: list[Frame | float] = []
    for u, text, trigger in transcripts:
        if trigger is not None:
            script.append(candidate(trigger))
        script += [u, heard(u, text)]
    return harness.run([*script, EndFrame()],
                       [WakeGate("two_stage", 8), TurnTaker("hey_jarvis", 8, engine="two_stage")])


def test_whisper_confirms_the_candidate_when_it_hears_the_name():
    u = utterance(1, 3)
    out = two_stage_turns([(u, "Hey Jarvis, what time is it?", 2.2)])
    assert [(f.engine, f.t) for f in out if isinstance(f, WakeFrame)] == [("two_stage", 3)]
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["what time is it?"]


def test_a_candidate_whisper_hears_as_another_name_does_not_wake_nor_its_follow_up():
    out = two_stage_turns([(utterance(1, 3), "Hey Travis, are you coming?", 2.2),
                           (utterance(4, 5), "We leave at six.", None)])
    assert not [f for f in out if isinstance(f, (WakeFrame, UserTurnFrame))]


def test_a_confirmed_bare_wake_word_makes_the_next_utterance_the_question():
    out = two_stage_turns([(utterance(1, 2), "Hey, Jervis.", 2.3), (utterance(3, 5), "Turn the lights on.", None)])
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["Turn the lights on."]


def test_the_acoustic_opinion_drops_a_look_alike_and_wakes_on_a_name_it_is_sure_of():
    opinion = AcousticOpinion(floor=0.1, sure=0.9)
    assert opinion.weigh(0.5, heard_name=True) and not opinion.weigh(0.05, heard_name=True)
    assert opinion.weigh(0.95, heard_name=False) and not opinion.weigh(0.5, heard_name=False)
    assert opinion.asks_whisper(0.5) and not opinion.asks_whisper(0.05) and not opinion.asks_whisper(0.95)


def phrase_turns(transcripts: list[tuple[UtteranceFrame, str, float | None]]) -> list[Frame]:
    """The phrase engine's gate and turn taker with an acoustic model's candidates beside whisper."""
    script: list[Frame] = []
    for u, text, score in transcripts:
        if score is not None:
            script.append(candidate((u.start + u.end) / 2, score))
        script += [u, heard(u, text)]
    return harness.run([*script, EndFrame()], [WakeGate("phrase", 8, acoustic=True),
                                               TurnTaker("hey stella", 8, acoustic=AcousticOpinion(0.1, 0.9))])


def test_the_phrase_engine_takes_a_name_whisper_wrote_only_if_it_sounded_like_it():
    out = phrase_turns([(utterance(1, 3), "Hey Stella, what time is it?", 0.6),
                        (utterance(5, 7), "Hey Stella, pass the bread.", None)])  # "Hey Della", spelt by the prompt
    assert [f.t for f in out if isinstance(f, WakeFrame)] == [3]
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["what time is it?"]


def test_a_name_the_acoustic_model_is_sure_of_wakes_her_when_whisper_missed_it():
    """An accent whisper turned into stock words: she wakes and listens for the question."""
    out = phrase_turns([(utterance(1, 3), "Thank you for watching.", 0.97),
                        (utterance(4, 5), "What time is it?", None)])
    assert [f.engine for f in out if isinstance(f, WakeFrame)] == ["phrase"]
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["What time is it?"]
    assert [f for f in out if isinstance(f, ListeningFrame)], "a bare wake word: she shows she is listening"


def test_the_name_the_model_is_sure_of_wakes_her_only_where_a_wake_word_may_be():
    """'We watched a film with Stella Morris in it': the model's sure score comes 2.5 s into the
    utterance, where the name is a mention; the same score at its start wakes her."""
    def turns(after_start: float) -> list[Frame]:
        u = utterance(1, 5)
        return harness.run([candidate(1 + after_start, 0.99), u, heard(u, "We watched a film, feeling weird."),
                            EndFrame()],
                           [WakeGate("phrase", 8, acoustic=True, lead_s=2.0),
                            TurnTaker("hey stella", 8, acoustic=AcousticOpinion(0.1, 0.9))])
    assert not [f for f in turns(2.5) if isinstance(f, WakeFrame)]
    assert [f.t for f in turns(1.1) if isinstance(f, WakeFrame)] == [5]


def test_her_name_whisper_heard_nothing_in_still_wakes_her_and_said_again_it_starts_the_question():
    """Whisper may hear nothing in an accent the model is sure of; said again right after (the
    window is open), the utterance is the question, and the wake shows again."""
    out = phrase_turns([(utterance(1, 3), "", 0.99), (utterance(4, 6), "Tell us the time.", 0.99)])
    assert [f.t for f in out if isinstance(f, WakeFrame)] == [3, 6]
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["Tell us the time."]


def frames_of(audio: np.ndarray) -> list[Frame]:
    from sidecar.frames import AudioFrame

    pcm = to_int16(audio)
    return [AudioFrame(pcm=pcm[i:i + 320], rate=RATE, t=i / RATE) for i in range(0, len(pcm) - 319, 320)]


def test_the_micro_trigger_opens_candidates_on_the_wake_word_only(piper):
    audio = concat(silence(1.0), piper("Hey Jarvis."), silence(1.5), piper("The bus was late again this morning."),
                   silence(1.0))
    out = harness.run([*frames_of(audio), EndFrame()], [AcousticWake(MicroWakeModel("hey_jarvis"), 0.5,
                                                                     candidates=True)])
    found = [f for f in out if isinstance(f, WakeCandidateFrame)]
    # one candidate, sent again each time its score rises (its best counts), all on the wake word
    assert found and all(1.0 < f.t < 1.0 + len(piper("Hey Jarvis.")) / RATE + 0.6 for f in found)
    assert [f.score for f in found] == sorted({f.score for f in found}) and found[-1].t - found[0].t < 1.5
    assert not [f for f in out if isinstance(f, WakeFrame)], "the trigger alone never wakes her"


def test_an_unknown_micro_model_is_a_clear_error():
    import pytest

    with pytest.raises(ValueError, match="no microWakeWord model 'hey_stella'"):
        MicroWakeModel("hey_stella")


class Candidates(harness.Collect):
    """Keeps the trigger's candidates (the gate swallows them further down)."""

    async def process(self, frame: Frame, direction) -> None:
        if isinstance(frame, WakeCandidateFrame):
            self.frames.append(frame)
        await self.push(frame, direction)


def test_the_two_stage_front_end_wakes_on_a_held_out_voice_and_not_on_a_look_alike(jarvis_engines):
    """Real trigger (openWakeWord hey_jarvis), VAD, gate, whisper and
    turn taker on speech from a voice the bench holds out (espeak-ng Scottish English, female):
    she asks, then calls someone else — a look-alike the trigger also takes for the wake word."""
    config = VoiceConfig(wake_engine="two_stage", wake_model="hey_jarvis")
    voice = {"voice": "en-gb-scotland+f3", "speed": 150}
    ask, other = espeak("Hey Jarvis, what time is it?", **voice), espeak("Hey Travis, are you coming tonight?", **voice)
    audio = concat(silence(1.0), ask, silence(2.5), other, silence(2.5))
    processors = listening(config, jarvis_engines, harness.Feed([]))[1:]
    candidates = Candidates()
    processors.insert(next(i for i, p in enumerate(processors) if isinstance(p, WakeGate)), candidates)
    out = harness.run([*frames_of(audio), EndFrame()], processors, timeout=120)
    wakes = [f for f in out if isinstance(f, WakeFrame)]
    turns = [f.text for f in out if isinstance(f, UserTurnFrame)]
    look_alike_at = 1.0 + (len(ask) / RATE) + 2.5
    assert any(f.t > look_alike_at for f in candidates.frames), "the look-alike opened a candidate (stage 1 fooled)"
    assert len(wakes) == 1 and wakes[0].engine == "two_stage" and wakes[0].t < look_alike_at, \
        [(f.t, f.engine) for f in wakes]
    assert len(turns) == 1 and "time" in turns[0].lower(), turns


def test_two_stage_settings_are_checked_with_clear_errors():
    import pytest

    with pytest.raises(ValueError, match="wake_trigger_threshold"):
        VoiceConfig(wake_engine="two_stage", wake_trigger_threshold=1.5)
    with pytest.raises(ValueError, match="for the microWakeWord trigger"):
        VoiceConfig(wake_engine="two_stage", wake_trigger="micro", wake_model="hey_rhasspy")
    with pytest.raises(ValueError, match="wake_nbest"):
        VoiceConfig(wake_nbest=-1)
    with pytest.raises(ValueError, match="'wake_acoustic_lead_s' .* in seconds, more than 0, got 0"):
        VoiceConfig(wake_acoustic_lead_s=0)
    assert VoiceConfig(wake_engine="two_stage", wake_model="hey_rhasspy").wake_trigger == "openwakeword"


def test_the_meter_hears_the_models_score_and_a_name_it_refused():
    out = phrase_turns([(utterance(1, 3), "Hey Stella, pass the bread.", 0.05),
                        (utterance(5, 7), "Hey Stella, what time is it?", 0.8)])
    checks = [(f.heard, f.acoustic, f.acoustic_floor, f.woke) for f in out if isinstance(f, WakeCheckFrame)]
    assert checks == [(True, 0.05, 0.1, False), (True, 0.8, 0.1, True)], "whisper wrote the name both times"
