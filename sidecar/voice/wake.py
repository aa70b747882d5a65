"""Wake words: the always-on acoustic engine and the name matcher of the custom phrase.

* `AcousticWake` runs an openWakeWord model (hey jarvis, alexa, ..., or our own hey_stella head,
  `wake_net`) on every 80 ms of audio — 5–14 % of one core here — and emits a `WakeFrame` when
  the score crosses the threshold; or, as the two-stage engine's trigger and beside the phrase
  engine's whisper (`wake_confirm`), candidates that only weigh in: its own or a microWakeWord
  model's (`MicroWakeModel`, ~6 ms of CPU per second).
* `NameMatcher` is the custom-phrase engine's decision ("hey stella"): whisper transcribes a
  VAD-gated utterance and the *name token* must be among its first words within edit distance
  1 ("stela" matches; "bella" does not) or sound like it (`wake_phonetic`: "stettler",
  "stellar", "estella"; not "stanley" or "still"). A plain fuzzy ratio over the whole phrase
  would let "hey luigi" through for "hey luna"; one edit on the name itself does not.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sidecar.config import TRAINED_WAKE_MODELS
from sidecar.frames import AudioFrame, EnrolFrame, EnrolmentFrame, Frame, WakeFrame
from sidecar.pipeline import Direction, Processor
from sidecar.voice.audio import RATE
from sidecar.voice.wake_confirm import WakeCandidateFrame
from sidecar.voice.wake_net import FEATURES, WINDOW, WakeNet
from sidecar.voice.wake_phonetic import another_name, phonetic_key, sounds_like
from sidecar.voice.wake_verifier import TAKES, Enrolment, TakeRecorder, Verifier

CHUNK = 1280  # openWakeWord's hop: 80 ms at 16 kHz
MICRO_STEP = 160  # microWakeWord's feature step: 10 ms


@dataclass(frozen=True)
class Hop:
    """One score of a wake model, the window it scored (our own models only), and the step of audio
    that ended it — on the step's last score only, empty on the others (a front end's first step
    yields a burst of scores: its buffers start full)."""

    score: float
    window: np.ndarray | None
    pcm: np.ndarray


NO_AUDIO = np.zeros(0, np.int16)


class Chunked:
    """A wake model's shell: int16 audio of any length in, one score list per `step` samples out."""

    step = CHUNK

    def __init__(self) -> None:
        self._pending = np.zeros(0, np.int16)

    def scores(self, pcm: np.ndarray) -> list[float]:
        """Scores for each complete step now available (usually 0 or 1 per call)."""
        return [hop.score for hop in self.hops(pcm)]

    def hops(self, pcm: np.ndarray) -> list[Hop]:
        self._pending = np.concatenate([self._pending, pcm])
        out: list[Hop] = []
        while len(self._pending) >= self.step:
            chunk, self._pending = self._pending[:self.step], self._pending[self.step:]
            scored = self._scored(chunk.tobytes())
            out += [Hop(score, window, chunk if i == len(scored) - 1 else NO_AUDIO)
                    for i, (score, window) in enumerate(scored)]
        return out

    def _scored(self, chunk: bytes) -> list[tuple[float, np.ndarray | None]]:
        """Each score of a step with the window it was for, when the model is our own (`NetDetector`)."""
        return [(score, None) for score in self._score(chunk)]

    def reset(self) -> None:
        self._reset()
        self._pending = np.zeros(0, np.int16)

    def _score(self, chunk: bytes) -> list[float]:
        raise NotImplementedError

    def _reset(self) -> None:
        raise NotImplementedError


