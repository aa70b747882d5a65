"""Deciding which speech is meant for Stella, and turning it into user turns.

Two processors around ASR, so whisper only runs on speech that may be addressed:

* `WakeGate` (before ASR) lets through what may be addressed: push-to-talk speech, speech
  that contains or follows an acoustic wake word (within `wake_window_s`), and — with the
  custom-phrase engine — every utterance, since whisper has to look for the name in it.
  With the acoustic engine, idle chatter costs no ASR at all; with the two-stage engine only
  utterances holding a trigger's candidate (sidecar.voice.wake_confirm) reach whisper, marked
  for the name check like the phrase engine's.
* `TurnTaker` (after ASR) decides with the transcripts in order: it strips the wake phrase
  ("Hey Jarvis, what time is it?" -> "what time is it?"), checks the custom phrase's name
  token, and starts a turn with what is left. A bare wake word ("Hey Stella.") makes the next
  utterance within the window addressed; a turn spends the wake word. Typed text becomes a
  turn directly.

Speech that cut Stella off (barge-in) is addressed to her like push-to-talk speech: no wake
word. Before a turn starts, the turn taker checks for a local intent (sidecar.intents): "stop"
interrupts without a new turn, volume and outfit requests become frames for playback and the
character — no round trip to the model; a clock question becomes a turn that carries its own
answer, so it is shown, spoken and kept in the history like any reply.

The gate never needs to hear back from the turn taker: it only filters, the turn taker keeps
the state that matters, so a slow transcript can never let a question slip past.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

import numpy as np

from sidecar.frames import (
    AddressedFrame,
    EarlyTranscriptFrame,
    Frame,
    InterruptionFrame,
    LikelyTurnFrame,
    ListeningFrame,
    OutfitFrame,
    TranscriptFrame,
    UserTextFrame,
    UserTurnFrame,
    UtteranceFrame,
    VolumeFrame,
    WakeCheckFrame,
    WakeFrame,
)
from sidecar.intents import Intents, Stop, Tell, Volume, Wear
from sidecar.pipeline import Direction, Processor
from sidecar.voice.audio import RATE
from sidecar.voice.wake import FUSED_LEAD_INS, LEAD_INS, NameMatch
from sidecar.voice.wake_confirm import AcousticOpinion, WakeCandidateFrame, WakeCandidates
from sidecar.voice.wake_nbest import NameOdds
from sidecar.voice.wake_pinyin import name_matcher, phrase_prompt

log = logging.getLogger(__name__)
T = TypeVar("T")

class Hypotheses(Protocol):
    """Whisper's second opinion on an utterance's first `head_s` seconds (wake_nbest.NameHypotheses):
    its n-best readings, and whether the name it wrote is likely without the prompt."""

    head_s: float
    name_check: bool  # whether the odds decide (else they are only shown)

    def __call__(self, audio: np.ndarray, prompt: str = "") -> list[str]: ...

    def primed(self, audio: np.ndarray, prompt: str) -> list[str]: ...

    def in_noise(self, audio: np.ndarray) -> bool: ...

    def check(self, audio: np.ndarray, found: NameMatch, spellings: list[str]) -> NameOdds: ...

    def prepare(self, words: str) -> None: ...


# A wake word detected this long after an utterance ended still belongs to it (detection lag).
WAKE_SLACK_S = 0.5


def settled(text: str) -> str:
    """The words of a transcript of speech still going on that will stay: all but the last, which
    may have been cut mid-word ("What is the tal" -> "What is the")."""
    return text.rsplit(maxsplit=1)[0] if len(text.split()) > 1 else ""


class WakeWindow:
    """After a wake word at `t`, speech that ends after it and starts within `window_s` of it
    is addressed — until a turn is taken (`spend`)."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.t: float | None = None
        self._spent = True

    def wake(self, t: float) -> None:
        self.t, self._spent = t, False

    def spend(self) -> None:
        self._spent = True

    def covers(self, utterance: UtteranceFrame) -> bool:
        return (not self._spent and self.t is not None
                and utterance.end + WAKE_SLACK_S >= self.t and utterance.start <= self.t + self.window_s)

    def inside(self, utterance: UtteranceFrame) -> bool:
        """The wake word was said within this utterance (so its transcript starts with it)."""
        return self.t is not None and utterance.start <= self.t <= utterance.end + WAKE_SLACK_S


