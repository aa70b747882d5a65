"""Wake words: the name-token matcher, the acoustic engine, and who gets addressed."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.frames import (
    AudioFrame,
    EarlyTranscriptFrame,
    EndFrame,
    Frame,
    LikelyTurnFrame,
    ListeningFrame,
    TranscriptFrame,
    UserTextFrame,
    UserTurnFrame,
    UtteranceFrame,
    WakeFrame,
)
from sidecar.intents import Intents
from sidecar.pipeline import Processor
from sidecar.voice.audio import RATE, to_int16
from sidecar.voice.turn_taking import TurnTaker, WakeGate
from sidecar.voice.wake import AcousticWake, NameMatcher, edit_distance

from . import harness
from .speech import concat, espeak, silence


@pytest.mark.parametrize("a, b, d", [("stella", "stella", 0), ("stella", "stela", 1), ("stella", "stellar", 1),
                                     ("stella", "bella", 2), ("luna", "luigi", 3), ("", "abc", 3)])
def test_edit_distance(a, b, d):
    assert edit_distance(a, b) == d == edit_distance(b, a)


@pytest.mark.parametrize("transcript, rest", [
    ("Hey Stella, what time is it?", "what time is it?"),
    ("Hey, Stela. Turn it down.", "Turn it down."),
    ("A Stellar, good morning!", "good morning!"),
    ("Stella.", ""),
    ("Hey Stella", ""),
])
def test_the_name_token_matches_within_one_edit(transcript, rest):
    found = NameMatcher("hey stella").match(transcript)
    assert found is not None and found.rest == rest


@pytest.mark.parametrize("transcript", ["Hey Bella, what time is it?", "Hello there.", "Hey, what did Stella say?",
                                        "Hey Luigi!"])
def test_other_names_and_late_mentions_do_not_match(transcript):
    assert NameMatcher("hey stella").match(transcript) is None
    assert NameMatcher("hey luna").match("hey luigi") is None, "a fuzzy ratio would accept this; one edit does not"


def test_short_names_must_match_exactly():
    matcher = NameMatcher("hi bo")
    assert matcher.match("Hi Bo, hello") is not None
    assert matcher.match("Hi Bob, hello") is None


def run(processors: list[Processor], frames: list[Frame]) -> list[Frame]:
    return harness.run([*frames, EndFrame()], processors)


def audio_frames(audio: np.ndarray) -> list[Frame]:
    pcm = to_int16(audio)
    return [AudioFrame(pcm=pcm[i:i + 320], rate=RATE, t=i / RATE) for i in range(0, len(pcm) - 319, 320)]


def test_the_acoustic_engine_fires_once_per_wake_word_and_not_on_other_speech(jarvis_engines, piper):
    audio = concat(silence(1.0), piper("Hey Jarvis."), silence(1.5), piper("I saw a jar of jam with Travis."),
                   silence(1.0), espeak("Hey Jarvis", speed=150), silence(1.0))
    end_first = 1.0 + len(piper("Hey Jarvis.")) / RATE
    wakes = [f for f in run([AcousticWake(jarvis_engines.wake, 0.5)], audio_frames(audio)) if isinstance(f, WakeFrame)]
    assert len(wakes) == 2, [(w.t, w.score) for w in wakes]
    assert 1.0 < wakes[0].t < end_first + 0.5, "the wake word is reported right after it is said"
    assert all(w.engine == "openwakeword" and w.word == "hey_jarvis" for w in wakes)


def utterance(start: float, end: float, **kw) -> UtteranceFrame:
    return UtteranceFrame(audio=np.zeros(16, np.float32), start=start, end=end, t=end + 0.3, **kw)


def heard(u: UtteranceFrame, text: str) -> TranscriptFrame:
    return TranscriptFrame(text=text, asr_ms=1.0, utterance=u, t=u.t + 0.5)


def wake(t: float) -> WakeFrame:
    return WakeFrame(word="hey_jarvis", score=0.9, engine="openwakeword", t=t)


def turns(frames: list[Frame]) -> list[str]:
    return [f.text for f in frames if isinstance(f, UserTurnFrame)]


def test_the_gate_lets_only_addressed_speech_reach_asr():
    gate = WakeGate("openwakeword", window_s=8)
    chatter, with_wake, after, late = utterance(0, 2), utterance(3, 5), utterance(6, 7), utterance(20, 21)
    out = run([gate], [chatter, wake(3.8), with_wake, after, late])
    passed = [f for f in out if isinstance(f, UtteranceFrame)]
    assert passed == [with_wake, after], "chatter before the wake word and speech long after it cost no ASR"
    assert with_wake.wake_inside and not after.wake_inside


def test_a_wake_word_with_the_question_in_one_breath_is_one_turn():
    u = utterance(1, 4, wake_inside=True)
    out = run([TurnTaker("hey_jarvis", 8, engine="openwakeword")],
              [wake(1.9), heard(u, "Hey Jarvis, what is the time?"), heard(utterance(5, 6), "And the date?")])
    assert turns(out) == ["what is the time?"], "the wake word is stripped, and spent by the turn"


def test_a_bare_wake_word_makes_the_next_utterance_the_question():
    bare, question = utterance(1, 2, wake_inside=True), utterance(3, 5)
    out = run([TurnTaker("hey_jarvis", 8, engine="openwakeword")],
              [wake(1.9), heard(bare, "Hey Jarvis."), heard(question, "What is the time?")])
    assert turns(out) == ["What is the time?"]
    assert [f for f in out if isinstance(f, ListeningFrame)]


def test_the_custom_phrase_is_checked_in_every_transcript():
    chatter = utterance(0, 1, verify_wake=True)
    bare = utterance(2, 3, verify_wake=True)
    question = utterance(3.5, 5, verify_wake=True)  # passed the gate before "Hey Stella." was transcribed
    later = utterance(30, 31, verify_wake=True)
    out = run([TurnTaker("hey stella", 8)], [heard(chatter, "Hello there."), heard(bare, "Hey Stella."),
                                             heard(question, "What is the time?"), heard(later, "Anyway.")])
    assert turns(out) == ["What is the time?"]
    assert [(f.engine, f.t) for f in out if isinstance(f, WakeFrame)] == [("phrase", 3)]


def test_push_to_talk_and_typed_text_bypass_the_wake_word():
    ptt = utterance(0, 2, push_to_talk=True)
    out = run([WakeGate("openwakeword", 8), TurnTaker("hey_jarvis", 8, engine="openwakeword")],
              [heard(ptt, "Turn it down."), UserTextFrame(text="Hello!")])
    assert [(f.text, f.source) for f in out if isinstance(f, UserTurnFrame)] == [("Turn it down.", "push_to_talk"),
                                                                                 ("Hello!", "text")]


def early(u: UtteranceFrame, text: str) -> EarlyTranscriptFrame:
    return EarlyTranscriptFrame(text=text, utterance=u, t=u.end + 0.2)


def likely(frames: list[Frame]) -> list[str]:
    return [f.text for f in frames if isinstance(f, LikelyTurnFrame)]


def test_at_a_pause_the_turn_taker_says_which_turn_the_words_would_make_and_changes_nothing():
    chatter = utterance(0, 1, verify_wake=True, final=False)
    asked = utterance(2, 4, verify_wake=True, final=False)
    out = run([TurnTaker("hey stella", 8)], [early(chatter, "Hello there."),
                                             early(asked, "Hey Stella, where do penguins live?"),
                                             heard(utterance(2, 4.5, verify_wake=True),
                                                   "Hey Stella, where do penguins live in winter?")])
    assert likely(out) == ["where do penguins live?"], "the wake phrase stripped; chatter makes none"
    assert turns(out) == ["where do penguins live in winter?"], "the final transcript makes the turn"
    assert [f.t for f in out if isinstance(f, WakeFrame)] == [4.5], "the guess woke nothing"


def test_no_likely_turn_for_what_is_handled_locally_or_not_addressed():
    out = run([TurnTaker("hey_jarvis", 8, engine="openwakeword", intents=Intents(()))],
              [early(utterance(0, 1, push_to_talk=True, final=False), "Stop."),
               early(utterance(2, 3, final=False), "Where do penguins live?"),
               early(utterance(4, 5, push_to_talk=True, final=False), "Where do penguins live?")])
    assert likely(out) == ["Where do penguins live?"], "only the push-to-talk question"


class Says:
    """A whisper that says the text scripted for each audio length, and counts its runs."""

    def __init__(self, texts: dict[int, str]) -> None:
        self.texts = texts
        self.calls: list[int] = []

    def prepare(self, prompt: str) -> None:
        pass

    def __call__(self, audio: np.ndarray, abort=None, prompt: str = "") -> str:
        self.calls.append(len(audio))
        return self.texts[len(audio)]


def speech(start: float, samples: int, *, interim: bool = False, final: bool = True) -> UtteranceFrame:
    return UtteranceFrame(audio=np.zeros(samples, np.float32), start=start, end=start + samples / RATE,
                          t=start + samples / RATE, interim=interim, final=final and not interim)


def test_while_the_user_speaks_only_speech_that_names_her_is_transcribed_and_its_start_warmed():
    from sidecar.voice.asr import ASR

    whisper = Says({12800: "I was telling him", 25600: "I was telling him about it", 30000: "I was telling him.",
                    12816: "Hey Stella, what is", 25616: "Hey Stella, what is the tallest",
                    30016: "Hey Stella, what is the tallest mountain?"})
    script: list = []
    for start, extra in ((0.0, 0), (5.0, 16)):  # chatter, then a question with her name
        script += [speech(start, 12800 + extra, interim=True), 0.2, speech(start, 25600 + extra, interim=True), 0.2,
                   speech(start, 30000 + extra, final=False), 0.2, speech(start, 30000 + extra), 0.2]
    out = harness.run([*script, EndFrame()], [WakeGate("phrase", 8), ASR(whisper), TurnTaker("hey stella", 8)])
    assert whisper.calls == [12800, 30000, 12816, 25616, 30016], \
        "chatter: one interim run, not one a second; her name heard: every interim run"
    assert [(f.text, f.at_pause) for f in out if isinstance(f, LikelyTurnFrame)] == [
        ("what", False), ("what is the", False), ("what is the tallest mountain?", True)], \
        "while speaking, the settled words after the name (the last word may be cut); at the pause, all"
    assert turns(out) == ["what is the tallest mountain?"]


@pytest.mark.parametrize("reading, heard", [
    ("He's still at, what time is it?", True), ("Here's the alarm, what time in it?", True),
    ("Case settler, what time is it?", True), ("Hey, Stella, what time is it?", True),
    ("Here's to it how long until sunset?", True),
    ("Here may I what time in it?", False), ("Here they are, what time in it?", False),
    ("Hey Metler, what time is it?", False), ("What time in it? Hey Stella.", False)])
def test_the_name_sounds_at_the_start_of_a_reading_without_the_prompt(reading, heard):
    assert NameMatcher("hey stella").sounds_in(reading) is heard
