"""What else whisper could have heard: n-best readings of an utterance's first seconds.

The one transcript whisper gives is its best guess; for an accented or noisy "Hey Stella" it
is often "Case Taylor", "Hey, stay look" or "Please tell us", while "Hey Stella" is among its
next few guesses. When the name matcher finds nothing in the transcript of an utterance that
must be checked (the phrase engine's every utterance, the two-stage engine's candidates),
`NameHypotheses` decodes the first `head_s` seconds again with beam search and returns the
`n` best readings; the turn taker accepts the wake word if the matcher finds the name in one.

On the bench's tuning voices (n=4, 3 s, prompted with the phrase) this recovered most
wake words whisper's first guess missed in 10 dB noise and accepted none of 409 other
utterances; it costs ~0.2 s of one core per checked utterance (CTranslate2 int8, its window
only as long as the head).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from remote_api.shared.models.whisper_ggml import _byte_decoder, _read_vocabulary
from sidecar.voice.asr import LEAD_IN
from sidecar.voice.asr_ct2 import BPE, window
from sidecar.voice.audio import RATE
from sidecar.voice.logmel import log_mel


class NameHypotheses:
    def __init__(self, folder: Path, n: int = 4, head_s: float = 3.0, threads: int = 1) -> None:
        import ctranslate2

        self._ct2 = ctranslate2
        self._model = ctranslate2.models.Whisper(str(folder), device="cpu", compute_type="int8",
                                                 intra_threads=threads, inter_threads=1)
        self.n, self.head_s = n, head_s
        self._vocab = _read_vocabulary(folder)
        self._bytes = _byte_decoder()
        self._bpe = BPE(folder)
        ids = {t: i for i, t in enumerate(self._vocab) if t.startswith("<|")}
        self._start = [ids["<|startoftranscript|>"], ids["<|notimestamps|>"]]
        self._prev = ids["<|startofprev|>"]
        self._end = ids["<|endoftext|>"]

    def __call__(self, audio: np.ndarray, prompt: str = "") -> list[str]:
        """The `n` best readings of the first `head_s` seconds of a float32 16 kHz utterance."""
        head = audio[:int(self.head_s * RATE)]
        if len(head) < RATE // 10:
            return []
        seconds = (LEAD_IN + len(head)) / RATE
        frames = window(seconds)
        padded = np.zeros(frames * 160 + 160, np.float32)  # log_mel drops the last frame
        padded[LEAD_IN:LEAD_IN + len(head)] = head
        features = self._ct2.StorageView.from_array(np.ascontiguousarray(log_mel(padded)[None, :, :frames]))
        tokens = ([self._prev, *self._bpe.encode(" " + prompt.strip())] if prompt.strip() else []) + self._start
        (result,) = self._model.generate(features, [tokens], beam_size=self.n, num_hypotheses=self.n,
                                         max_length=int(8 * seconds) + 8)
        return [self._text(ids) for ids in result.sequences_ids]

    def _text(self, ids: list[int]) -> str:
        return bytes(self._bytes[c] for i in ids if i < self._end for c in self._vocab[i]).decode(
            "utf-8", errors="replace").strip()
