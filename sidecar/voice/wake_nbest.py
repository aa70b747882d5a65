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

In noise tiny.en seldom has the name among its guesses at all (held-out v2 at 10 dB SNR: 73 of
210 wake words lost there), where whisper base, prompted the same way, has it for most (61 of
those 74 clips). But base also writes the name for "Hey Stuart", "Hey Sarah", "Hey Stephen" in
clean speech (16 false accepts in 4 min of look-alikes, against tiny.en's 0), so a `noisy` model
reads only heads whose estimated SNR is under `noisy_below_db`; it loads at its first such head.
"""

from __future__ import annotations

import numpy as np

from sidecar.voice.asr_ct2 import CT2Transcriber
from sidecar.voice.audio import RATE, snr_db


class NameHypotheses:
    """The n-best readings of an utterance's head, from the CTranslate2 model the ASR already
    loaded (one copy of the model in memory), or one of its own when whisper.cpp transcribes;
    for a noisy head, from `noisy` if given."""

    def __init__(self, model: CT2Transcriber, n: int = 4, head_s: float = 3.0, *,
                 noisy: CT2Transcriber | None = None, noisy_below_db: float = 25.0) -> None:
        self.model, self.n, self.head_s = model, n, head_s
        self.noisy_model, self.noisy_below_db = noisy, noisy_below_db

    def noisy(self, audio: np.ndarray) -> bool:
        """Whether the noisy model reads this utterance."""
        head = np.asarray(audio, np.float32)[:int(self.head_s * RATE)]
        return self.noisy_model is not None and snr_db(head) < self.noisy_below_db

    def __call__(self, audio: np.ndarray, prompt: str = "") -> list[str]:
        """The `n` best readings of the first `head_s` seconds of a float32 16 kHz utterance."""
        head = np.asarray(audio, np.float32)[:int(self.head_s * RATE)]
        model = self.noisy_model if self.noisy(head) else self.model
        assert model is not None
        return model.readings(head, self.n, prompt)
