"""Whisper's n-best readings as the name check's second guess: Scottish "Hey Stella"s whisper
first hears as "Peace to love" / "Please tell us" wake her more often with it, and look-alikes
("Please tell us", "Hey Bella") in several voices do not."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from remote_api.shared.models.provision import Models
from sidecar.config import VoiceConfig
from sidecar.frames import (
    EarlyTranscriptFrame,
    EndFrame,
    Frame,
    ListeningFrame,
    TranscriptFrame,
    UserTurnFrame,
    UtteranceFrame,
    WakeCheckFrame,
    WakeFrame,
)
from sidecar.voice.asr_ct2 import CT2Transcriber
from sidecar.voice.audio import RATE
from sidecar.voice.turn_taking import TurnTaker
from sidecar.voice.wake import NameMatch, NameMatcher
from sidecar.voice.wake_confirm import AcousticOpinion
from sidecar.voice.wake_nbest import NameHypotheses, NameOdds
from sidecar.voice_loop import listening

from . import harness
from .speech import concat, espeak, noise, silence
from .test_wake_confirm import frames_of

SCOTTISH = {"voice": "en-gb-scotland+f2", "speed": 150}  # the voice of the report


@pytest.fixture(scope="module")
def hypotheses() -> NameHypotheses:
    return NameHypotheses(CT2Transcriber(Models().path(VoiceConfig().ct2_model), 1))


def test_the_name_whisper_missed_is_among_its_best_readings(engines, hypotheses):
    said = concat(silence(0.3), espeak("Hey Stella.", **SCOTTISH), silence(0.3))
    first = engines.transcriber(said, None, "Hey Stella.")
    matcher = NameMatcher("hey stella")
    assert matcher.match(first) is None, f"whisper's first guess now has the name ({first!r}): pick a harder voice"
    readings = hypotheses(said, "Hey Stella.")
    assert len(readings) == hypotheses.n and any(matcher.match(r) for r in readings), readings


class Reads:
    """A model that says which it is."""

    def __init__(self, name: str) -> None:
        self.name = name

    def readings(self, audio: np.ndarray, n: int, prompt: str = "") -> list[str]:
        return [self.name] * n


def in_noise(audio: np.ndarray, snr_db: float, seed: int = 0) -> np.ndarray:
    level = float(np.sqrt(np.mean(audio[audio != 0] ** 2))) / 10 ** (snr_db / 20)
    return audio + noise(len(audio) / RATE, level, seed=seed)


def test_a_noisy_utterance_is_read_by_the_noisy_model_and_a_clean_one_by_the_asrs():
    readings = NameHypotheses(Reads("tiny"), 2, noisy=Reads("base"), noisy_below_db=25)  # type: ignore[arg-type]
    said = concat(silence(0.3), espeak("Hey Stella, what time is it?"), silence(0.3))
    assert readings(said) == ["tiny", "tiny"]
    assert readings(in_noise(said, 10)) == ["base", "base"]
    assert NameHypotheses(Reads("tiny"), 1)(in_noise(said, 10)) == ["tiny"], "no noisy model: the ASR's"  # type: ignore[arg-type]
    assert readings.primed(said, "Hey Stella.") == ["base", "base"], "the model alone's check: base, quiet or not"
    assert NameHypotheses(Reads("tiny"), 1).primed(said, "") == ["tiny"]  # type: ignore[arg-type]


@pytest.mark.parametrize("voice", ["en-us", "en-gb-scotland+f2", "en-gb-x-rp+m3", "en-029", "en-us-nyc+f3", "en-gb+m2"])
def test_the_speech_noise_estimate_tells_a_quiet_room_from_a_noisy_one(voice):
    from sidecar.voice.audio import snr_db

    said = concat(silence(0.3), espeak("Hey Stella, what time is it?", voice=voice), silence(0.3))
    room = said + noise(len(said) / RATE, 0.001, seed=1)  # a quiet room: ~35 dB under the voice
    assert snr_db(room) > 30
    assert 5 < snr_db(in_noise(said, 10)) < 20


def test_in_noise_whisper_base_has_the_name_among_its_readings_where_tiny_often_does_not(hypotheses):
    """Twelve clips at 10 dB SNR: base has the name in (nearly) all; on this machine tiny.en 7 of 12."""
    base = NameHypotheses(CT2Transcriber(Models().path(VoiceConfig().wake_nbest_noisy_model), 2))
    matcher, found = NameMatcher("hey stella"), {"tiny": 0, "base": 0}
    for voice in ("en-us", "en-gb-scotland+f2", "en-gb-x-rp+m3", "en-029", "en-us-nyc+f3", "en-gb+m2"):
        for speed in (140, 170):
            said = concat(silence(0.3), espeak("Hey Stella, what time is it?", voice=voice, speed=speed),
                          silence(0.3))
            noisy = in_noise(said, 10, seed=speed)
            for name, model in (("tiny", hypotheses), ("base", base)):
                found[name] += any(matcher.match(r) for r in model(noisy, "Hey Stella."))
    assert found["base"] >= 10 and found["base"] > found["tiny"], found


def test_whisper_base_prompted_with_the_phrase_leads_with_the_name_in_accents_and_not_in_its_sound_alikes():
    """The model-alone check, on real readings: quiet wake words in the accents of seen sets (Macedonian,
    whose "hej" whisper writes "Hey, why", Cantonese, Arabic, Armenian, Bengali, Belgian French, Georgian)
    have the name first, second or after lead-ins; "I spilt tea on the sofa" and a mention, which the model
    scored as high, do not (on this machine: 15 of 16 wake words, 0 of 16 others)."""
    base = NameHypotheses(CT2Transcriber(Models().path(VoiceConfig().wake_nbest_noisy_model), 1))
    matcher, led = NameMatcher("hey stella"), {"wake": 0, "other": 0}
    for voice in ("mk+m4", "mk+f5", "yue+m2", "ar+f1", "hy+m3", "bn+m5", "fr-be+m6", "ka+m2"):
        for kind, text in (("wake", "Hey Stella, skip this track."), ("wake", "Hey Stella."), ("other", "I spilt tea "
                           "on the sofa."), ("other", "My colleague Stella Price is on holiday.")):
            said = concat(silence(0.3), espeak(text, voice=voice, speed=160), silence(0.3))
            led[kind] += any(map(matcher.leads, base.primed(said, "Hey Stella.")))
    assert led["wake"] >= 14 and led["other"] <= 1, led


@pytest.mark.parametrize("text, voice", [("Please tell us what happened.", {"voice": "en-us"}),
                                         ("Please tell us a story.", {"voice": "en-gb-x-rp+m3"}),
                                         ("Tell us about your day.", {"voice": "en-gb-scotland+f2"})])
def test_look_alikes_from_other_voices_stay_out_of_the_best_readings(hypotheses, text, voice):
    readings = hypotheses(concat(silence(0.3), espeak(text, **voice), silence(0.3)), "Hey Stella.")
    assert not [r for r in readings if NameMatcher("hey stella").match(r)], readings


LOOK_ALIKES = ("Hey Estelle, nice dress.", "Hey Fella, how are you?", "Hey Della, pass the bread.",
               "Hey Sheila, are you coming?", "Hey Stuart, want some tea?")


def test_without_the_prompt_whisper_finds_the_name_likelier_in_wake_words_than_in_look_alikes(hypotheses):
    """Prompted with "Hey Stella." whisper writes the name for these look-alikes too; its own odds
    for the name without the prompt tell them apart: each voice's "Hey Stella" over the default
    floor and above most of its look-alikes, nearly every wake over nearly every look-alike, and half
    the look-alikes under the floor (on an Intel VM the wakes scored -1.6 to -5.7, the look-alikes
    -5.6 to -14.3, 21 of 30 under -9.5). CTranslate2's int8 kernels differ between processors, so a
    near tie may flip: on an AMD EPYC en-us-nyc+f3's "Hey Della" scored -5.14 against its wake's -5.26."""
    floor, name = VoiceConfig().wake_name_floor, NameMatch("", 2, "Hey")
    wakes, others = [], []
    for voice in ("en-us", "en-gb-x-rp+m3", "en-029", "en-us-nyc+f3", "en-gb+m2", "en-gb-scotland+f2"):
        odds = [hypotheses.name_odds(concat(silence(0.3), espeak(text, voice=voice), silence(0.3)), name,
                                     ["Stella", "Stellar"]) for text in ("Hey Stella, what time is it?", *LOOK_ALIKES)]
        assert odds[0] >= floor and sum(odds[0] > o for o in odds[1:]) >= 4, (voice, odds)
        wakes.append(odds[0])
        others += odds[1:]
    ranked = sum(w > o for w in wakes for o in others) / (len(wakes) * len(others))
    assert ranked >= 0.95, f"a wake word over a look-alike in only {ranked:.0%} of pairs"
    below = sum(o < floor for o in others)
    assert below >= 15, f"only {below} of 30 look-alikes under the floor"


class Readings:
    """Scripted n-best readings for the turn taker's logic (the model is tested above): prompted
    with the phrase, and without a prompt."""

    head_s = 3.0

    def __init__(self, readings: list[str], plain: tuple[str, ...] = ("He's still at, what time is it?",),
                 likely: bool = True, enforced: bool = True) -> None:
        self.readings = readings
        self.plain = list(plain)
        self.likely = likely  # whether whisper, unprompted, finds the name likely
        self.enforced = self.name_check = enforced  # whether the floor decides (`wake_name_check`)
        self.scored: list[NameMatch] = []
        self.heard: list[float] = []  # the seconds of audio each check scored

    def __call__(self, audio: np.ndarray, prompt: str = "") -> list[str]:
        assert prompt in ("Hey Stella.", "")
        return self.readings if prompt else self.plain

    def primed(self, audio: np.ndarray, prompt: str) -> list[str]:
        return self(audio, prompt)

    def in_noise(self, audio: np.ndarray) -> bool:
        return self.noisy

    noisy = False  # whether the utterance is heard as noisy

    def check(self, audio: np.ndarray, found: NameMatch, spellings: list[str]) -> NameOdds:
        assert spellings == ["Stella", "Stellar"]
        self.scored.append(found)
        self.heard.append(len(audio) / RATE)
        return NameOdds(-2.0 if self.likely else -12.0, -9.5, enforced=self.enforced)

    def prepare(self, words: str) -> None:
        pass


def utterance(seconds: float) -> UtteranceFrame:
    return UtteranceFrame(audio=np.zeros(int(seconds * RATE), np.float32), start=1.0, end=1.0 + seconds,
                          t=1.3 + seconds, verify_wake=True)


def take(text: str, u: UtteranceFrame, readings: list[str] | Readings, **plain) -> list[Frame]:
    hypotheses = readings if isinstance(readings, Readings) else Readings(readings, **plain)
    return harness.run([TranscriptFrame(text=text, asr_ms=1.0, utterance=u, t=u.t), EndFrame()],
                       [TurnTaker("hey stella", 8, hypotheses=hypotheses)])


def test_a_reading_with_the_name_wakes_and_its_rest_is_the_question():
    out = take("Please tell us what time it is.", utterance(2.0), ["Please tell us what time it is.",
                                                                  "Hey Stella, what time is it?"])
    assert [f.engine for f in out if isinstance(f, WakeFrame)] == ["phrase"]
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["what time is it?"]


def test_a_long_utterance_keeps_the_transcript_after_the_name():
    out = take("Case network, tell me about the history of Rome and Greece.", utterance(5.0),
               ["Hey Stella, tell me about the", "Case network, tell me about the"])
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["tell me about the history of Rome and Greece."]


def test_a_name_only_the_prompted_readings_have_does_not_wake():
    """Prompted with "Hey Stella." whisper writes the name for a Scottish "Hey Bella"; unprompted it
    hears "Here may I": no "s" and "l" where the name would be."""
    out = take("Hey me, what time in it?", utterance(2.0), ["Hey Stella. What time in it?", "What time in it?"],
               plain=("Here may I what time in it?", "hear me a lot, what time in it?"))
    assert not [f for f in out if isinstance(f, (WakeFrame, UserTurnFrame))]
    out = take("Hey me, what time in it?", utterance(2.0), ["Hey Stella. What time in it?", "What time in it?"],
               plain=("Here's the alarm, what time in it?",))
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["What time in it?"]


def test_a_name_whisper_writes_otherwise_without_the_prompt_does_not_wake():
    """Prompted, whisper writes "Hey Stella." for "Hey Estelle" among its next guesses; its transcript or its
    unprompted readings write the other name."""
    out = take("Hey Estelle, good morning.", utterance(2.0),
               ["Hey Estelle, good morning.", "Hey Stella, good morning."])
    assert not [f for f in out if isinstance(f, (WakeFrame, UserTurnFrame))], "the transcript has the other name"
    out = take("Hey a style, good morning.", utterance(2.0), ["Hey Stella, good morning."],
               plain=("Hey Estelle, good morning.", "Hey, Estelle. Good morning."))
    assert not [f for f in out if isinstance(f, (WakeFrame, UserTurnFrame))], "an unprompted reading has it"
    out = take("Hey a style, good morning.", utterance(2.0), ["Hey Stella, good morning."],
               plain=("Hey a stellar, good morning.",))
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["good morning."]


def test_a_name_whisper_finds_unlikely_without_the_prompt_does_not_wake():
    """Found in the transcript or in a reading, the name is scored with what came before it."""
    unlikely = Readings(["Hey Stella, nice dress."], likely=False)
    out = take("Hey Stella, nice dress.", utterance(2.0), unlikely)
    assert not [f for f in out if isinstance(f, (WakeFrame, UserTurnFrame))]
    assert [(m.lead, m.rest) for m in unlikely.scored] == [("Hey", "nice dress.")]
    assert [(f.heard, f.odds, f.floor, f.woke) for f in out if isinstance(f, WakeCheckFrame)] == [
        (True, -12.0, -9.5, False)], "settings' meter is told the name was heard but not likely"
    likely = Readings(["Hey Stella, what time is it?"])
    out = take("Case Taylor, what time is it?", utterance(2.0), likely)
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["what time is it?"]
    assert [(f.heard, f.woke) for f in out if isinstance(f, WakeCheckFrame)] == [(True, True)]
    assert [m.lead for m in likely.scored] == ["Hey"], "a \"hey\" whisper ran into the next word is given back"
    out = take("Hey Della, nice dress.", utterance(2.0), unlikely := Readings(["Hey Della, nice dress."],
                                                                             likely=False))
    assert not unlikely.scored, "no name, nothing to score"
    assert [(f.heard, f.odds, f.woke) for f in out if isinstance(f, WakeCheckFrame)] == [(False, None, False)]


def test_with_the_name_check_off_an_unlikely_name_still_wakes_and_the_meter_gets_its_odds():
    """The default (`wake_name_check` false): the odds are only shown, once the turn has gone on."""
    u = utterance(2.0)
    out = harness.run([TranscriptFrame(text="Hey Stella, nice dress.", asr_ms=1.0, utterance=u, t=u.t), 0.2,
                       EndFrame()], [TurnTaker("hey stella", 8, hypotheses=Readings([], likely=False, enforced=False))])
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["nice dress."]
    assert [(f.heard, f.odds, f.floor, f.woke) for f in out if isinstance(f, WakeCheckFrame)] == [
        (True, -12.0, -9.5, True)]


def test_the_name_check_started_at_the_pause_is_not_run_again_for_the_final_transcript():
    u = utterance(2.0)
    pause = dataclasses.replace(u, final=False)
    checks = Readings([])
    out = harness.run([EarlyTranscriptFrame(text="Hey Stella, what time is it?", utterance=pause, t=u.t),
                       TranscriptFrame(text="Hey Stella, what time is it?", asr_ms=1.0, utterance=u, t=u.t),
                       EndFrame()], [TurnTaker("hey stella", 8, hypotheses=checks)])
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["what time is it?"]
    assert len(checks.scored) == 1
    longer = dataclasses.replace(u, end=u.end + 1.0, audio=np.zeros(3 * RATE, np.float32))
    harness.run([EarlyTranscriptFrame(text="Hey Stella, what", utterance=pause, t=u.t),
                 TranscriptFrame(text="Hey Stella, what time is it?", asr_ms=1.0, utterance=longer, t=u.t + 1),
                 EndFrame()], [TurnTaker("hey stella", 8, hypotheses=(checks := Readings([])))])
    assert checks.heard[-1] == 3.0, "the user went on after the pause: the final utterance is checked anew"


def test_no_reading_with_the_name_is_not_addressed():
    out = take("Please tell us a story.", utterance(2.0), ["Please tell us a story.", "Please tell her a story."])
    assert not [f for f in out if isinstance(f, (WakeFrame, UserTurnFrame))]


class Counted(Readings):
    def __init__(self, readings: list[str]) -> None:
        super().__init__(readings)
        self.asked = 0

    def __call__(self, audio: np.ndarray, prompt: str = "") -> list[str]:
        self.asked += 1
        return super().__call__(audio, prompt)


def test_the_question_after_a_bare_wake_word_is_taken_without_asking_for_readings():
    """The window already addresses it: the n-best check would only delay the reply (~0.2 s)."""
    readings = Counted(["Hey Stella."])
    bare = UtteranceFrame(audio=np.zeros(RATE, np.float32), start=1.0, end=2.0, t=2.3, verify_wake=True)
    question = UtteranceFrame(audio=np.zeros(2 * RATE, np.float32), start=2.6, end=4.6, t=4.9, verify_wake=True)
    out = harness.run([TranscriptFrame(text="Hey Stella.", asr_ms=1.0, utterance=bare, t=bare.t),
                       TranscriptFrame(text="What time is it?", asr_ms=1.0, utterance=question, t=question.t),
                       EndFrame()], [TurnTaker("hey stella", 8, hypotheses=readings)])
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["What time is it?"]
    assert readings.asked == 0


def front_end(engines, hypotheses: NameHypotheses | None, audio: np.ndarray) -> list[Frame]:
    """Real VAD, whisper and (if given) the n-best check: the phrase engine's listening path."""
    phrase = dataclasses.replace(engines, wake=None, hypotheses=hypotheses)
    config = VoiceConfig(wake_engine="phrase", wake_phrase="hey stella", wake_acoustic=False)  # whisper's say alone
    return harness.run([*frames_of(audio), EndFrame()], listening(config, phrase, harness.Feed([]))[1:], timeout=120)