class WakeGate(Processor):
    """Interim utterances (the user still speaking) pass when the speech is addressed already; of
    speech that may hold the name, only the first passes, and the rest once the turn taker has
    heard the name in its words so far (`AddressedFrame`): chatter costs one run, not one a second."""

    def __init__(self, engine: str, window_s: float, max_utterance_s: float = 20.0, *, acoustic: bool = False,
                 lead_s: float | None = None) -> None:
        super().__init__()
        self.engine = engine
        self.acoustic = acoustic  # the phrase engine has an acoustic model's candidates too
        self.lead_s = lead_s  # only candidates this early in an utterance weigh in (wake_confirm)
        self.window = WakeWindow(window_s)
        self.candidates = WakeCandidates(max_utterance_s + 2.0)
        self._interim_of: float | None = None  # the speech (its start) whose first interim passed
        self._named: float | None = None  # the speech (its start) the name was heard in

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, AddressedFrame):
            self._named = frame.start
            return
        if isinstance(frame, WakeFrame):
            self.window.wake(frame.t)
        elif isinstance(frame, WakeCandidateFrame):
            # The question after a bare wake word must reach ASR too; the turn taker takes it
            # only if the candidate was confirmed. (The phrase engine's gate lets all speech through.)
            if self.engine == "two_stage":
                self.window.wake(frame.t)
            self.candidates.trigger(frame.t, frame.score, frame.personal)
            for dropped in self.candidates.expire(frame.t):
                log.debug("wake candidate at %.2f s dropped: no speech around it", dropped.t)
            return
        elif isinstance(frame, UtteranceFrame) and not (self._admit(frame) and self._worth_it(frame)):
            if frame.final:
                log.info("not addressed: ignoring %.1f s of speech", frame.end - frame.start)
            return
        await self.push(frame, direction)

    def _worth_it(self, utterance: UtteranceFrame) -> bool:
        """An admitted interim utterance is worth transcribing (see the class)."""
        if not utterance.interim or not utterance.verify_wake or self._named == utterance.start:
            return True
        first, self._interim_of = self._interim_of != utterance.start, utterance.start
        return first

    def _admit(self, utterance: UtteranceFrame) -> bool:
        if utterance.push_to_talk or utterance.barge_in or self.engine == "off":
            return True
        if self.engine == "two_stage" and self.candidates.held(utterance.start, utterance.end) is not None:
            utterance.verify_wake = True  # the turn taker confirms (or not) with the name
            self._weigh(utterance)
            return True
        if self.window.covers(utterance):
            if self.window.inside(utterance):
                utterance.wake_inside = True
            return True
        if self.engine == "phrase":
            utterance.verify_wake = True
            if self.acoustic:  # the phrase engine has the acoustic model's opinion too
                self._weigh(utterance)
            return True
        return False

    def _weigh(self, utterance: UtteranceFrame) -> None:
        """The acoustic model's opinion goes with the utterance: its best candidate early enough to be
        a wake word (0: it heard nothing like the name there); the final frame spends the candidates."""
        early = self.candidates.held(utterance.start, utterance.end, self.lead_s)
        utterance.wake_score = early.score if early is not None else 0.0
        utterance.wake_personal = early.personal if early is not None else None
        if utterance.final:
            self.candidates.spend(utterance.end)