class WakeModel(Chunked):
    """An openWakeWord model and its shared feature models, fed 80 ms at a time: a published
    model (`folder/<name>.tflite`) or our own head on the same embeddings (`wake_net`,
    "hey_stella")."""

    def __init__(self, folder: Path, name: str) -> None:
        from pyopen_wakeword import OpenWakeWord, OpenWakeWordFeatures
        from pyopen_wakeword.openwakeword import _find_tensorflowlite_c

        super().__init__()
        lib = _find_tensorflowlite_c()
        self.name = name
        self._front_end = (folder / "melspectrogram.tflite", folder / "embedding_model.tflite", lib)
        self._features = OpenWakeWordFeatures(*self._front_end)
        self._detector = NetDetector(WakeNet.builtin(name)) if name in TRAINED_WAKE_MODELS \
            else OpenWakeWord.from_model(folder / f"{name}.tflite", lib)

    @property
    def trained(self) -> bool:
        """Our own model (its windows can be verified and enrolled on)."""
        return isinstance(self._detector, NetDetector)

    def _scored(self, chunk: bytes) -> list[tuple[float, np.ndarray | None]]:
        if not isinstance(self._detector, NetDetector):
            return super()._scored(chunk)
        detector = self._detector
        return [(detector.process_streaming(embedding)[0], detector.window.reshape(-1).copy())
                for embedding in self._features.process_streaming(chunk)]

    def windows(self, pcm: np.ndarray) -> np.ndarray:
        """The windows a fresh front end makes of `pcm` (int16), one per complete step (the last of
        each): enrolment's noisy copies of a take, never the live stream's state."""
        from pyopen_wakeword import OpenWakeWordFeatures

        features = OpenWakeWordFeatures(*self._front_end)
        detector = NetDetector(self._detector.net) if isinstance(self._detector, NetDetector) else None
        if detector is None:
            raise ValueError(f"{self.name} is not one of our own models: it has no windows to enrol on")
        out = []
        try:
            for i in range(0, len(pcm) - CHUNK + 1, CHUNK):
                for embedding in features.process_streaming(pcm[i:i + CHUNK].tobytes()):
                    detector.push(embedding)
                out.append(detector.window.reshape(-1).copy())
        finally:
            features.close()
        return np.stack(out)

    def _score(self, chunk: bytes) -> list[float]:
        return [p for embedding in self._features.process_streaming(chunk)
                for p in self._detector.process_streaming(embedding)]

    def _reset(self) -> None:
        self._features.reset()
        self._detector.reset()


class NetDetector:
    """A `WakeNet` fed embeddings one at a time, as openWakeWord's detector is: a score for the
    last `WINDOW` of them at each."""

    def __init__(self, net: WakeNet) -> None:
        self.net = net
        self.reset()

    def process_streaming(self, embedding: np.ndarray) -> list[float]:
        self.push(embedding)
        return [float(self.net.score(self.window.reshape(1, -1))[0])]

    def push(self, embedding: np.ndarray) -> None:
        self.window[:-1] = self.window[1:]
        self.window[-1] = embedding.reshape(-1)

    def reset(self) -> None:
        self.window = np.zeros((WINDOW, FEATURES), np.float32)


class MicroWakeModel(Chunked):
    """A microWakeWord model (shipped in the pymicro-wakeword wheel): a probability every 30 ms,
    the mean of its last few outputs, as the model's own streaming front end computes it."""

    step = MICRO_STEP

    def __init__(self, name: str) -> None:
        from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

        try:
            model = Model(name)
        except ValueError:
            raise ValueError(f"no microWakeWord model {name!r}: choose one of {[m.value for m in Model]}") from None
        super().__init__()
        self.name = name
        self._detector = MicroWakeWord.from_builtin(model)
        self._features = MicroWakeWordFeatures()

    def _score(self, chunk: bytes) -> list[float]:
        probs = (self._detector.process_streaming_prob(f) for f in self._features.process_streaming(chunk))
        return [p for p in probs if p is not None]

    def _reset(self) -> None:
        self._detector.reset()
        self._features.reset()