# Scottish voices saying the name, then a question. Single clips sit on whisper tiny's decision edge:
# the issue's own clip (f2 at 150 wpm) wakes her on one CPU and not on another (CTranslate2's int8
# kernels differ between processors), and a 70 ms shift of the utterance's start flips its n-best
# readings. So the front end is judged on twelve clips: with the n-best check 9 woke her on this
# machine's Xeon, without it 6.
SCOTTISH_VOICES = [(voice, speed) for voice in ("en-gb-scotland+f2", "en-gb-scotland", "en-gb-scotland+m3",
                                                "en-gb-scotland+f4") for speed in (140, 150, 165)]


def test_the_phrase_front_end_wakes_on_scottish_voices_more_often_with_the_n_best_check(engines, hypotheses):
    woke = {True: 0, False: 0}
    for voice, speed in SCOTTISH_VOICES:
        audio = concat(silence(1.0), espeak("Hey Stella.", voice=voice, speed=speed), silence(1.5),
                       espeak("What time is it?", voice=voice, speed=speed), silence(2.0))
        for nbest in (True, False):
            out = front_end(engines, hypotheses if nbest else None, audio)
            turns = [f.text for f in out if isinstance(f, UserTurnFrame)]
            if [f for f in out if isinstance(f, WakeFrame)]:
                woke[nbest] += 1
                assert len(turns) == 1, (voice, speed, turns)  # the question (its words are whisper's business)
    assert woke[True] >= 2 * len(SCOTTISH_VOICES) // 3, woke
    assert woke[True] > woke[False], f"the n-best check woke her no more often: {woke}"


