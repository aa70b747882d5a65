"""Lip sync and idle animation cues, computed from the audio that is about to be heard.

The mouth follows the RMS level of each 20 ms of speech (what the ear follows too); the same
envelope, scaled by the volume, is the echo guard's reference. Blinks come at irregular
intervals of a few seconds, as people blink, from a seeded generator so runs repeat.
"""

from __future__ import annotations

import random

import numpy as np

HOP_S = 0.02
FULL_OPEN_RMS = 0.3  # speech this loud opens the mouth fully


def rms_envelope(audio: np.ndarray, rate: int, hop_s: float = HOP_S) -> np.ndarray:
    """RMS of each `hop_s` of `audio` (a last partial hop counts as a whole one)."""
    hop = max(1, round(rate * hop_s))
    n = -(-len(audio) // hop)
    if n == 0:
        return np.zeros(0, np.float32)
    padded = np.zeros(n * hop, np.float32)
    padded[:len(audio)] = audio
    return np.sqrt(np.mean(np.square(padded.reshape(n, hop)), axis=1)).astype(np.float32)


def mouth_levels(audio: np.ndarray, rate: int, hop_s: float = HOP_S) -> np.ndarray:
    """Mouth openness 0..1 per `hop_s` of speech."""
    return np.clip(rms_envelope(audio, rate, hop_s) / FULL_OPEN_RMS, 0.0, 1.0)


class Blinks:
    """When the next blink is due: every 2-6 s, irregularly."""

    def __init__(self, seed: int = 0, shortest_s: float = 2.0, longest_s: float = 6.0) -> None:
        self._random = random.Random(seed)
        self.shortest_s, self.longest_s = shortest_s, longest_s
        self.next_at = self._gap()

    def due(self, now: float) -> float | None:
        """The time of a blink due by `now` (then schedules the next), else None."""
        if now < self.next_at:
            return None
        at = self.next_at
        self.next_at = max(now, at) + self._gap()
        return at

    def _gap(self) -> float:
        return self._random.uniform(self.shortest_s, self.longest_s)
