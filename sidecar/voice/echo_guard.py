"""The echo guard: Stella's own voice, heard back through the microphone, is not the user.

`EchoGuard` (inside the endpointer) keeps Stella's voice, heard back through the
microphone, from counting as speech. Playback sends the level of everything it will play
(`PlaybackLevelsFrame`, volume included) ahead of time; for each 32 ms VAD window the guard
takes the loudest reference level within the possible speaker→microphone delay
(`echo_delay_ms`) and compares the microphone's energy with it. Echo can never be louder
than that loudest level times the room's coupling; the coupling is learnt as a high
percentile of the ratios seen while Stella speaks, windows taken for the user left out
(starting from `echo_coupling_db`). A
window is the user only if the VAD hears speech *and* it is `echo_margin_db` above the
echo that coupling allows, for `barge_in_windows` windows in a row; otherwise the VAD's
probability is replaced by 0, so echo never starts an utterance. The pre-roll of such an
onset keeps the windows just before it that were louder than her echo can be (the quiet
start of the first syllable), and only them: what came before was her echo, not the user.
"Louder than her echo can be" is judged twice, and either will do: against her usual residue
(the learnt coupling), and against the loudest of her echo in the last half second. The
learnt coupling remembers the canceller's worst moments (a reply's first half second, before
the filter has converged) for many seconds: measured in the simulated room at -6 dB, the
cleaned echo ran at -27 to -36 dB while the coupling stood at -9 dB, and the "T" of "Tell me
about Paris" (-13 dB) was cut from the pre-roll ("Help me am out Paris").
The guard listens to the echo-cancelled microphone (`sidecar/voice/aec.py`), so
the coupling it learns is what the canceller leaves of her voice — never less than
`echo_coupling_floor_db`: when the room's path jumps (a sound server's latency moved) the
filter lets her voice through for a second or so, more than its usual residue (measured
through PulseAudio: a false barge-in on the last syllable of a reply with no floor) — and a user quieter at the
microphone than the echo itself is still heard (measured in tests/bench/bargein_echo.py).
"""

from __future__ import annotations

import collections
import logging

import numpy as np

from sidecar.frames import PlaybackLevelsFrame
from sidecar.voice.aec import DelayTracker, Reference
from sidecar.voice.audio import RATE, level_db

log = logging.getLogger(__name__)

REFERENCE_FLOOR = 1e-6  # mean-square below this (-60 dBFS) plays as silence: nothing to echo
MIN_HISTORY = 8  # windows (~0.25 s) of Stella's speech before the learnt coupling replaces the prior
COUPLING_PERCENTILE = 95
# The canceller is trusted on a reply once it has removed `PROOF_DB` on average over `PROOF_WINDOWS`
# windows in a row of it; a pause of `REST_S` with nothing playing takes the trust away again.
# Through PulseAudio the echo path moves by tens of ms between replies (seen: 19 -> 47 ms, 41 ->
# 51 ms), and the filter then lets her voice through at the next reply's start until it has
# re-adapted: judged against the residue it leaves when settled, that was a talk-over.
PROOF_DB = 10.0
PROOF_WINDOWS = 6
REST_S = 1.0
LOCAL_WINDOWS = 16  # ~0.5 s: her echo "just before" an onset, for what the pre-roll keeps
# The guard looks this much further back than the canceller's measured delay: the path wanders by
# tens of ms between two measurements, and the room's reverb trails the direct sound.
DELAY_SLACK_S = 0.06


class Ratios:
    """Window levels relative to what was played (dB), the last `history` of them, and their high
    percentile: the coupling they show. The percentile is read several times a window and changes
    only when a ratio is added, so it is kept until then."""

    def __init__(self, history: int) -> None:
        self._ratios: collections.deque[float] = collections.deque(maxlen=history)
        self._level: float | None = None

    def add(self, ratio_db: float) -> None:
        self._ratios.append(ratio_db)
        self._level = None

    def level(self, prior_db: float) -> float:
        """A high percentile of the ratios seen while she spoke, or the prior until there are enough."""
        if len(self._ratios) < MIN_HISTORY:
            return prior_db
        if self._level is None:
            self._level = float(np.percentile(self._ratios, COUPLING_PERCENTILE))
        return self._level