@pytest.mark.parametrize("voice", ["en-gb-scotland+f2", "en-gb-scotland", "en-us", "piper"])
def test_look_alikes_do_not_wake_the_phrase_front_end(engines, hypotheses, piper, voice):
    say = piper if voice == "piper" else lambda text: espeak(text, voice=voice, speed=150)
    for text in ("Please tell us what happened.", "Please tell us a story.", "Hey Bella, what time is it?"):
        out = front_end(engines, hypotheses, concat(silence(1.0), say(text), silence(2.0)))
        assert not [f for f in out if isinstance(f, (WakeFrame, UserTurnFrame))], (voice, text)


def test_the_model_alone_wakes_her_only_if_whisper_prompted_with_the_phrase_writes_the_name():
    """The model was as sure (0.98) of an Arabic voice's "I spilt tea on the sofa" as of a Cantonese
    "Hey Stella" whisper wrote "Okay, step look": prompted with the phrase, whisper (base) has the name
    first or second among its readings of the second, never of the first; what that reading says after
    the name is the question said in the same breath. In noise, where whisper misses accented names, the
    model alone decides; without such a reading she listens for the question."""
    def sure_of(text: str, readings: list[str], noisy: bool = False, seconds: float = 2.0) -> list[Frame]:
        u = dataclasses.replace(utterance(seconds), wake_score=0.98)
        hypotheses = Readings(readings)
        hypotheses.noisy = noisy
        return harness.run([TranscriptFrame(text=text, asr_ms=1.0, utterance=u, t=u.t), EndFrame()],
                           [TurnTaker("hey stella", 8, hypotheses=hypotheses,
                                      acoustic=AcousticOpinion(floor=0.6, sure=0.97))])
    spilt = sure_of("I've still teed on the sofa.", ["I've filled D on the sofa.", "I've built D on the sofa."])
    assert not [f for f in spilt if isinstance(f, (WakeFrame, UserTurnFrame, ListeningFrame))]
    assert [f.acoustic for f in spilt if isinstance(f, WakeCheckFrame)] == [0.98], "the meter shows the model's say"
    step = sure_of("Okay, step look.", ["Hey Stella.", "Hey Stella, I am the enemy."])
    assert [f.engine for f in step if isinstance(f, WakeFrame)] == ["phrase"]
    assert [f for f in step if isinstance(f, ListeningFrame)], "a bare wake word: she listens for the question"
    assert not [f for f in step if isinstance(f, UserTurnFrame)]
    snow = sure_of("Since they love it snow?", ["Since Stella will it snow?"])
    assert [f.engine for f in snow if isinstance(f, WakeFrame)] == ["phrase"]
    assert [f.text for f in snow if isinstance(f, UserTurnFrame)] == ["will it snow?"], \
        "the question said in the same breath, as the reading that led with the name has it"
    split = sure_of("Hey, why still that? Skip this track.", ["Hey, why Stella? Skip this track."])
    assert [f.engine for f in split if isinstance(f, WakeFrame)] == ["phrase"], "a greeting said as two words"
    assert [f.text for f in split if isinstance(f, UserTurnFrame)] == ["Skip this track."]
    long = sure_of("Okay, step look, tell me about the history of Rome.", ["Hey Stella, tell me about the"],
                   seconds=5.0)
    assert [f.text for f in long if isinstance(f, UserTurnFrame)] == ["look, tell me about the history of Rome."], \
        "past the readings' 3 s, the transcript after as many words"
    mention = sure_of("My colleagues tell her prices on holiday.", ["My colleague Stella Price is on holiday."])
    assert not [f for f in mention if isinstance(f, WakeFrame)], "her name as the third word is a mention"
    noisy = sure_of("Who still have a house hidden?", ["Who's still a lumbar hand-sharing?"], noisy=True)
    assert [f.engine for f in noisy if isinstance(f, WakeFrame)] == ["phrase"], "in noise the model alone decides"
    assert [f for f in noisy if isinstance(f, ListeningFrame)] and not [
        f for f in noisy if isinstance(f, UserTurnFrame)], "no reading in noise: a bare wake word"
    noisy = sure_of("Who still have a house hidden? Tell me about the history of Rome.", [], noisy=True, seconds=5.0)
    assert not [f for f in noisy if isinstance(f, UserTurnFrame)], "nor is a long utterance's transcript taken"
    noisy = sure_of("Who still have a house hidden?", ["Hey Stella, how is the house heated?"], noisy=True)
    assert [f.text for f in noisy if isinstance(f, UserTurnFrame)] == ["how is the house heated?"], \
        "a reading that leads with the name gives the question in noise too"
