"""A simulated speaker -> microphone path, for headless runs that test barge-in and the AEC.

What the file output plays comes back into the file input through a room impulse response:
the direct sound `delay_ms` later, and with `rt60_ms` > 0 a reverberant tail that decays by
60 dB over that time (exponentially decaying noise holding a third of the echo's energy,
as in a small room where the speaker and microphone are a few cm apart). `gain_db` is the
energy of the whole response: measured laptop couplings run from about -20 dB to 0 dB. The
output file must share the input's timeline (headless mode arranges that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import soxr

from sidecar.voice.audio import RATE, to_float, to_int16
from sidecar.voice.ring import Ring

if TYPE_CHECKING:
    from sidecar.voice.playback import FileOutput

TAIL_SHARE = 1 / 3  # of the echo's energy in the reverberant tail (direct-to-reverberant ratio +3 dB)


def room_impulse(delay_ms: float, gain_db: float, rt60_ms: float = 0.0, seed: int = 0) -> np.ndarray:
    """The speaker -> microphone impulse response at 16 kHz (the same room for the same seed)."""
    delay = round(RATE * delay_ms / 1000)
    tail = np.zeros(0, np.float64)
    if rt60_ms > 0:
        t = np.arange(1, round(RATE * rt60_ms / 1000)) / RATE
        tail = np.random.default_rng(seed).standard_normal(len(t)) * np.exp(-6.9 * t / (rt60_ms / 1000))
        tail *= np.sqrt(TAIL_SHARE / (1 - TAIL_SHARE) / np.sum(tail ** 2))
    h = np.concatenate([np.zeros(delay), [1.0], tail])
    return (h * np.sqrt(10 ** (gain_db / 10) / np.sum(h ** 2))).astype(np.float32)


class EchoPath:
    def __init__(self, delay_ms: float, gain_db: float, rt60_ms: float = 0.0) -> None:
        self.impulse = room_impulse(delay_ms, gain_db, rt60_ms)
        self.output: FileOutput | None = None
        self.tap: Ring | None = None  # what the output wrote, at its rate
        self._converter: soxr.ResampleStream | None = None
        self._echo = np.zeros(0, np.float32)  # the echo still to come, from microphone sample `_heard` on
        self._played = 0  # samples played so far (16 kHz): played sample k is heard through the room from k on
        self._heard = 0  # microphone samples mixed so far
        self._spectra: dict[int, np.ndarray] = {}

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
        if len(played):
            echo = self._convolve(played.astype(np.float32))[max(0, self._heard - self._played):]
            at = max(0, self._played - self._heard)
            self._played += len(played)
            if at + len(echo) > len(self._echo):
                self._echo = np.concatenate([self._echo, np.zeros(at + len(echo) - len(self._echo), np.float32)])
            self._echo[at:at + len(echo)] += echo
        n = len(pcm)
        echo = np.concatenate([self._echo[:n], np.zeros(max(0, n - len(self._echo)), np.float32)])
        self._echo, self._heard = self._echo[n:], self._heard + n
        return to_int16(to_float(pcm) + echo)

    def _convolve(self, x: np.ndarray) -> np.ndarray:
        """x through the room (FFT convolution)."""
        size = 1 << int(np.ceil(np.log2(len(x) + len(self.impulse))))
        if size not in self._spectra:
            self._spectra[size] = np.fft.rfft(self.impulse, size)
        return np.fft.irfft(np.fft.rfft(x, size) * self._spectra[size], size)[:len(x) + len(self.impulse) - 1]