class EchoGuard:
    def __init__(self, *, threshold: float, margin_db: float, max_delay_s: float, prior_coupling_db: float,
                 windows: int, floor_db: float = -60.0, hop_s: float = 0.02, history: int = 400,
                 proof_db: float = PROOF_DB, rest_s: float = REST_S, played: Reference | None = None,
                 tracker: DelayTracker | None = None) -> None:
        self.threshold = threshold
        self.margin_db = margin_db
        self.max_delay_s = max_delay_s
        self.prior_db = prior_coupling_db
        self.floor_db = floor_db
        self.windows = windows
        self.hop_s = hop_s
        self._energy: dict[int, float] = {}  # hop index on the timeline -> mean square played then
        self._ratios = Ratios(history)
        self._raw_ratios = Ratios(history)  # the same, uncancelled
        self._run = 0  # consecutive windows that were the user's voice (the last one included)
        self._clear = 0  # consecutive windows that were not her echo: louder than it can be, or nothing playing
        self._recent: collections.deque[float] = collections.deque(maxlen=LOCAL_WINDOWS)  # her echo's last levels
        self.active = False  # the last window could have had Stella's echo in it
        self.proof_db, self.rest_s = proof_db, rest_s
        self.played = played  # the canceller's record of what the output played, when it played
        self.tracker = tracker  # the canceller's measure of the speaker -> microphone delay
        self.trusted = False  # the canceller has shown on this reply that it removes her echo
        self._proof: collections.deque[float] = collections.deque(maxlen=PROOF_WINDOWS)  # dB it removed
        self._quiet = 0.0  # seconds since anything played

    def reference(self, frame: PlaybackLevelsFrame) -> None:
        first = self._hop(frame.start)
        for k in [k for k in self._energy if k >= first or k < first - 500]:  # replaced, or 10 s past
            if frame.cut or k < first:
                del self._energy[k]
        for k, rms in enumerate(frame.rms):
            self._energy[first + k] = float(rms) ** 2

    @property
    def user_run(self) -> int:
        """How many windows in a row, up to the last, were above what her echo can be: the
        user's (an onset's first windows, quieter than its vowel, are below the VAD's
        threshold but not her echo, and whisper needs them)."""
        return self._clear

    @property
    def coupling_db(self) -> float:
        """How loud Stella's echo can be, relative to what is played (dB): what barge-in takes."""
        return max(self.floor_db, self.residue_db)

    @property
    def residue_db(self) -> float:
        """How loud her echo usually is (the learnt coupling, no floor): a window above it is not
        her echo, which is what the pre-roll of a talk-over keeps."""
        return self._ratios.level(self.prior_db)

    def gate(self, window: np.ndarray, t: float, probability: float, raw: np.ndarray | None = None) -> float:
        """The VAD probability of the window at `t`, or 0 if it is only Stella's echo. `raw` is
        the same window before echo cancellation, when `window` is cancelled."""
        reference = self._echo_reference(t, len(window) / RATE)
        self.active = reference >= REFERENCE_FLOOR
        if not self.active:
            self._run = 0
            self._clear += 1
            self._quiet += len(window) / RATE
            if self._quiet >= self.rest_s:  # a new reply: the path may have moved meanwhile
                self.trusted = False
                self._proof.clear()
                self._recent.clear()
            return probability
        ratio_db = level_db(window) - 10 * np.log10(reference)
        raw_db = ratio_db if raw is None else level_db(raw) - 10 * np.log10(reference)
        heard_db = min(ratio_db, raw_db)  # a canceller can take her voice out, never put the user's in
        self._quiet = 0.0
        if raw is not None and not self.trusted:
            self._proof.append(raw_db - ratio_db)
            self.trusted = len(self._proof) == self._proof.maxlen and float(np.mean(self._proof)) >= self.proof_db
        recent = max(self._recent) if len(self._recent) == self._recent.maxlen else self.residue_db
        clear = heard_db > min(self.residue_db, recent) + self.margin_db
        self._clear = self._clear + 1 if clear else 0
        if not clear:
            self._recent.append(heard_db)
        user = probability >= self.threshold and heard_db > self.allowed_db + self.margin_db
        if not user:  # learn the coupling from echo only: the user talking over it is not echo
            self._ratios.add(ratio_db)
            self._raw_ratios.add(raw_db)
        self._run = self._run + 1 if user else 0
        if log.isEnabledFor(logging.DEBUG):  # the decision's figures, window by window
            log.debug("guard t=%.3f p=%.2f cleaned=%.1f raw=%.1f allowed=%.1f residue=%.1f raw_coupling=%.1f run=%d",
                      t, probability, ratio_db, raw_db, self.allowed_db, self.residue_db, self.raw_coupling_db,
                      self._run)
        if self._run == self.windows:
            log.info("echo guard: the user's voice at %.2f s, %.1f dB over what is played (cleaned; %.1f dB as heard), "
                     "her echo allowed %.1f dB (raw %.1f dB, cancelled %s)", t, ratio_db, raw_db,
                     self.allowed_db, self.raw_coupling_db, "yes" if self.trusted else "not yet")
        return probability if self._run >= self.windows else 0.0

    @property
    def allowed_db(self) -> float:
        """The echo a window may hold and still be only hers: what the canceller leaves once it
        has shown, on this reply, that it cancels; until then, her echo as the microphone hears it."""
        return self.coupling_db if self.trusted else max(self.coupling_db, self.raw_coupling_db)

    @property
    def raw_coupling_db(self) -> float:
        """How loud her echo is before cancellation (the room's coupling as learnt)."""
        return self._raw_ratios.level(self.prior_db)

    @property
    def reach_s(self) -> float:
        """How long after it played her voice may still reach the microphone: `max_delay_s`, or
        longer when the canceller measured a longer path. A loaded sound server's path grew from
        100 to 280 ms in one reply; looking back only 200 ms, the guard took the end of each of
        her words for the user, and she interrupted herself."""
        delay = None if self.tracker is None else self.tracker.delay_s
        return self.max_delay_s if delay is None else max(self.max_delay_s, delay + DELAY_SLACK_S)

    def _echo_reference(self, t: float, duration: float) -> float:
        """The loudest level played between `reach_s` before the window and its end: as playback
        scheduled it, and as the output really played it (a stalled output plays late)."""
        first, last = self._hop(t - self.reach_s) - 1, self._hop(t + duration) + 1
        scheduled = max((self._energy.get(k, 0.0) for k in range(first, last + 1)), default=0.0)
        hop = round(self.hop_s * RATE)
        if self.played is None or self.played.silent_from(first * hop):
            return scheduled
        audio = self.played.read(first * hop, (last - first + 1) * hop).astype(np.float64)
        return max(scheduled, float(np.max(np.mean(np.square(audio.reshape(-1, hop)), axis=1))))

    def _hop(self, t: float) -> int:
        return int(np.floor(t / self.hop_s))