class AcousticWake(Processor):
    """Scores all microphone audio; passes every frame on and adds a WakeFrame on detection —
    or, with `candidates`, a WakeCandidateFrame for the two-stage engine to confirm or the phrase
    engine to weigh (sent again whenever the score, or the verifier's, rises within the
    refractory time).

    After a detection the engine is deaf for `refractory_s`, so one "hey jarvis" is one wake.

    With a `verifier` (the user enrolled their voice: `wake_verifier`) each candidate carries its
    say too. An `EnrolFrame` starts (or cancels) enrolment: until three takes are in, the model's
    windows go to a `TakeRecorder` instead of making candidates, each take is reported
    (`EnrolmentFrame`), and the last one brings the new verifier, which listens from then on;
    `wake_verifier.PATIENCE_S` without a take ends it ("unheard"), nothing taught.
    `bank` gives the other speech enrolment weighs the takes against.
    """

    def __init__(self, model: WakeModel | MicroWakeModel, threshold: float, refractory_s: float = 1.5, *,
                 candidates: bool = False, verifier: Verifier | None = None,
                 bank: Callable[[], np.ndarray] | None = None) -> None:
        super().__init__()
        self.model = model
        self.threshold = threshold
        self.refractory_s = refractory_s
        self.candidates = candidates
        self.verifier = verifier
        self.bank = bank
        self._quiet_until = -1.0
        self._best = (0.0, 0.0)  # the best score and verifier's score since the last fresh detection
        self._recorder: TakeRecorder | None = None
        self._enrolment: Enrolment | None = None

    async def start(self) -> None:
        self.model.reset()

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, EnrolFrame):
            await self._enrol(frame.start)
            return
        await self.push(frame, direction)
        if not isinstance(frame, AudioFrame) or direction is not Direction.DOWN:
            return
        end = frame.t + frame.duration
        for hop in self.model.hops(frame.pcm):
            if self._recorder is not None:
                await self._record(hop)
            elif hop.score >= self.threshold:
                await self._detected(hop, end)

    async def _detected(self, hop: Hop, end: float) -> None:
        score, fresh = hop.score, end >= self._quiet_until
        personal = None if self.verifier is None or hop.window is None else \
            float(self.verifier.score(hop.window[None])[0])
        if fresh:
            self._quiet_until, self._best = end + self.refractory_s, (0.0, 0.0)
        if self.candidates and (score > self._best[0] or (personal or 0.0) > self._best[1]):
            # a candidate's best scores count (wake_confirm.AcousticOpinion): a higher one is sent too
            self._best = (max(score, self._best[0]), max(personal or 0.0, self._best[1]))
            await self.push(WakeCandidateFrame(word=self.model.name, score=round(score, 3), t=end,
                                               personal=None if personal is None else round(personal, 3)))
        elif fresh and not self.candidates:
            await self.push(WakeFrame(word=self.model.name, score=round(score, 3), engine="openwakeword", t=end))

    async def _enrol(self, start: bool) -> None:
        if not start:
            self._recorder = self._enrolment = None
            await self.push(EnrolmentFrame(taken=0, needed=TAKES, status="cancelled"))
            return
        if not isinstance(self.model, WakeModel) or not self.model.trained or self.bank is None:
            await self.push(EnrolmentFrame(taken=0, needed=TAKES, status="unavailable"))
            return
        self._recorder, self._enrolment = TakeRecorder(self.model.windows, self.threshold), Enrolment()
        await self.push(EnrolmentFrame(taken=0, needed=TAKES, status="listening"))

    async def _record(self, hop: Hop) -> None:
        assert self._recorder is not None and self._enrolment is not None and hop.window is not None
        recorder = self._recorder
        heard = recorder.hop(hop.pcm, hop.window, hop.score)
        if heard is None:
            if recorder.waited(self.model.step / RATE):  # not hearing her name: nothing is taught
                taken = len(self._enrolment.takes)
                self._recorder = self._enrolment = None
                await self.push(EnrolmentFrame(taken=taken, needed=TAKES, status="unheard"))
            return
        enrolment = self._enrolment
        enrolment.takes.append(await asyncio.to_thread(recorder.take, heard))  # its noisy copies: a second of CPU
        if not enrolment.done:
            await self.push(EnrolmentFrame(taken=len(enrolment.takes), needed=TAKES, status="listening"))
            return
        self._recorder = self._enrolment = None  # the verifier is worked out off the loop, listening goes on
        assert self.bank is not None
        self.verifier = await asyncio.to_thread(lambda: enrolment.verifier(self.bank()))  # type: ignore[misc]
        await self.push(EnrolmentFrame(taken=TAKES, needed=TAKES, status="done", verifier=self.verifier))


def words(text: str) -> list[str]:
    """Lower-case words without punctuation ("Hey, Stella!" -> ["hey", "stella"])."""
    return re.findall(r"[a-z0-9']+", text.lower().replace("_", " "))


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insert, delete, substitute)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


@dataclass(frozen=True)
class NameMatch:
    rest: str  # what the user said after the name ("" if only the wake phrase)
    upto: int = 0  # words up to and with the name
    lead: str = ""  # the words before the name as written, a "hey" run into it given back ("Case Taylor" -> "Hey")


# Words that may come before the name: greetings and fillers ("thanks, Stella" addresses her
# too), and how whisper writes a quick "hey" ("a", "eh", "hay").
LEAD_INS = frozenset({"hey", "hi", "hello", "hay", "heh", "a", "ay", "eh", "oh", "okay", "ok", "yo", "um", "uh", "so",
                      "thanks", "cool", "well", "right", "good", "morning", "evening"})
# "Hey Stella" run together is heard as "Case Taylor", "Face Tetler", "Here's Teller": the "s"
# went to the first word. These lead-ins give it back; "please" (a real "Please tell us") does not.
FUSED_LEAD_INS = frozenset({"case", "face", "here's", "peace", "hays", "heys", "hey's", "haze", "kase"})
# A greeting said with a glide at its end ("hej" in Slavic accents) is written as two words: "Hey, why
# Stella?". These are lead-ins right after a greeting only, so "Why Stella left ..." is no wake word.
GREETINGS = frozenset({"hey", "hi", "hay", "heh", "ay", "hello"})
GREETING_TAILS = frozenset({"why", "ya"})


_WORD = re.compile(r"[A-Za-z0-9']+")  # a word as written, with its place in the text


