"""A simulated speaker -> microphone path, for headless runs that test the echo guard.

What the file output plays comes back into the file input `delay_ms` later, `gain_db` quieter
(a laptop's speaker and microphone are a few cm apart: measured couplings run from about
-20 dB to 0 dB), as a real microphone would hear Stella's own voice. The output file
must share the input's timeline (headless mode arranges that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import soxr

from sidecar.voice.audio import RATE, to_float, to_int16
from sidecar.voice.ring import Ring

if TYPE_CHECKING:
    from sidecar.voice.playback import FileOutput


class EchoPath:
    def __init__(self, delay_ms: float, gain_db: float) -> None:
        self.delay = round(RATE * delay_ms / 1000)
        self.gain = 10 ** (gain_db / 20)
        self.output: FileOutput | None = None
        self.tap: Ring | None = None  # what the output wrote, at its rate
        self._converter: soxr.ResampleStream | None = None
        self._echo = np.zeros(self.delay, np.float32)  # the path's delay line, at 16 kHz

    def connect(self, output: FileOutput) -> None:
        """Listen to `output`: it copies each block it writes into our tap."""
        self.output = output
        self.tap = output.tap = Ring(output.rate * 10, np.float32)
        if output.rate != RATE:
            self._converter = soxr.ResampleStream(output.rate, RATE, 1, dtype="float32")

    def mix(self, pcm: np.ndarray, now: float) -> np.ndarray:
        """Microphone block `pcm` (int16, 16 kHz) with the echo of what has played by `now`."""
        if self.output is None or self.tap is None:
            return pcm
        self.output.catch_up(now)
        played = self.tap.read(self.tap.available())
        if self._converter is not None:
            played = self._converter.resample_chunk(played)
        self._echo = np.concatenate([self._echo, played.astype(np.float32)])
        echo = np.zeros(len(pcm), np.float32)
        n = min(len(pcm), len(self._echo))
        echo[:n], self._echo = self._echo[:n], self._echo[n:]
        return to_int16(to_float(pcm) + self.gain * echo)
