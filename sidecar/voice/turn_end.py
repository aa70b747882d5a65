"""Ending the user's turn when it sounds finished, not after a fixed silence.

A fixed hang-over is a bad trade both ways: short, and a user who pauses mid-thought ("I was
wondering … whether penguins can fly") is cut off; long, and every complete question waits for
it. Smart Turn v3.2 (a whisper-tiny encoder + classifier, BSD-2, 8.7 MB int8 ONNX) hears from
the audio — intonation, the words' shape — whether a turn is complete.

`TurnEnd` is the pure decision (silence so far + the model's answers in, "ask the model" /
"end now" out), so it is tested with a fake clock and a fake model; `SmartTurn` runs the model.
The VAD's `Segmenter` drives the first, the `Endpointer` calls the second off the event loop.

    silence >= ask_s                     -> ask the model about the utterance so far
    p(complete) >= threshold             -> end now ("complete")
    wait_below <= p(complete) < threshold -> unsure: end after the usual hang-over ("hang-over")
    p(complete) <  wait_below            -> wait; ask again after retry_s more silence
    silence >= max_s                     -> end anyway ("timeout": a long pause is an end whatever the model says)

The unsure band is why the model can only help: where it is not sure either way the turn ends
as it would without it, so a complete question it misjudges waits no longer than the plain
hang-over, and only a turn it is fairly sure will go on gets the longer wait.

Speech resuming cancels the pause: an answer about it that comes late is ignored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from sidecar.config import VoiceConfig
from sidecar.voice.audio import RATE
from sidecar.voice.logmel import log_mel

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ask:
    """Run the model on the utterance so far; hand its answer back with this pause number."""

    pause: int
    silence: float


@dataclass(frozen=True)
class End:
    reason: Literal["complete", "hang-over", "timeout"]


class TurnEnd:
    def __init__(self, ask_s: float, retry_s: float, max_s: float, threshold: float,
                 wait_below: float | None = None, hangover_s: float | None = None) -> None:
        """`wait_below` None: below `threshold` always waits; `hangover_s` None: `max_s`."""
        if not 0 < ask_s <= max_s:
            raise ValueError(f"the first question to the turn model ({ask_s} s) must come before the "
                             f"longest wait ({max_s} s)")
        self.ask_s, self.retry_s, self.max_s, self.threshold = ask_s, retry_s, max_s, threshold
        self.wait_below = threshold if wait_below is None else min(wait_below, threshold)
        self.hangover_s = max_s if hangover_s is None else min(hangover_s, max_s)
        self._deadline = max_s  # silence that ends the turn whatever comes

        self._pause = 0  # numbers each pause, so a late answer about an earlier one is ignored
        self._in_pause = False
        self._asking = False
        self._asked_at = 0.0
        self._next_ask = ask_s

    @classmethod
    def of(cls, config: VoiceConfig) -> TurnEnd:
        return cls(config.turn_ask_ms / 1000, config.turn_retry_ms / 1000, config.turn_max_ms / 1000,
                   config.turn_threshold, config.turn_wait_below, config.hangover_ms / 1000)

    def voice(self) -> None:
        """A voiced window: any pause is over."""
        if self._in_pause:
            self._pause += 1
        self._in_pause = self._asking = False
        self._next_ask = self.ask_s
        self._deadline = self.max_s

    def begin(self) -> None:
        """A new utterance: forget everything about the last one."""
        self._in_pause = True
        self.voice()

    def silence(self, silent_s: float) -> Ask | End | None:
        """`silent_s` of silence since the last voiced window."""
        self._in_pause = True
        if silent_s >= self._deadline:
            return End("timeout" if self._deadline >= self.max_s else "hang-over")
        if not self._asking and silent_s >= self._next_ask:
            self._asking, self._asked_at = True, silent_s
            return Ask(self._pause, silent_s)
        return None

    def verdict(self, pause: int, p_complete: float) -> End | None:
        """The model's answer to `Ask(pause)`."""
        if pause != self._pause or not self._asking:
            return None  # the user spoke again meanwhile
        self._asking = False
        if p_complete >= self.threshold:
            return End("complete")
        if p_complete >= self.wait_below:
            self._deadline = self.hangover_s
        self._next_ask = self._asked_at + self.retry_s
        return None


class SmartTurn:
    """p(complete) of an utterance so far, from Smart Turn v3.2 on onnxruntime (one thread:
    measured no faster on two, and whisper needs the other core at that moment)."""

    SECONDS = 8  # the model hears the last 8 s; shorter audio is padded with silence in front

    def __init__(self, path: Path, threads: int = 1) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        # No arena: it kept 28 MiB of activations for good after the first asks, and without it a run is no
        # slower (measured, 20 asks on 2-6 s of audio: median 93-98 ms without, 104-111 ms with)
        options.enable_cpu_mem_arena = False
        self._session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        self._input = self._session.get_inputs()[0].name

    def features(self, audio: np.ndarray) -> np.ndarray:
        """(1, 80, 800): the last 8 s, silence in front, normalised to zero mean and unit variance."""
        n = self.SECONDS * RATE
        audio = np.asarray(audio, np.float32)[-n:]
        audio = np.concatenate([np.zeros(n - len(audio), np.float32), audio])
        audio = (audio - audio.mean()) / np.sqrt(audio.var() + 1e-7)
        return log_mel(audio)[None]

    def __call__(self, audio: np.ndarray) -> float:
        (p,) = self._session.run(None, {self._input: self.features(audio)})
        return float(np.asarray(p).reshape(-1)[0])
