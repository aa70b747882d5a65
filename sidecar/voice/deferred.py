"""Models loaded off the path to "ready to listen": hearing the wake word needs whisper and the VAD.

Piper (`DeferredVoice`) is warmed by the engine in the background as soon as the microphone
listens (sidecar/engine/voice_session.py), so the first reply is not slower; a reply that comes
first loads it itself. The n-best check's own CTranslate2 model (`DeferredReadings`, only when
whisper.cpp transcribes) loads the first time a transcript lacks the name: a second copy of
whisper's weights (~100 MiB) is not kept for a check that may never run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

import numpy as np

from sidecar.memory import give_back
from sidecar.voice.asr_ct2 import CT2Transcriber
from sidecar.voice.tts import Synthesizer

log = logging.getLogger(__name__)
T = TypeVar("T")


class Deferred(Generic[T]):
    """A model that loads on its first use or `warm()`, once, whichever thread comes first."""

    def __init__(self, name: str, load: Callable[[], T]) -> None:
        self.name = name
        self._load = load
        self._model: T | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def warm(self) -> None:
        """Load now (blocking: run it in a worker thread)."""
        self.get()

    def get(self) -> T:
        with self._lock:
            if self._model is None:
                began = time.perf_counter()
                self._model = self._load()
                give_back()
                log.info("%s loaded in %.0f ms", self.name, (time.perf_counter() - began) * 1000)
            return self._model


class DeferredVoice(Deferred[Synthesizer]):
    """A synthesizer (piper) that loads when first needed."""

    def __call__(self, text: str) -> tuple[np.ndarray, int]:
        return self.get()(text)

    def release(self) -> None:
        if self.loaded:  # never loaded: nothing to give back
            self.get().release()


class DeferredReadings(Deferred[CT2Transcriber]):
    """The n-best check's CTranslate2 model, loaded when first asked; if it cannot load, the check is
    off (as when the model is missing at start) rather than the turn lost."""

    _failed = False

    def readings(self, audio: np.ndarray, n: int, prompt: str = "") -> list[str]:
        model = self._model_or_none()
        return [] if model is None else model.readings(audio, n, prompt)

    def odds(self, audio: np.ndarray, lead: str, words: list[str]) -> list[float]:
        model = self._model_or_none()
        return [] if model is None else model.odds(audio, lead, words)

    def _model_or_none(self) -> CT2Transcriber | None:
        if self._failed:
            return None
        try:
            return self.get()
        except (ImportError, OSError, RuntimeError) as exc:
            self._failed = True
            log.warning("no second check of the wake word (%s): accented wake words are missed, and look-alike "
                        "names taken, more often", exc)
            return None
