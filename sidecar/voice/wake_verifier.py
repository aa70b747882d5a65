"""Personal enrolment: a verifier of the user's own "Hey Stella", from three takes of it.

openWakeWord's recipe for a custom verifier — a logistic regression on the wake model's input,
trained on a few of the user's own wake words against other speech — on our model's input: the
window of 16 speech embeddings (1.28 s) the acoustic model scores. The positives are the user's
takes: each take's best window and its neighbours, clean and over pink noise at 10 and 5 dB (a
room is rarely quiet, and clean takes alone teach the line that noise means "not her"). The
negatives are a bank of other speech, look-alikes, silence and beds shipped beside the model
(`models/<name>_others.npz`, written by tests/voice/wake_train.py), and the room before each take.

Once enrolled, a window the model scores over its floor wakes her only if the verifier accepts
it too — and then without waiting for whisper's reading (`wake_confirm.AcousticOpinion`): the bar
goes up for other voices and down for hers. Measured by tests/bench/wake_enrol.py.

`TakeRecorder` is the sans-I/O bookkeeping of the takes (a window, its score and its audio each
80 ms in; a take `Heard` out when one has been said, made a `Take` off the event loop);
`Enrolment` turns three takes into a `Verifier`, which the store keeps as plain JSON
(`to_stored` / `from_stored`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sidecar.voice.wake_net import FEATURES, MODELS, WINDOW

WIDTH = WINDOW * FEATURES
TAKES = 3
# A take is a best window scoring what wakes her (the model's floor, given to `TakeRecorder`): ordinary
# speech scores up to 0.4 (measured), and a "hello" learnt as the user's wake word would wake her on it.
# Windows under QUIET_FLOOR before a take are the room the user says it in.
QUIET_FLOOR = 0.2
PATIENCE_S = 30.0  # this much audio without a take: she is not hearing her name, and says so
SETTLE_HOPS = 6  # a take ends this many hops (0.48 s) after its best score
BEFORE_HOPS = 30  # audio before the best window's end the noisy copies are made from (2.4 s)
QUIET_HOPS = (28, 18)  # windows this many steps before the best one (and not a take): the room before it
HISTORY = BEFORE_HOPS + SETTLE_HOPS + 4
NOISE_SNR_DB = (10.0, 5.0)
L2 = 1.0
STEPS = 300


@dataclass(frozen=True)
class Verifier:
    """A logistic regression on the model's windows: P(the enrolled user's wake word)."""

    mean: np.ndarray  # (WIDTH,) the windows' standardisation
    scale: np.ndarray
    w: np.ndarray  # (WIDTH,)
    b: float

    def score(self, windows: np.ndarray) -> np.ndarray:
        """Probabilities for windows (n, WIDTH) -> (n,)."""
        z = ((windows - self.mean) / self.scale) @ self.w + self.b
        return 1 / (1 + np.exp(-np.clip(z, -30, 30)))

    def to_stored(self) -> dict[str, object]:
        return {"mean": self.mean.tolist(), "scale": self.scale.tolist(), "w": self.w.tolist(), "b": self.b}

    @classmethod
    def from_stored(cls, stored: object) -> Verifier:
        """The stored verifier; ValueError saying what to do if it cannot be used."""
        try:
            arrays = {k: np.asarray(stored[k], np.float32) for k in ("mean", "scale", "w")}  # type: ignore[index]
            b = float(stored["b"])  # type: ignore[index]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"the saved voice enrolment is unreadable ({e}): teach her your voice again in "
                             "Settings") from None
        if any(a.shape != (WIDTH,) for a in arrays.values()):
            raise ValueError("the saved voice enrolment was made for another wake model: teach her your voice "
                             "again in Settings")
        return cls(arrays["mean"], arrays["scale"], arrays["w"], b)


def fit(positive: np.ndarray, negative: np.ndarray, l2: float = L2, steps: int = STEPS) -> Verifier:
    """Logistic regression, each class weighing half (a few positives against thousands), by
    gradient descent on standardised windows: deterministic, and no solver to ship."""
    x = np.concatenate([positive, negative]).astype(np.float32)
    y = np.r_[np.ones(len(positive)), np.zeros(len(negative))].astype(np.float32)
    mean, scale = x.mean(0), x.std(0) + 1e-3
    xs = (x - mean) / scale
    weight = np.where(y == 1, 0.5 / len(positive), 0.5 / len(negative)).astype(np.float32)
    w, b = np.zeros(x.shape[1], np.float32), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(xs @ w + b, -30, 30)))
        g = weight * (p - y)
        w -= 0.5 * (xs.T @ g + l2 * w / len(x))
        b -= 0.5 * float(g.sum())
    return Verifier(mean, scale, w, b)


def others(name: str) -> np.ndarray:
    """The bank of other speech's windows shipped beside the model (n, WIDTH)."""
    path = MODELS / f"{name}_others.npz"
    if not path.exists():
        raise ValueError(f"no bank of other speech for {name!r} in {MODELS}: enrolment needs it")
    with np.load(path) as f:  # 8-bit steps of each feature's range (tests/voice/wake_train.py: save_bank)
        return f["low"] + f["q"].astype(np.float32) * f["step"]


