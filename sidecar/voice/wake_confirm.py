"""The two-stage acoustic wake word: a cheap trigger opens a candidate, whisper confirms it.

An acoustic model alone cannot tell "hey jarvis" from "hey travis" said by a voice it never
heard (pyopen-wakeword scored such look-alikes 0.76–0.98), and set strict enough to refuse
them it misses accented wake words. So the trigger (microWakeWord, ~6 ms of CPU per second of
audio) is set permissive and only *opens a candidate*; the candidate wakes Stella only if

1. the VAD heard speech around it (the VAD gate: a trigger on music, a door or a fan never
   costs whisper anything and never wakes), and
2. whisper, prompted with the phrase, hears the name in that utterance (`NameMatcher`,
   spelling within one edit or the same phonetic key) — the turn taker's check.

`WakeCandidates` is the sans-I/O bookkeeping of stage 1: candidates in, "does this utterance
hold one?" out, stale ones dropped. Times are stream seconds; no clock is read here.

`AcousticOpinion` weighs the acoustic model's best score in an utterance against whisper's
reading of it, for the two-stage engine and for the phrase engine when a trained model of its
phrase listens beside whisper ("hey stella": sidecar/voice/wake_net.py): under `floor` a name
whisper wrote is a look-alike ("Hey Della" written "Hey Stella." because the prompt spells the
name); at `sure` or over, the model alone wakes her, whatever whisper wrote (an accent whisper
turns into "Thank you for watching."). Only the scores in an utterance's first `lead_s` count: a
wake word opens what the user says, so the name later in a sentence ("a film with Stella Morris
in it") is a mention, however sure the model is of it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sidecar.config import VoiceConfig
from sidecar.frames import ControlFrame

log = logging.getLogger(__name__)

# A trigger fires at the end of the wake word, up to this long after the VAD's utterance
# ended (the model's window lags), or shortly before the VAD opened it (pre-roll).
SLACK_S = 0.6


@dataclass(kw_only=True)
class WakeCandidateFrame(ControlFrame):
    """The acoustic trigger may have heard the wake word at `t` (not a wake: unconfirmed)."""

    word: str
    score: float
    personal: float | None = None  # the enrolled user's verifier's score (None: nobody enrolled)


@dataclass(frozen=True)
class AcousticOpinion:
    """Once the user enrolled (a `personal` score given: their verifier's), three bands: at
    `personal` or over, a score over `floor` wakes her whatever whisper wrote (her voice); under
    `stranger`, nothing does (another voice); between, the rule as before enrolment (a voice the
    verifier is unsure of: her own in a noisy room, a cold)."""

    floor: float
    sure: float
    personal: float = 0.9
    stranger: float = 0.7

    @classmethod
    def of(cls, voice: VoiceConfig) -> AcousticOpinion:
        return cls(voice.wake_acoustic_floor, voice.wake_acoustic_sure, voice.wake_personal, voice.wake_stranger)

    def sure_of(self, score: float, personal: float | None = None) -> bool:
        """The model alone wakes her, whatever whisper wrote."""
        if personal is not None and personal >= self.personal:
            return score >= self.floor
        return not self.stranger_to(personal) and score >= self.sure

    def stranger_to(self, personal: float | None) -> bool:
        """Whether the verifier says it is not the enrolled user's voice."""
        return personal is not None and personal < self.stranger

    def weigh(self, score: float, heard_name: bool, personal: float | None = None) -> bool:
        """Whether the utterance wakes her."""
        if self.stranger_to(personal):
            return False
        return self.sure_of(score, personal) or (heard_name and score >= self.floor)

    def asks_whisper(self, score: float, personal: float | None = None) -> bool:
        """Whether whisper's slower second opinion (its n-best readings) could change the verdict."""
        return score >= self.floor and not self.sure_of(score, personal) and not self.stranger_to(personal)


@dataclass(frozen=True)
class Candidate:
    t: float
    score: float
    personal: float | None = None


class WakeCandidates:
    """Open candidates until an utterance claims them or `max_age_s` passes without speech.

    `max_age_s` covers the longest wait for the VAD to end the utterance holding the wake
    word (the question said in one breath after it, up to the utterance limit).
    """

    def __init__(self, max_age_s: float) -> None:
        self.max_age_s = max_age_s
        self._open: list[Candidate] = []
        self.dropped = 0  # candidates no speech claimed: rejected by the VAD gate

    def trigger(self, t: float, score: float, personal: float | None = None) -> None:
        self._open.append(Candidate(t, score, personal))

    def held(self, start: float, end: float, lead_s: float | None = None) -> Candidate | None:
        """The best open candidate inside the utterance [start, end] — with `lead_s`, in its first
        `lead_s` seconds only — left open (the final utterance frame follows the early one with the
        same span)."""
        last = end + SLACK_S if lead_s is None else min(end + SLACK_S, start + lead_s)
        inside = [c for c in self._open if start - SLACK_S <= c.t <= last]
        if not inside:
            return None
        best = max(inside, key=lambda c: c.score)
        personal = [c.personal for c in inside if c.personal is not None]
        return Candidate(best.t, best.score, max(personal)) if personal else best

    def expire(self, now: float) -> list[Candidate]:
        """Drop and return the candidates older than `max_age_s` at stream time `now`."""
        old = [c for c in self._open if c.t < now - self.max_age_s]
        if old:
            self._open = [c for c in self._open if c.t >= now - self.max_age_s]
            self.dropped += len(old)
        return old

    def spend(self, end: float) -> None:
        """An utterance ending at `end` was checked: candidates inside it are done."""
        self._open = [c for c in self._open if c.t > end + SLACK_S]
