"""Speech to text with whisper.cpp (pywhispercpp) and a provisioned ggml model.

whisper normally encodes a fixed 30 s window, so a 2 s question costs as much as a 30 s one.
`audio_ctx` shrinks the encoder's window — about half the time on a 2-core machine. Measured
with tiny.en: below ~10 s of window whisper starts repeating itself ("Yes. Yes. Yes. ..."), so
the window is at least 768 frames (15.4 s) and twice the utterance plus a second beyond that.
No temperature fallback and a token cap keep the worst case bounded: a reply must not wait
for whisper's retries.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from sidecar.frames import EarlyTranscriptFrame, Frame, SpeechResumedFrame, TranscriptFrame, UtteranceFrame
from sidecar.pipeline import Direction, Processor
from sidecar.voice.audio import RATE

log = logging.getLogger(__name__)

FULL_CTX = 1500  # 30 s: whisper's encoder frames at 50 per second
MIN_CTX = 768
LEAD_IN = RATE // 5  # 200 ms
# What whisper writes for non-speech: "[BLANK_AUDIO]", "(music)", "*cough*". Tiny models also
# put real words in parentheses ("(Bake me a cake)"), so only short asides count as noise.
_TAG = re.compile(r"\[[^\]]*\]")
_ASIDE = re.compile(r"\(([^)]*)\)|\*([^*]*)\*")


def audio_ctx(seconds: float) -> int:
    """Encoder frames for an utterance: twice its length + 1 s (>= MIN_CTX), steps of 64, <= 30 s."""
    frames = (2 * seconds + 1.0) * 50
    return min(FULL_CTX, max(MIN_CTX, 64 * math.ceil(frames / 64)))


def clean(text: str) -> str:
    def aside(m: re.Match[str]) -> str:
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        return " " if len(inner.split()) <= 2 else inner

    return " ".join(_ASIDE.sub(aside, _TAG.sub(" ", text)).split())


class Transcribes(Protocol):
    """An ASR engine: whisper.cpp (`Transcriber`) or CTranslate2 (`asr_ct2.CT2Transcriber`)."""

    def __call__(self, audio: np.ndarray, abort: threading.Event | None = None, prompt: str = "") -> str: ...

    def prepare(self, prompt: str) -> None:
        """Get ready to run with `prompt` (called once in a worker thread as the ASR starts)."""


class Transcriber:
    def __init__(self, model_path: Path, threads: int) -> None:
        from pywhispercpp.model import Model

        logging.getLogger("pywhispercpp").setLevel(logging.WARNING)  # it logs every call at INFO
        self._model = Model(str(model_path), n_threads=threads, print_progress=False, print_realtime=False,
                            print_timestamps=False, redirect_whispercpp_logs_to=None)

    def prepare(self, prompt: str) -> None:
        """Nothing to do: whisper.cpp tokenizes the prompt at each run."""

    def __call__(self, audio: np.ndarray, abort: threading.Event | None = None, prompt: str = "") -> str:
        """Text of a float32 16 kHz utterance; setting `abort` stops it early (result: "").

        `prompt` is text whisper takes as what came before: words in it (the wake phrase) are
        spelt as written there.
        """
        if len(audio) < RATE // 10:
            return ""
        # whisper drops the first word of audio with no lead-in (measured: "Turn up the volume"
        # -> "the volume"), so it always gets some silence first; and at least 1 s in all.
        lead = np.zeros(LEAD_IN, np.float32)
        padded = np.concatenate([lead, audio, np.zeros(max(0, RATE - LEAD_IN - len(audio)), np.float32)])
        seconds = len(padded) / RATE
        segments = self._model.transcribe(padded, audio_ctx=audio_ctx(seconds), no_context=True,
                                          single_segment=True, no_timestamps=True, language="en",
                                          temperature_inc=0.0, max_tokens=int(8 * seconds) + 16,
                                          initial_prompt=prompt, abort_callback=abort.is_set if abort else None)
        if abort is not None and abort.is_set():
            return ""
        return clean(" ".join(s.text for s in segments))


@dataclass
class _Run:
    """A transcription started on a non-final utterance: a pause that may be the end, or the words so far."""

    end: float
    abort: threading.Event
    task: asyncio.Task[tuple[str, float]]  # the transcript and whisper's own time (ms)


class ASR(Processor):
    """Transcribes in a worker thread, starting as soon as a pause begins.

    A non-final utterance starts whisper at once; when the final one comes with the same end
    (the user did not go on) its transcript is used, so most of whisper's time hides inside
    the hang-over. The early transcript goes on at once (`EarlyTranscriptFrame`: the reply's
    prompt is warmed with it). If the user went on, the early run is aborted and the final one
    is transcribed. An interim utterance (the user still speaking) is transcribed only when
    whisper is idle, and gives way to the others: its transcript only warms. One whisper
    context, so runs never overlap.

    `prompt` (the wake phrase, "Hey Stella.") biases the spelling of the name: without it,
    tiny.en hears espeak's "Stella" as "Statler", "Taylor" or "Tetler" most of the time.
    """

    def __init__(self, transcriber: Transcribes, prompt: str = "") -> None:
        super().__init__()
        self.transcriber = transcriber
        self.prompt = prompt
        self._early: _Run | None = None
        self._interim: _Run | None = None
        self._preparing: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Ready the prompt in the background: listening need not wait for it (a run that comes first does)."""
        self._preparing = asyncio.create_task(asyncio.to_thread(self.transcriber.prepare, self.prompt),
                                              name="asr-prepare")

    async def stop(self) -> None:
        if self._preparing is not None:
            await asyncio.gather(self._preparing, return_exceptions=True)  # a worker thread cannot be cancelled

    async def process(self, frame: Frame, direction: Direction) -> None:
        if not isinstance(frame, UtteranceFrame):
            if isinstance(frame, SpeechResumedFrame) and self._early is not None:
                self._early.abort.set()  # the user went on: stop now, not at the next pause
            await self.push(frame, direction)
            return
        if frame.interim:
            if all(run is None or run.task.done() for run in (self._early, self._interim)):
                abort = threading.Event()
                self._interim = _Run(frame.end, abort, asyncio.create_task(self._ahead(frame, abort)))
            return
        interim, self._interim = self._interim, None
        if interim is not None:  # the pause's run goes first: stop the interim one, or wait for its end
            interim.abort.set()
            await interim.task
        early, self._early = self._early, None
        if early is not None and (not frame.final or early.end != frame.end):
            early.abort.set()  # the user went on: that guess is stale
            await early.task
            early = None
        if not frame.final:
            abort = threading.Event()
            self._early = _Run(frame.end, abort, asyncio.create_task(self._ahead(frame, abort)))
            return
        text, took = await (early.task if early is not None else self._transcribe(frame.audio, None))
        log.info("heard %d chars in %.0f ms (%.1f s of audio%s)", len(text), took, len(frame.audio) / RATE,
                 ", started at the pause" if early is not None else "")
        log.debug("heard %r", text)
        await self.push(TranscriptFrame(text=text, asr_ms=took, utterance=frame))

    async def _transcribe(self, audio: np.ndarray, abort: threading.Event | None) -> tuple[str, float]:
        """Whisper's text of `audio` and its own time (ms), in a worker thread."""
        began = time.perf_counter()
        text = await asyncio.to_thread(self.transcriber, audio, abort, self.prompt)
        return text, (time.perf_counter() - began) * 1000

    async def _ahead(self, utterance: UtteranceFrame, abort: threading.Event) -> tuple[str, float]:
        """An early (or interim) run; its transcript goes on at once (`EarlyTranscriptFrame`) unless
        it was aborted (the user went on, or the pause came)."""
        text, took = await self._transcribe(utterance.audio, abort)
        if text and not abort.is_set():
            await self.push(EarlyTranscriptFrame(text=text, utterance=utterance))
        return text, took