def pink(n: int, rng: np.random.Generator) -> np.ndarray:
    """Unit-power pink noise (power falling as 1/f, like a room's hum and fan more than white hiss)."""
    spectrum = np.fft.rfft(rng.standard_normal(n)) / np.sqrt(np.arange(1, n // 2 + 2))
    x = np.fft.irfft(spectrum, n)
    return x / np.sqrt(np.mean(x ** 2))


def noisy_copies(pcm: np.ndarray, snrs_db: tuple[float, ...], rng: np.random.Generator) -> list[np.ndarray]:
    """`pcm` (int16) over pink noise at each SNR, measured against its speech (samples over -40 dBFS)."""
    x = pcm.astype(np.float32) / 32768
    loud = x[np.abs(x) > 0.01]
    level = float(np.sqrt(np.mean(loud ** 2))) if len(loud) else 0.01
    return [(np.clip(x + level / 10 ** (snr / 20) * pink(len(x), rng), -1, 1) * 32767).astype(np.int16)
            for snr in snrs_db]


@dataclass(frozen=True)
class Take:
    """One take of the wake word: its windows (the best, its neighbours, their noisy copies) and
    the room before it."""

    score: float
    windows: np.ndarray  # (k, WIDTH)
    quiet: np.ndarray  # (m, WIDTH)


@dataclass(frozen=True)
class Heard:
    """A take as heard, before its noisy copies are made (`TakeRecorder.take`, the slow part)."""

    score: float
    windows: list[np.ndarray]  # the best window and its neighbours
    audio: np.ndarray  # int16: the front end's warm-up, then the steps up to just after the best window
    at: int  # the best window's index among the windows of `audio`
    quiet: np.ndarray  # (m, WIDTH)


class TakeRecorder:
    """Finds takes in the microphone's hops: a best score of at least `floor`. `embed(pcm)` is the
    model's front end run afresh on int16 audio: one window per complete step (`WakeModel.windows`),
    for the noisy copies.

    Hops are counted in steps of audio (a hop carries its step's audio when it is the step's
    last: `wake.Hop`), so a burst of scores from one step does not shift the takes' audio.
    `hop` is quick and says when a take was `Heard`; `take` makes its noisy copies (a second or
    more of CPU: off the event loop)."""

    def __init__(self, embed: Callable[[np.ndarray], np.ndarray], floor: float, seed: int = 0) -> None:
        self.embed = embed
        self.floor = floor
        self.rng = np.random.default_rng(seed)
        self._audio: deque[tuple[int, np.ndarray]] = deque(maxlen=HISTORY)  # (step, its audio)
        self._windows: deque[tuple[int, np.ndarray, float]] = deque(maxlen=HISTORY)  # (step, window, score)
        self._steps = 0
        self._last_take = 0  # the step the last take was heard at (or recording began)
        self._best: tuple[int, float] | None = None  # (hops since the best score, the best score)

    def hop(self, pcm: np.ndarray, window: np.ndarray, score: float) -> Heard | None:
        """One hop: its audio (empty but on a step's last hop), the window it scored and its score;
        what was `Heard` once a take has settled."""
        self._windows.append((self._steps, window.reshape(-1), score))
        if len(pcm):
            self._audio.append((self._steps, pcm))
            self._steps += 1
        if self._best is None:
            self._best = (0, score) if score >= self.floor else None
            return None
        since, best = self._best
        self._best = (0, score) if score > best else (since + 1, best)
        if self._best[0] < SETTLE_HOPS:
            return None
        since, best = self._best
        self._best = None
        self._last_take = self._steps
        return self._heard(len(self._windows) - 1 - since, best)

    def waited(self, step_s: float) -> bool:
        """Whether `PATIENCE_S` of audio (steps of `step_s`) went by without a take."""
        return (self._steps - self._last_take) * step_s >= PATIENCE_S

    def _heard(self, peak: int, score: float) -> Heard:
        step = self._windows[peak][0]
        audio = [(n, pcm) for n, pcm in self._audio if step - BEFORE_HOPS <= n <= step + 1]
        lead = np.zeros(12 * len(audio[0][1]), np.int16)  # the front end's own warm-up, as at a stream's start
        quiet = [w for n, w, s in self._windows if step - QUIET_HOPS[0] <= n < step - QUIET_HOPS[1] and s < QUIET_FLOOR]
        return Heard(score, [self._windows[i][1] for i in (peak - 1, peak, peak + 1)],
                     np.concatenate([lead, *(pcm for _, pcm in audio)]), 12 + step - audio[0][0],
                     np.stack(quiet) if quiet else np.zeros((0, WIDTH), np.float32))

    def take(self, heard: Heard) -> Take:
        """The take with its windows over pink noise too."""
        windows = list(heard.windows)
        for copy in noisy_copies(heard.audio, NOISE_SNR_DB, self.rng):
            windows += list(self.embed(copy)[heard.at - 1:heard.at + 2])
        return Take(heard.score, np.stack(windows), heard.quiet)


@dataclass
class Enrolment:
    """Three takes in, a `Verifier` out."""

    takes: list[Take] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return len(self.takes) >= TAKES

    def verifier(self, bank: np.ndarray) -> Verifier:
        """The takes against `bank`, the other speech shipped with the model (`others`)."""
        if not self.done:
            raise ValueError(f"enrolment needs {TAKES} takes, has {len(self.takes)}")
        return fit(np.concatenate([t.windows for t in self.takes]),
                   np.concatenate([bank, *(t.quiet for t in self.takes)]))
