"""The "hey stella" acoustic model: a small network on openWakeWord's speech embeddings.

openWakeWord's front end (a mel spectrogram and Google's speech embedding model, shipped in the
pyopen-wakeword wheel) turns every 80 ms of audio into a 96-number embedding; the published
wake models are small heads on the last 16 of them. No published model says "Stella", so this
is our own head, trained on synthetic speech from many voices (tests/voice/wake_train.py) and
run in numpy. It is three networks (1536 -> 256 -> 256 -> 1, from three seeds) whose logits are
averaged — one alone varies from seed to seed on voices it never heard — stored as one wider
network (`wake_train.ensemble`), so this file runs any of them the same way: some 0.2 ms a window
beside the front end's 4 ms.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

WINDOW = 16  # embeddings a window (1.28 s)
FEATURES = 96
MODELS = Path(__file__).parent / "models"


@dataclass
class WakeNet:
    mean: np.ndarray  # (1536,) the inputs' standardisation
    std: np.ndarray
    w1: np.ndarray  # (1536, hidden)
    b1: np.ndarray
    w2: np.ndarray  # (hidden, hidden)
    b2: np.ndarray
    w3: np.ndarray  # (hidden,)
    b3: np.ndarray  # ()

    @classmethod
    def load(cls, path: Path) -> WakeNet:
        with np.load(path) as f:
            return cls(**{k: f[k].astype(np.float32) for k in cls.__dataclass_fields__})

    @classmethod
    def builtin(cls, name: str) -> WakeNet:
        path = MODELS / f"{name}.npz"
        if not path.exists():
            raise ValueError(f"no trained wake model {name!r} in {MODELS}")
        return cls.load(path)

    def save(self, path: Path) -> None:
        np.savez_compressed(path, **{k: getattr(self, k).astype(np.float16 if k.startswith("w") else np.float32)
                                     for k in self.__dataclass_fields__})

    def hidden(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h1 = np.maximum(0, ((x - self.mean) / self.std) @ self.w1 + self.b1)
        return h1, np.maximum(0, h1 @ self.w2 + self.b2)

    def logit(self, x: np.ndarray) -> np.ndarray:
        return self.hidden(x)[1] @ self.w3 + self.b3

    def score(self, x: np.ndarray) -> np.ndarray:
        """Probabilities for windows `x`, shape (n, 1536) -> (n,)."""
        return 1 / (1 + np.exp(-np.clip(self.logit(x), -30, 30)))
