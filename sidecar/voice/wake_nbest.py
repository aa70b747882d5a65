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

Prompted with the phrase, whisper also writes the name for a look-alike ("Hey Estelle", "Hey
Fella", "Hey Celia" -> "Hey Stella."): on v3 (now seen), all 17 false wakes of the phrase engine on
this machine were look-alike greetings written so. `check` asks whisper for its own odds of the
name with no prompt: the log-probability of the name's tokens after the words before it,
teacher-forced on the utterance's head (`CT2Transcriber.odds`, ~60 ms on tiny.en). With
`name_check`, a name the audio barely supports (below `name_floor`) is not taken. On v3 those 17
false wakes scored -12.0 to -2.4 (12 under -9.5), its clean wake words -11.8 to -0.1 (3 of 194 under
-9.5). In 10 dB noise the wake words scored as low as -13.5 (31 of 205 under -9.5): whisper is unsure
of every word there, so nothing is scored in noise (the head's SNR under `noisy_below_db`). On the
held-out set v4, whose voices include English said by Spanish, Italian and French espeak-ng voices,
the floor cost 12 of 216 clean wake words for 3 fewer false wakes, so it does not decide by default:
the odds go to Settings' "try it" meter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sidecar.voice.asr_ct2 import CT2Transcriber
from sidecar.voice.audio import RATE, snr_db
from sidecar.voice.wake import NameMatch


@dataclass(frozen=True)
class NameOdds:
    """Whisper's odds for the name without the prompt (None: not scored), the floor, and whether the
    floor decides (else the odds are only shown: Settings' meter)."""

    odds: float | None
    floor: float | None = None
    enforced: bool = False

    @property
    def taken(self) -> bool:
        return not self.enforced or self.odds is None or self.floor is None or self.odds >= self.floor


class NameHypotheses:
    """The n-best readings of an utterance's head, from the CTranslate2 model the ASR already
    loaded (one copy of the model in memory), or one of its own when whisper.cpp transcribes;
    for a noisy head, from `noisy` if given."""

    def __init__(self, model: CT2Transcriber, n: int = 4, head_s: float = 3.0, *,
                 noisy: CT2Transcriber | None = None, noisy_below_db: float = 25.0,
                 name_floor: float = -9.5, name_check: bool = False) -> None:
        self.model, self.n, self.head_s = model, n, head_s
        self.noisy_model, self.noisy_below_db = noisy, noisy_below_db
        self.name_floor, self.name_check = name_floor, name_check  # name_check: the floor decides

    def head(self, audio: np.ndarray) -> np.ndarray:
        """The first `head_s` seconds of a float32 16 kHz utterance: all that is read or scored."""
        return np.asarray(audio, np.float32)[:int(self.head_s * RATE)]

    def noisy(self, audio: np.ndarray) -> bool:
        """Whether the noisy model reads this utterance."""
        return self.noisy_model is not None and self.in_noise(audio)

    def __call__(self, audio: np.ndarray, prompt: str = "") -> list[str]:
        """The `n` best readings of the utterance's head."""
        head = self.head(audio)
        model = self.noisy_model if self.noisy(head) else self.model
        assert model is not None
        return model.readings(head, self.n, prompt)

    def primed(self, audio: np.ndarray, prompt: str) -> list[str]:
        """The `n` best readings of the utterance's head by `noisy`, if given, in a quiet room too: the
        check of a name only the acoustic model heard, where tiny.en hears an accent's name seldom
        (seen v7: 22 of 60 clean wake words whose transcript lacked it; base 55 of 60)."""
        model = self.noisy_model or self.model
        return model.readings(self.head(audio), self.n, prompt)

    def prepare(self, words: str) -> None:
        """Encode the words the name check will score (a model still to load is left for its first check)."""
        if isinstance(self.model, CT2Transcriber):
            self.model.prepare(words)

    def name_odds(self, audio: np.ndarray, found: NameMatch, spellings: list[str]) -> float | None:
        """Whisper's best log-probability, without a prompt, for any of the name's `spellings` after
        the words before it (always the ASR's own model: the floor was chosen on it); None if it
        cannot tell."""
        return max(self.model.odds(self.head(audio), found.lead, spellings), default=None)

    def check(self, audio: np.ndarray, found: NameMatch, spellings: list[str]) -> NameOdds:
        """How likely the name found in what whisper wrote is without the prompt; scored in a quiet
        room only (in noise whisper's odds fall for every word, the name's with them)."""
        return self.judge(audio, lambda: self.name_odds(audio, found, spellings))

    def judge(self, audio: np.ndarray, odds: Callable[[], float | None]) -> NameOdds:
        """The name's odds (asked for only in a quiet room) against the floor; unscored in noise."""
        return NameOdds(None) if self.in_noise(audio) else NameOdds(odds(), self.name_floor, self.name_check)

    def in_noise(self, audio: np.ndarray) -> bool:
        """Whether the utterance's head is under `noisy_below_db` of SNR (the name check is off there)."""
        return snr_db(self.head(audio)) < self.noisy_below_db