class TurnTaker(Processor):
    """`wake_word` is what the active engine listens for ("hey stella" or "hey_jarvis");
    `intents` (optional) handles stop, volume and outfit requests locally."""

    def __init__(self, wake_word: str, window_s: float, *, engine: str = "phrase",
                 intents: Intents | None = None, hypotheses: Hypotheses | None = None,
                 acoustic: AcousticOpinion | None = None) -> None:
        super().__init__()
        self.engine = engine
        self.acoustic = acoustic  # how an acoustic model's score weighs against whisper's reading
        self.intents = intents
        self.wake_word = wake_word
        self.matcher = name_matcher(wake_word)  # by pinyin for a Mandarin phrase
        self.hypotheses = hypotheses  # whisper's n-best, asked when the transcript lacks the name
        self.prompt = phrase_prompt(wake_word)
        self.window = WakeWindow(window_s)
        self._turns = 0
        self._background: set[asyncio.Task] = set()  # held until done (the loop keeps only weak references)
        # the name check a pause started: ((utterance start, end, words before the name), its task)
        self._checking: tuple[tuple[float, float, str], asyncio.Task[NameOdds]] | None = None
        self._hearing: tuple[tuple[float, float], asyncio.Task[bool]] | None = None  # `_sounds_so`, from the pause

    async def start(self) -> None:
        """Ready the name check's words in the background (the lead-ins as whisper writes them, the name)."""
        if self.hypotheses is not None and self.engine in ("phrase", "two_stage"):
            spoken = sorted(LEAD_INS | FUSED_LEAD_INS)
            words = " ".join([*spoken, *(w.title() for w in spoken), *self.matcher.spellings, ", . ! ?"])
            self._in_background(asyncio.to_thread(self.hypotheses.prepare, words), "wake-prepare")

    async def stop(self) -> None:
        await asyncio.gather(*self._background, return_exceptions=True)  # a worker thread cannot be cancelled

    def _in_background(self, work: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        task = asyncio.create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, WakeFrame):
            self.window.wake(frame.t)
        elif isinstance(frame, TranscriptFrame):
            await self._transcript(frame.text, frame.utterance)
            return
        elif isinstance(frame, EarlyTranscriptFrame):
            await self._early(frame.text, frame.utterance)
            return
        elif isinstance(frame, UserTextFrame):
            if frame.text.strip():
                await self._turn(frame.text.strip(), "text", None)
            return
        await self.push(frame, direction)

    def _without_wake(self, utterance: UtteranceFrame) -> bool:
        """Addressed with no wake word to find: push-to-talk, a barge-in, or no wake word at all."""
        return utterance.push_to_talk or utterance.barge_in or self.engine == "off"

    def _name_in(self, text: str, utterance: UtteranceFrame) -> NameMatch | None:
        return self.matcher.match(text) if utterance.wake_inside or utterance.verify_wake else None

    async def _early(self, text: str, utterance: UtteranceFrame) -> None:
        """Whisper's words so far (at a pause, or while the user speaks): the turn they would start
        goes on to the reply; the name heard in them tells the gate to go on transcribing, and at a
        pause starts the name's check, which the final transcript then finds done."""
        if utterance.verify_wake and (found := self.matcher.match(text)) is not None:
            await self.push(AddressedFrame(start=utterance.start), Direction.UP)
            if not utterance.interim and self.hypotheses is not None:
                self._checking = (utterance.start, utterance.end, found.lead), self._in_background(
                    self._odds(found, utterance), "wake-name-check")
                if self.matcher.confirms:
                    self._hearing = (utterance.start, utterance.end), self._in_background(
                        self._unprompted_sounds_so(utterance), "wake-phrase-confirm")
        if utterance.interim:
            text = settled(text)
        likely = self._likely_turn(text, utterance)
        if likely is not None:
            await self.push(LikelyTurnFrame(text=likely, at_pause=not utterance.interim))

    def _likely_turn(self, text: str, utterance: UtteranceFrame) -> str | None:
        """The words of the turn `text` would start if it were final, changing nothing; None if it
        would start none, be handled locally, or need whisper's n-best (too slow to guess with)."""
        if self._without_wake(utterance):
            likely = text
        elif (found := self._name_in(text, utterance)) is not None:
            likely = found.rest
        else:
            likely = text if self.window.covers(utterance) else ""
        if not likely or (self.intents is not None and self.intents.parse(likely) is not None):
            return None
        return likely

    async def _transcript(self, text: str, utterance: UtteranceFrame) -> None:
        score = utterance.wake_score if self.acoustic is not None and utterance.verify_wake else None
        personal = utterance.wake_personal
        sure = score is not None and self.acoustic.sure_of(score, personal)  # type: ignore[union-attr]
        if not text and not sure:  # (whisper may hear nothing in an accent the model is sure of)
            return
        if self._without_wake(utterance):
            await self._take(text, utterance)
            return
        found = self._name_in(text, utterance)
        addressed = self.window.covers(utterance)  # after a bare wake word: no n-best wait (~0.2 s)
        unconfirmed = found is not None and utterance.verify_wake and not addressed \
            and not await self._sounds_so(utterance)
        if unconfirmed:  # whisper's unprompted readings were asked already: no second guess either
            found = None
        if found is None and not unconfirmed and utterance.verify_wake and self.hypotheses is not None \
                and not addressed and (score is None or self.acoustic.asks_whisper(score, personal)):  # type: ignore[union-attr]
            found = await self._second_guess(text, utterance)
        heard = found is not None  # whisper wrote the name (the model may still refuse it)
        # the model alone was wrong: "I spilt tea on the sofa", "Hey, spell it for me"
        alone = sure and found is None and not addressed and utterance.verify_wake  # the model's say only
        primed = await self._primed(utterance, score) if alone else None
        alone_wrong = alone and primed is None
        if score is not None and not addressed:
            found = None if alone_wrong else self._weigh(found, score, personal)
            if found is not None and primed is not None and primed.upto:  # the question in base's words
                found = self._covered(primed, text, utterance)
        elif sure and found is None:  # her name again in what follows a wake word: it is the question all the same
            await self.push(WakeFrame(word=self.wake_word, score=1.0, engine=self.engine, t=utterance.end))
            self.window.wake(utterance.end)
        if utterance.verify_wake and not addressed:
            if found is None:
                await self.push(WakeCheckFrame(engine=self.engine, heard=heard, t=utterance.end,
                                               **self._acoustic_check(utterance)))
            elif self.hypotheses is not None and self.hypotheses.name_check:
                odds = await self._likely_name(found, utterance)
                found = found if odds.taken else None
                await self._report(odds, found is not None, utterance)
            else:  # the odds are only shown: the turn does not wait for them
                self._in_background(self._report_later(found, utterance), "wake-report")
        if found is not None:
            if utterance.verify_wake:  # the custom-phrase engine (or the two-stage one) just heard its name
                await self.push(WakeFrame(word=self.wake_word, score=1.0, engine=self.engine, t=utterance.end))
                self.window.wake(utterance.end)
            if found.rest:
                await self._take(found.rest, utterance)
            else:  # a bare wake word: the next utterance is the question
                await self.push(ListeningFrame(until=round(self.window.t + self.window.window_s, 3)))
            return
        if addressed and text:  # follows a wake word (or whisper misspelt the one in it)
            await self._take(text, utterance)
        else:
            log.info("not addressed: ignoring %d chars of speech", len(text))
            log.debug("not addressed: %r", text)

    def _weigh(self, found: NameMatch | None, score: float, personal: float | None) -> NameMatch | None:
        """The acoustic model's say: a name whisper wrote that did not sound like it is dropped; one
        the model is sure of wakes her without whisper (its question is what whisper base's reading
        that led with the name says after it, in a quiet room: `_primed`). Once the user enrolled,
        the verifier's say decides with the model's (`AcousticOpinion`)."""
        assert self.acoustic is not None
        if not self.acoustic.weigh(score, found is not None, personal):
            if found is not None:
                log.info("a name whisper wrote that did not sound like it (acoustic %.2f, voice %s): not taken",
                         score, "-" if personal is None else f"{personal:.2f}")
            return None
        if found is None:
            log.info("the acoustic model heard the name (%.2f) where whisper did not", score)
            return NameMatch("")
        return found

    async def _second_guess(self, text: str, utterance: UtteranceFrame) -> NameMatch | None:
        """The name in one of whisper's n-best readings of the utterance's start; the rest is
        that reading's if it covers the utterance, else the transcript after as many words.

        Those readings are prompted with the phrase, which makes whisper write the name for a
        look-alike too ("Hey Bella" -> "Hey Stella."). So the name must also *sound* there without
        the prompt: its first consonant, then another of its consonants, at the start of one of
        the unprompted readings (`NameMatcher.sounds_in`). Where the transcript or an unprompted reading
        writes another name shaped like it instead ("Hey Estelle": `NameMatcher.hears_another`), none is
        looked for: whisper heard that name, and its prompted guesses would write hers for it."""
        assert self.hypotheses is not None
        if self.matcher.hears_another(text):  # whisper's best guess is another name: not hers misheard
            log.info("whisper wrote another name shaped like hers: not taken")
            return None
        readings = await asyncio.to_thread(self.hypotheses, utterance.audio, self.prompt)
        found = next((m for m in map(self.matcher.match, readings) if m is not None), None)
        if found is None:
            return None
        plain = await asyncio.to_thread(self.hypotheses, utterance.audio, "")
        if not any(map(self.matcher.sounds_in, plain)) or any(map(self.matcher.hears_another, plain)):
            log.info("a wake word only whisper's prompted readings had: not taken")
            log.debug("the name only in prompted readings %r; without the prompt %r", readings, plain)
            return None
        log.debug("wake word in whisper's n-best: %r for %r (without the prompt: %r)", readings, text, plain)
        return self._covered(found, text, utterance)

    async def _sounds_so(self, utterance: UtteranceFrame) -> bool:
        """Whether the phrase whisper wrote (prompted with it) sounds so without the prompt, where the matcher
        asks for that (Mandarin: "你好晓晴" written "你好小星。"): in one of whisper's unprompted readings of the
        utterance's head (`sounds_in`). Without the n-best model the transcript is taken as written."""
        if not self.matcher.confirms or self.hypotheses is None:
            return True
        early, self._hearing = self._hearing, None
        if early is not None and early[0] == (utterance.start, utterance.end):
            return await early[1]  # started at the pause on the same audio: ~0.2 s off the turn
        if early is not None:
            early[1].cancel()
        return await self._unprompted_sounds_so(utterance)

    async def _unprompted_sounds_so(self, utterance: UtteranceFrame) -> bool:
        assert self.hypotheses is not None
        plain = await asyncio.to_thread(self.hypotheses, utterance.audio, "")
        if any(map(self.matcher.sounds_in, plain)):
            return True
        log.info("the wake phrase only in the prompted transcript, not in whisper's unprompted readings: not taken")
        log.debug("unprompted readings %r", plain)
        return False

    def _covered(self, found: NameMatch, text: str, utterance: UtteranceFrame) -> NameMatch:
        """A reading's name and what follows it: the reading's own words if it covers the utterance (the
        readings are of its first `head_s`), else the transcript after as many words."""
        assert self.hypotheses is not None
        if len(utterance.audio) / RATE <= self.hypotheses.head_s:
            return found
        return NameMatch(" ".join(text.split()[found.upto:]), found.upto)

    async def _primed(self, utterance: UtteranceFrame, score: float | None) -> NameMatch | None:
        """The name as whisper base (`Hypotheses.primed`), prompted with the phrase, writes it first or
        second in one of its n-best readings of an utterance the model alone is sure of in a quiet room,
        with the words after it (the question said in the same breath); None if no reading has it.
        An accented "Hey Stella" tiny.en wrote as "Okay, step look" is "Hey Stella." or "Jens Stella"
        among them; "I spilt tea on the sofa" and "Hey, spell it for me", which the model was as sure of,
        stay themselves, even so prompted. In noise (and with no n-best to ask) the model is trusted
        whatever the readings say, a bare wake word if none has the name (she listens for the question):
        whisper base missed the name there in 12 of seen v7's accented wake words the model was sure of."""
        if self.hypotheses is None:
            return NameMatch("")
        readings = await asyncio.to_thread(self.hypotheses.primed, utterance.audio, self.prompt)
        if found := next(filter(None, map(self.matcher.leading, readings)), None):
            return found
        if self.hypotheses.in_noise(utterance.audio):
            return NameMatch("")
        log.info("the acoustic model alone heard the name (%.2f), whisper prompted with it did not: not taken",
                 score or 0.0)
        log.debug("the model's name not in whisper's prompted readings %r", readings)
        return None

    async def _likely_name(self, found: NameMatch, utterance: UtteranceFrame) -> NameOdds:
        """Whisper's odds for the name without the prompt (not taken: a look-alike, "Hey Estelle"
        written "Hey Stella." because the prompt spells the name). The check the pause started is
        used if it scored the same audio and words."""
        early, self._checking = self._checking, None
        if early is not None and early[0] == (utterance.start, utterance.end, found.lead):
            odds = await early[1]
        else:
            if early is not None:
                early[1].cancel()
            odds = await self._odds(found, utterance)
        if not odds.taken:
            log.info("a name whisper wrote only because it was prompted: not taken")
        return odds

    async def _report(self, odds: NameOdds, woke: bool, utterance: UtteranceFrame) -> None:
        await self.push(WakeCheckFrame(engine=self.engine, heard=True, odds=odds.odds, floor=odds.floor, woke=woke,
                                       **self._acoustic_check(utterance),
                                       t=utterance.end))

    def _acoustic_check(self, utterance: UtteranceFrame) -> dict[str, float | None]:
        """The acoustic model's say for the meter: its best score in the utterance and its floor (and the
        enrolled voice's verifier's, with the score under which it is another voice's)."""
        if self.acoustic is None or utterance.wake_score is None:
            return {}
        said = {"acoustic": round(utterance.wake_score, 3), "acoustic_floor": self.acoustic.floor}
        if utterance.wake_personal is not None:
            said |= {"voice": round(utterance.wake_personal, 3), "voice_floor": self.acoustic.stranger}
        return said

    async def _report_later(self, found: NameMatch, utterance: UtteranceFrame) -> None:
        await self._report(await self._likely_name(found, utterance), True, utterance)

    async def _odds(self, found: NameMatch, utterance: UtteranceFrame) -> NameOdds:
        if self.hypotheses is None:  # no second opinion: the name is taken as written
            return NameOdds(None)
        return await asyncio.to_thread(self.hypotheses.check, utterance.audio, found, self.matcher.spellings)

    async def _take(self, text: str, utterance: UtteranceFrame) -> None:
        self.window.spend()
        await self._turn(text, "push_to_talk" if utterance.push_to_talk else "voice", utterance.end)

    async def _turn(self, text: str, source: str, speech_end: float | None) -> None:
        intent = self.intents.parse(text) if self.intents is not None else None
        if isinstance(intent, Stop):
            await self.push(InterruptionFrame(reason="stop"))
        elif isinstance(intent, Volume):
            await self.push(VolumeFrame(step=intent.step))
        elif isinstance(intent, Wear):
            await self.push(OutfitFrame(id=intent.outfit, source="user"))
        if intent is not None and not isinstance(intent, Tell):
            log.info("handled locally: %s", intent)
            log.debug("handled locally: %r -> %s", text, intent)
            return
        self._turns += 1
        answer = intent.text if isinstance(intent, Tell) else None
        if answer is not None:
            log.info("answered locally: a clock question")
        await self.push(UserTurnFrame(turn=self._turns, text=text, source=source, speech_end=speech_end,
                                      local_answer=answer))
