"""The typed frames that flow through the voice pipeline.

Three kinds, as in pipecat: *system* frames jump every queue and are handled at once (an
interruption must not wait behind queued audio); *data* and *control* frames are handled in
order. An interruption drops the data/control frames still queued where it passes, except
the user's own (`interruptible = False`: audio, utterances, transcripts, typed text) — the
words that interrupted must never be lost.

A frame with an `event` name is also an entry of the session's event log (JSONL): `type` is
that name, `t` the frame's time in seconds on the session timeline (0 = the first input
sample), and the other fields come from `event_data()` (audio payloads are left out).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np


@dataclass(kw_only=True)
class Frame:
    # Seconds on the session timeline; None = "now", stamped when the frame is first pushed.
    t: float | None = None
    event: ClassVar[str | None] = None
    interruptible: ClassVar[bool] = True

    def event_data(self) -> dict[str, Any]:
        """The fields that go into the event log (arrays and private fields left out)."""
        data: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "t" or isinstance(value, np.ndarray):
                continue
            data[f.name] = round(value, 4) if isinstance(value, float) else value
        return data


@dataclass(kw_only=True)
class SystemFrame(Frame):
    """Handled as soon as it is pushed, ahead of anything queued."""


@dataclass(kw_only=True)
class DataFrame(Frame):
    """Content, handled in order."""


@dataclass(kw_only=True)
class ControlFrame(Frame):
    """State changes, handled in order."""


# --- system -------------------------------------------------------------------------------


@dataclass(kw_only=True)
class InterruptionFrame(SystemFrame):
    """Stop what is being said now: each processor it reaches drops queued output.

    Pushed downstream by whoever decides the user takes the floor (barge-in, "stop", a new
    typed message); the reply processor cancels the turn upstream when it sees it.
    """

    event: ClassVar[str] = "interruption"
    reason: str


@dataclass(kw_only=True)
class ErrorFrame(SystemFrame):
    """Something went wrong; `fatal` ends the session (e.g. the microphone disappeared)."""

    event: ClassVar[str] = "error"
    code: str
    message: str
    fatal: bool = False


# --- the session ----------------------------------------------------------------------------


@dataclass(kw_only=True)
class EndFrame(ControlFrame):
    """The session is over: each processor finishes its queued work, then passes this on."""

    event: ClassVar[str] = "end"
    interruptible: ClassVar[bool] = False


@dataclass(kw_only=True)
class InputStartedFrame(ControlFrame):
    """The first microphone (or file) audio arrived: t = 0 of the session timeline."""

    event: ClassVar[str] = "input_start"
    interruptible: ClassVar[bool] = False
    device: str
    rate: int


# --- the user's side ----------------------------------------------------------------------


@dataclass(kw_only=True)
class AudioFrame(DataFrame):
    """A block of microphone audio: 16 kHz mono int16; `t` is the time of its first sample."""

    interruptible: ClassVar[bool] = False
    pcm: np.ndarray
    rate: int
    raw: np.ndarray | None = None  # after echo cancellation: the microphone as it was (the echo guard compares)
    arrived: float | None = None  # when a device's block reached the pipeline (session clock)

    @property
    def duration(self) -> float:
        return len(self.pcm) / self.rate


@dataclass(kw_only=True)
class PushToTalkFrame(ControlFrame):
    """The push-to-talk button went down or up: speech in between is addressed to Stella."""

    event: ClassVar[str] = "push_to_talk"
    interruptible: ClassVar[bool] = False
    pressed: bool


@dataclass(kw_only=True)
class SpeechStartedFrame(ControlFrame):
    """The VAD heard the user start speaking (`t` = the first voiced window)."""

    event: ClassVar[str] = "speech_start"
    interruptible: ClassVar[bool] = False


@dataclass(kw_only=True)
class SpeechStoppedFrame(ControlFrame):
    """The hang-over passed without voice: the user stopped at `t` (end of the last voice)."""

    event: ClassVar[str] = "speech_end"
    interruptible: ClassVar[bool] = False
    endpoint: float  # when the end was decided (t + hang-over)


@dataclass(kw_only=True)
class SpeechResumedFrame(ControlFrame):
    """The user spoke again at `t` after a pause that had been offered as a possible end (a
    non-final utterance): what was started on that guess (an early transcript, a reply) is stale."""

    interruptible: ClassVar[bool] = False
    t: float


@dataclass(kw_only=True)
class WakeCheckFrame(ControlFrame):
    """An utterance was checked for the wake word's name (the phrase and two-stage engines): whether
    whisper wrote the name (`heard`), its own odds for it without the prompt and the floor they
    must reach (None: not scored, e.g. in noise), the acoustic model's best score in it and the
    floor that must reach (None: no model listens), and whether she woke. Settings' "try it" meter
    shows it; no words, so nothing said reaches a log through it."""

    event: ClassVar[str] = "wake_check"
    interruptible: ClassVar[bool] = False
    engine: str
    heard: bool
    odds: float | None = None
    floor: float | None = None
    acoustic: float | None = None
    acoustic_floor: float | None = None
    voice: float | None = None  # the enrolled user's verifier's score, and the score it must reach
    voice_floor: float | None = None
    woke: bool = False


@dataclass(kw_only=True)
class EnrolFrame(ControlFrame):
    """From the window (Settings): start teaching her the user's voice (three takes of the wake
    word), or cancel it."""

    interruptible: ClassVar[bool] = False
    start: bool


@dataclass(kw_only=True)
class EnrolmentFrame(ControlFrame):
    """How enrolment goes: `status` "listening" (`taken` of `needed` takes heard), "done" (with the
    new `verifier`, which the engine keeps in the store; never in the event), "cancelled", "unheard"
    (no take for a while: nothing taught), or "unavailable" (no model of ours listens: enrolment
    needs the "hey stella" phrase's)."""

    event: ClassVar[str] = "enrolment"
    interruptible: ClassVar[bool] = False
    taken: int
    needed: int
    status: Literal["listening", "done", "cancelled", "unheard", "unavailable"]
    verifier: Any = None  # wake_verifier.Verifier (frames know no voice module)

    def event_data(self) -> dict[str, Any]:
        return {k: v for k, v in super().event_data().items() if k != "verifier"}


@dataclass(kw_only=True)
class WakeFrame(ControlFrame):
    """The wake word was heard (`t`: when); `engine` is "openwakeword" or "phrase"."""

    event: ClassVar[str] = "wake"
    interruptible: ClassVar[bool] = False
    word: str
    score: float
    engine: str


@dataclass(kw_only=True)
class ListeningFrame(ControlFrame):
    """Only the wake word was said: speech starting before `until` is taken as the question."""

    event: ClassVar[str] = "listening"
    interruptible: ClassVar[bool] = False
    until: float


@dataclass(kw_only=True)
class AddressedFrame(ControlFrame):
    """Upstream, from the turn taker to the wake gate: the name was heard in the words so far of
    the speech that started at `start`, so its further interim utterances are worth transcribing."""

    interruptible: ClassVar[bool] = False
    start: float


@dataclass(kw_only=True)
class UtteranceFrame(DataFrame):
    """One VAD-gated (or push-to-talk) stretch of user speech, pre-roll included.

    `t` is when its end was decided. A non-`final` one is sent when a pause begins, so ASR
    can start while the hang-over runs; the final one follows (same `end` if the pause held).
    An `interim` one (never final) holds the words so far while the user is still speaking.
    The wake gate sets `wake_inside` when an acoustic wake word was said within it (so its
    transcript starts with the wake word) and `verify_wake` when the custom-phrase engine
    must look for the name in its transcript, with `wake_score` the acoustic model's best score
    (and `wake_personal` the enrolled user's verifier's)
    inside it when one listens too (None: no acoustic opinion); barge-in sets `barge_in` on the
    speech that interrupted Stella.
    """

    interruptible: ClassVar[bool] = False
    audio: np.ndarray  # float32, 16 kHz
    start: float
    end: float
    push_to_talk: bool = False
    final: bool = True
    interim: bool = False
    wake_inside: bool = False
    verify_wake: bool = False
    wake_score: float | None = None
    wake_personal: float | None = None  # the enrolled user's verifier's best score in it (None: none)
    barge_in: bool = False  # said over Stella's voice and cut her off: addressed to her


@dataclass(kw_only=True)
class TranscriptFrame(DataFrame):
    """What whisper heard in one utterance."""

    event: ClassVar[str] = "transcript"
    interruptible: ClassVar[bool] = False
    text: str
    asr_ms: float
    utterance: UtteranceFrame = field(repr=False)

    def event_data(self) -> dict[str, Any]:
        return {"text": self.text, "asr_ms": round(self.asr_ms, 1), "start": round(self.utterance.start, 4),
                "end": round(self.utterance.end, 4)}


@dataclass(kw_only=True)
class EarlyTranscriptFrame(DataFrame):
    """What whisper heard of an utterance up to a pause, before the pause is known to end the turn
    (or, for an interim utterance, of the words so far)."""

    interruptible: ClassVar[bool] = False
    text: str
    utterance: UtteranceFrame = field(repr=False)


@dataclass(kw_only=True)
class LikelyTurnFrame(DataFrame):
    """The turn the words so far make if the pause ends it: the reply can be asked for (or its
    prompt warmed) while the pause is confirmed (sidecar.reply). Not `at_pause`: the user is
    still speaking and `text` is only the turn's start, settled words only, to warm with."""

    interruptible: ClassVar[bool] = False
    text: str
    at_pause: bool = True


@dataclass(kw_only=True)
class UserTextFrame(DataFrame):
    """Typed input: bypasses VAD, wake word and ASR."""

    event: ClassVar[str] = "user_text"
    interruptible: ClassVar[bool] = False
    text: str


@dataclass(kw_only=True)
class UserTurnFrame(DataFrame):
    """Something the user said (or typed) to Stella, to be answered: starts turn `turn`.

    Interruptible: a "stop" cancels the answer being prepared (the words themselves are
    already in the transcript).
    """

    event: ClassVar[str] = "user_turn"
    turn: int
    text: str
    source: str  # "voice" | "text" | "push_to_talk"
    speech_end: float | None = None  # when the user stopped speaking (voice only)
    local_answer: str | None = None  # answered by the machine itself (a clock question): no model asked


# --- Stella's side ------------------------------------------------------------------------


@dataclass(kw_only=True)
class RequestSentFrame(ControlFrame):
    event: ClassVar[str] = "request_sent"
    turn: int
    rid: str


@dataclass(kw_only=True)
class TokenFrame(DataFrame):
    event: ClassVar[str] = "token"
    turn: int
    index: int
    text: str


@dataclass(kw_only=True)
class ReplyDoneFrame(ControlFrame):
    """The reply ended (reason stop|length|cancelled|error) with `text` as generated."""

    event: ClassVar[str] = "reply_done"
    turn: int
    reason: str
    text: str
    # llama-server's own count of the prompt: tokens evaluated now and served from its cache
    prompt_tokens: int | None = None
    cached_tokens: int | None = None


@dataclass(kw_only=True)
class SentenceFrame(DataFrame):
    event: ClassVar[str] = "sentence"
    turn: int
    index: int
    text: str


@dataclass(kw_only=True)
class SpeechAudioFrame(DataFrame):
    """A synthesized sentence, float32 at the voice's rate."""

    event: ClassVar[str] = "tts"
    turn: int
    index: int
    text: str
    audio: np.ndarray
    rate: int
    tts_ms: float
    engine: str


@dataclass(kw_only=True)
class AudioOutFrame(ControlFrame):
    """Sentence `index` of turn `turn` starts being heard at `t` (on the audio clock)."""

    event: ClassVar[str] = "audio_out"
    turn: int
    index: int
    duration: float


@dataclass(kw_only=True)
class PlaybackStartFrame(ControlFrame):
    """The device side of turn `turn`'s first sound, pushed once it is heard: when its audio was
    queued, how much was ahead of it then (audio + device latency, as predicted), when the output
    took its first sample (the device callback; a file's writer) and when, by the device's latency
    at that callback, it was heard — later than predicted when the callbacks stalled."""

    event: ClassVar[str] = "playback"
    turn: int
    queued: float
    buffered_ms: float
    written: float | None
    heard: float | None


@dataclass(kw_only=True)
class BotSpeakingFrame(SystemFrame):
    """Playback started (`speaking`) or finished a reply's audio; flows upstream.

    A system frame: barge-in must know at once, not after a reply still streaming in front
    of it.
    """

    event: ClassVar[str] = "speaking"
    turn: int
    speaking: bool


@dataclass(kw_only=True)
class TurnEndedFrame(ControlFrame):
    """Turn `turn` is over: its reply has been heard in full (or there was nothing to say)."""

    event: ClassVar[str] = "turn_end"
    turn: int


@dataclass(kw_only=True)
class TurnTimelineFrame(ControlFrame):
    """A finished turn's milestones (timeline seconds) and the gaps between them (ms)."""

    event: ClassVar[str] = "turn"
    turn: int
    marks: dict[str, float]
    latency_ms: dict[str, float]
    prompt: dict[str, int] = field(default_factory=dict)  # llama-server's tokens: evaluated, cached


@dataclass(kw_only=True)
class HeardFrame(SystemFrame):
    """Upstream from playback when turn `turn` stops being heard: `text` is what the user
    heard — all of it, or, if `interrupted`, up to the word where playback was cut off."""

    event: ClassVar[str] = "heard"
    turn: int
    text: str
    interrupted: bool


@dataclass(kw_only=True)
class PlaybackLevelsFrame(SystemFrame):
    """Upstream from playback: the RMS level of the output every `hop` s from `start` on,
    volume included — the reference the echo guard compares the microphone with. `cut`:
    nothing queued plays after `start` (an interruption emptied the buffer)."""

    start: float
    hop: float
    rms: np.ndarray
    cut: bool = False


@dataclass(kw_only=True)
class MouthFrame(ControlFrame):
    """Lip sync: mouth openness 0..1 for the 20 ms of audio heard from `t`."""

    event: ClassVar[str] = "mouth"
    level: float


@dataclass(kw_only=True)
class BlinkFrame(ControlFrame):
    """The idle animation's cue: blink now (a few times a minute, speaking or not)."""

    event: ClassVar[str] = "blink"


# --- local intents ------------------------------------------------------------------------


@dataclass(kw_only=True)
class OutfitFrame(ControlFrame):
    """Wear catalogue outfit `id`; `source` is "user" (a spoken or typed request) or
    "assistant" (an [outfit: ID] tag in a reply)."""

    event: ClassVar[str] = "outfit"
    interruptible: ClassVar[bool] = False
    id: str
    source: str


@dataclass(kw_only=True)
class VolumeFrame(ControlFrame):
    """Speak louder (`step` +1) or softer (-1); playback applies it at once."""

    event: ClassVar[str] = "volume"
    interruptible: ClassVar[bool] = False
    step: int
