"""Recording and playing sound on the tests' PulseAudio daemon (tests/services.py): parec, pacat.

The daemon's null sinks run at 48 kHz; what the tests play and hear is 16 kHz float32 (the
microphone path's format), resampled here.
"""

from __future__ import annotations

import subprocess
import threading
import time

import numpy as np

from sidecar.voice.audio import RATE, resample, to_int16

PULSE_RATE = 48000
BLOCK_S = 0.01


class Recorder:
    """parec on a source (a sink's monitor), `channels` interleaved, read in a thread; every 10 ms
    block is stamped with the time it arrived."""

    def __init__(self, env: dict[str, str], source: str, channels: int = 1, latency_ms: int = 20) -> None:
        self.channels = channels
        self.proc = subprocess.Popen(["parec", f"--device={source}", "--format=s16le", f"--rate={PULSE_RATE}",
                                      f"--channels={channels}", f"--latency-msec={latency_ms}"], env=env,
                                     stdout=subprocess.PIPE)
        self.blocks: list[tuple[float, bytes]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while block := self.proc.stdout.read(int(PULSE_RATE * BLOCK_S) * 2 * self.channels):
            self.blocks.append((time.monotonic(), block))

    @property
    def samples(self) -> int:
        """Sample frames recorded so far (at PULSE_RATE)."""
        return sum(len(b) for _, b in list(self.blocks)) // (2 * self.channels)

    def audio(self) -> np.ndarray:
        """What was recorded, at PULSE_RATE: shape (n,) for one channel, else (n, channels)."""
        raw = np.frombuffer(b"".join(b for _, b in list(self.blocks)), "<i2").astype(np.float32) / 32768.0
        return raw if self.channels == 1 else raw[:len(raw) // self.channels * self.channels].reshape(-1, self.channels)

    def first_sound_after(self, t0: float, level: float = 0.02) -> float | None:
        """When the first block louder than `level` arrived after `t0` (time.monotonic)."""
        for t, block in list(self.blocks):
            if t > t0 and np.abs(np.frombuffer(block, "<i2")).max() > level * 32768:
                return t
        return None

    def stop(self) -> np.ndarray:
        self.proc.terminate()
        self.proc.wait(10)
        self._reader.join(10)
        return self.audio()


def play(env: dict[str, str], sink: str, audio: np.ndarray, timeout: float = 120) -> None:
    """Play 16 kHz mono `audio` into `sink`; returns once the sink has played it all."""
    subprocess.run(["pacat", f"--device={sink}", "--format=s16le", f"--rate={PULSE_RATE}", "--channels=1"],
                   input=to_int16(resample(audio, RATE, PULSE_RATE)).tobytes(), env=env, check=True, timeout=timeout)