def _after(text: str, word: re.Match[str]) -> str:
    """What follows `word` in `text`, without the punctuation between."""
    return text[word.end():].lstrip(" ,.!?;:-\u2014").strip()


class NameMatcher:
    """Finds the wake phrase's name token at the start of a transcript.

    The name is the phrase's last word ("hey stella" -> "stella"; "hey_jarvis" -> "jarvis").
    It must come first or after lead-ins only (the phrase's own words, "hey", "a", "okay", ..., and
    "why" after a greeting), within the first `len(phrase) + 1` words — "I told Stella" is not a wake
    word — at edit distance <= 1 (exact for names shorter than 4 letters, where one edit is most of the word)
    or sounding like it (`sounds_like`), also with the "s" whisper moved to a fused lead-in.
    """

    confirms = False  # a name in the transcript needs no unprompted reading to confirm it (`PinyinMatcher`)

    def __init__(self, phrase: str) -> None:
        tokens = words(phrase)
        if not tokens:
            raise ValueError("the wake phrase has no words")
        self.name = tokens[-1]
        self.lead_ins = LEAD_INS | set(tokens[:-1])
        self.reach = len(tokens) + 1
        self.max_distance = 1 if len(self.name) >= 4 else 0
        # How the name is written: "Stella", and "Stellar" (said the same by non-rhotic speakers).
        self.spellings = [self.name.title()] + ([self.name.title() + "r"] if self.name[-1] in "aeiou" else [])

    def is_name(self, word: str, before: str) -> bool:
        """Also a quick "hey" run into the name as one word ("Kistela", "Astella")."""
        return self._plain(word) or self._fused(word, before) or self._run_in(word, before)

    def _plain(self, word: str) -> bool:
        return edit_distance(word, self.name) <= self.max_distance or sounds_like(word, self.name)

    def _fused(self, word: str, before: str) -> bool:
        return before in FUSED_LEAD_INS and sounds_like("s" + word, self.name)

    def _run_in(self, word: str, before: str) -> bool:
        return not before and len(word) > len(self.name) and sounds_like(word[2:], self.name)

    def sounds_in(self, reading: str) -> bool:
        """The name's first consonant sound, then another of its consonants, in the reading's first
        words (whisper's reading without the phrase as a prompt: "He's still at", "Here's to it",
        "Here's the alarm" for a Scottish "Hey Stella"; "Here may I", "Here they are" for "Hey
        Bella", "Hey Della")."""
        key = phonetic_key(self.name)
        sounds = "".join(phonetic_key(w.replace("'", "")) for w in words(reading)[:self.reach + 1])
        first = sounds.find(key[:1])
        return bool(key) and first >= 0 and any(c in sounds[first + 1:] for c in key[1:])

    def leads(self, reading: str) -> bool:
        """The name as the reading's first or second word, whatever comes before it, or after lead-ins
        (`match`): the check of a name only the acoustic model heard, where whisper writes a greeting it
        misheard ("Jens Stella", "Since Stella") but not a mention ("My colleague Stella Price")."""
        return self.leading(reading) is not None

    def leading(self, reading: str) -> NameMatch | None:
        """`leads`, with what follows the name: "Since Stella will it snow?" -> "will it snow?"."""
        if found := self.match(reading):
            return found
        before = ""
        for i, m in enumerate(list(_WORD.finditer(reading))[:2]):
            if self.is_name(m.group().lower(), before):
                return NameMatch(_after(reading, m), i + 1, reading[:m.start()].strip())
            before = m.group().lower()
        return None

    def hears_another(self, reading: str) -> bool:
        """Another name shaped like the name in the reading's first words, and not the name: "Hey Estelle"
        (whisper's reading without the prompt, where the prompted one wrote "Hey Stella.")."""
        said = words(reading)[:self.reach + 1]
        return any(another_name(w, self.name) for w in said) and not any(sounds_like(w, self.name) for w in said)

    def _leads_in(self, word: str, before: str) -> bool:
        return (word in self.lead_ins or word in FUSED_LEAD_INS
                or (word in GREETING_TAILS and before in GREETINGS))

    def match(self, transcript: str) -> NameMatch | None:
        spans = list(_WORD.finditer(transcript))
        before = ""
        for i, m in enumerate(spans[:self.reach]):
            word = m.group().lower()
            if self.is_name(word, before):
                if self._plain(word):
                    lead = transcript[:m.start()]
                else:  # the "hey" whisper ran into the word before ("Case") or into the name itself
                    lead = transcript[:spans[i - 1].start() if self._fused(word, before) else m.start()] + " Hey"
                return NameMatch(_after(transcript, m), i + 1, lead.strip())
            if not self._leads_in(word, before):
                return None
            before = word
        return None
