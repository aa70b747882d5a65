"""The wake-word bench's corpus: generated from text, deterministic, cached outside git.

Run on its own to (re)build it: ``.venv/bin/python tests/bench/wake_corpus.py``; the bench
(tests/bench/wake_rates.py) builds it on first use. Files go to
``~/.cache/stella/bench/wake/<VERSION>/`` (override with ``STELLA_WAKE_CORPUS``).

Voices are split in two disjoint sets: **tuning** (thresholds and matcher rules were chosen
on it) and **held-out** (reported; never tuned on). Each set has

* wake utterances ("Hey Stella, ..." for the phrase engine, "Hey Jarvis, ..." for the
  acoustic engines: the models this machine has), each voice saying several forms at random
  speeds and pitches, in one stream with gaps — clean, and with pink noise at 10 dB SNR;
* ordinary speech that is not a wake word, in scenes: conversations (two voices taking turns
  with short gaps), TV-like chatter (a newsreader's run of sentences over a music, babble or
  noise bed at 5–15 dB SNR), lines of everyday requests, and look-alikes of both names
  ("Please tell us", "Hey Bella", "Still here", "Hey Travis", "jars of jam").

Which near-names count as the wake word (so are *not* in the other speech): the name said
first or after a greeting, however accented or spelt — "Hey Stellar" (non-rhotic speakers say
it exactly like "Hey Stella"), "A Stella" (whisper's spelling of a quick "hey"), "Stella,
...". A name later in a sentence ("I told Stella") is not a wake word and is in the corpus.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import platformdirs  # noqa: E402

from sidecar.voice.audio import RATE  # noqa: E402
from tests.voice.speech import Piper, espeak, noise, save  # noqa: E402

VERSION = "v1"
ROOT = Path(os.environ.get("STELLA_WAKE_CORPUS") or Path(platformdirs.user_cache_dir("stella")) / "bench" / "wake")
HERE = ROOT / VERSION
SNR_DB = 10
WAKE_GAP_S = 2.5  # between wake utterances: longer than the hang-over and the trigger's refractory time
FILE_S = 300.0  # the other speech is cut into streams of about this length
TARGET_S = {"tuning": 15 * 60, "heldout": 62 * 60}  # speech (not gaps) in the other-speech set

SETS = ("tuning", "heldout")
ESPEAK_BASES = {"tuning": ("en-us", "en-gb", "en-gb-x-rp", "en-gb-x-gbclan"),
                "heldout": ("en-gb-scotland", "en-029", "en-us-nyc", "en-gb-x-gbcwmd")}
ESPEAK_VARIANTS = {"tuning": ("", "+f1", "+f2", "+m1", "+m2", "+m3"),
                   "heldout": ("", "+f3", "+f4", "+f5", "+m4", "+m5", "+m6", "+m7")}
PIPER_SCALES = {"tuning": (0.85, 1.0, 1.2), "heldout": (0.92, 1.1, 1.3)}
WAKES_PER_VOICE = {"tuning": 4, "heldout": 6}

NAMES = {"phrase": "Stella", "acoustic": "Jarvis"}
WAKE_FORMS = ["Hey {n}.", "Hey {n}", "Hey {n}, what time is it?", "Hey {n}, turn on the lights.",
              "Hey {n}, tell me a joke.", "Hey {n}, what's the weather like today?", "Hey {n}, play some music.",
              "Hey {n}, set a timer for five minutes.", "Hey {n}, how are you?", "Hey {n}, I need some help."]

CHATTER = [
    "The bus was late again this morning.", "I think we should paint the kitchen yellow.",
    "My sister is visiting next weekend.", "The garden needs watering before the sun goes down.",
    "Did you see the football match last night?", "This coffee is a little too strong for me.",
    "We are out of milk and bread.", "The meeting moved to three o'clock.", "I left my keys on the table.",
    "It has been raining all week.", "The cat is sleeping on the sofa again.", "Let's go for a walk after lunch.",
    "I need to finish this report by Friday.", "The new library opens on Monday.", "Can you pass me the salt?",
    "I am reading a book about old ships.", "The train to the city leaves at noon.", "Our neighbours got a puppy.",
    "The soup needs more pepper.", "I forgot to water the plants.", "Where did you put the scissors?",
    "That film was much longer than I expected.", "Shall we order pizza tonight?", "My phone battery is almost flat.",
    "The heating is making that noise again.", "I told Stella about the party.", "Ask Jarvis's brother, he knows.",
    "Do you remember where we parked?", "The shop on the corner closes early on Sundays.",
    "I can't find my other sock.", "He said he would call back after dinner.", "The kids are playing in the garden.",
]
REQUESTS = [
    "what time is it", "turn on the lights", "play some music", "what is the weather like today",
    "set a timer for ten minutes", "remind me to call my mother", "how far away is the moon",
    "tell me a funny story", "what should I cook for dinner", "turn the volume down a little",
    "when does the shop close", "how do you spell necessary", "what is the capital of Spain",
]
OPENERS = ["Could you tell me", "I wonder", "Do you know", "Please explain", "My friend asked",
           "Yesterday I learned", "I really want to know", "Let me think about", "Nobody knows", "Guess"]
LOOKALIKES = [
    # for "hey stella"
    "Please tell us what happened.", "Please tell us a story.", "Tell us about your day.",
    "Hey Bella, nice to see you.",
    "Hey Stanley, over here.", "Hey Steve, what is up?", "Still waiting for the bus.", "Steal the show tonight.",
    "The cellar is full of old wine.", "Hey, tell her I said hello.", "Stay till the end of the film.",
    "Hey, tell a friend about it.", "Hey Sheila, how was your trip?", "Hey Stan, look at this.",
    "Hey, stealing is wrong.", "Hello, Ella, come inside.", "Hey Kayla, wait for me.", "Hey Bela, good morning.",
    # for "hey jarvis"
    "Hey Travis, are you coming tonight?", "I bought two jars of jam.", "Hey Jasmine, how was your trip?",
    "Harvest season starts soon.", "Hey Marvin, wait for me.", "The service was excellent.",
    "Hey Charlie, look at this.", "Hey Davis, are you ready?", "Hey Garvey, nice shirt.", "Hey Jarrod, catch the ball.",
    "Hey Mavis, the tea is ready.",
    "The jar of biscuits is empty.", "Hey Jack, is this yours?", "Hey Chris, pass it over.",
]
SUBJECTS = ["The government", "Local police", "Scientists", "The city council", "A spokesperson", "Farmers",
            "The national team", "Shoppers", "Researchers at the university", "The weather service", "Officials",
            "The company", "Fans", "Doctors", "The museum", "Residents"]
VERBS = ["announced", "warned about", "celebrated", "reported", "discussed", "criticised", "welcomed",
         "are preparing for", "have confirmed", "expect", "questioned", "delayed"]
OBJECTS = ["a new plan for the railway", "heavy rain in the north", "record sales this winter",
           "the opening of a bridge", "higher prices for energy", "a rise in visitors", "the final match of the season",
           "changes to the school timetable", "a festival of music and food", "repairs on the main road",
           "a discovery of ancient coins", "the results of the election", "strong winds along the coast"]
TIMES = ["this morning", "on Tuesday", "after a long debate", "late last night", "for the coming weekend",
         "earlier today", "despite the protests", "in a short statement"]


@dataclass(frozen=True)
class Voice:
    id: str  # "espeak en-gb-scotland+f3" or "piper x1.1"
    engine: str
    name: str  # espeak voice, or piper's length scale as text

    def say(self, text: str, rng: random.Random, piper: Piper) -> np.ndarray:
        if self.engine == "piper":
            return piper(text, length_scale=float(self.name) * rng.uniform(0.95, 1.05),
                         noise_scale=rng.uniform(0.5, 0.8), level=rng.uniform(0.3, 0.6))
        return espeak(text, voice=self.name, speed=rng.randint(130, 200), pitch=rng.randint(25, 80),
                      level=rng.uniform(0.3, 0.6))


def voices(which: str) -> list[Voice]:
    out = [Voice(f"espeak {b}{v}", "espeak", b + v) for b in ESPEAK_BASES[which] for v in ESPEAK_VARIANTS[which]]
    return out + [Voice(f"piper x{s}", "piper", str(s)) for s in PIPER_SCALES[which]]


@dataclass
class Span:
    text: str
    voice: str
    start: float
    end: float
    scene: str


@dataclass
class Stream:
    """One generated stream: `clean`/`noisy` wav files and where each utterance is."""

    name: str
    spans: list[Span]
    seconds: float

    def wav(self, condition: str) -> Path:
        return HERE / f"{self.name}-{condition}.wav"

    @property
    def speech_s(self) -> float:
        return sum(s.end - s.start for s in self.spans)


class Track:
    """Audio laid down piece by piece, with the spans of speech in it."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.spans: list[Span] = []
        self.t = 0.0

    def gap(self, seconds: float) -> None:
        self.parts.append(np.zeros(int(seconds * RATE), np.float32))
        self.t += seconds

    def speak(self, audio: np.ndarray, text: str, voice: str, scene: str) -> None:
        self.parts.append(audio)
        self.spans.append(Span(text, voice, round(self.t, 3), round(self.t + len(audio) / RATE, 3), scene))
        self.t += len(audio) / RATE

    def audio(self) -> np.ndarray:
        return np.concatenate(self.parts).astype(np.float32) if self.parts else np.zeros(0, np.float32)


def music(seconds: float, rng: random.Random) -> np.ndarray:
    """A music bed: chords of decaying harmonic tones, one every half to one second."""
    n = int(seconds * RATE)
    out = np.zeros(n, np.float32)
    t = 0
    while t < n:
        length = int(rng.uniform(0.5, 1.0) * RATE)
        root = rng.choice([110.0, 130.8, 146.8, 164.8, 196.0, 220.0])
        k = np.arange(min(length, n - t)) / RATE
        chord = sum(np.sin(2 * np.pi * root * ratio * h * k) / h for ratio in (1.0, 1.26, 1.5) for h in (1, 2, 3))
        out[t:t + len(k)] += (chord * np.exp(-3 * k)).astype(np.float32)
        t += length
    return out


def bed(kind: str, seconds: float, rng: random.Random, babble: Callable[[], np.ndarray]) -> np.ndarray:
    """A TV scene's background: music, babble (other voices) or noise, unit RMS."""
    if kind == "music":
        audio = music(seconds, rng)
    elif kind == "babble":
        n, audio = int(seconds * RATE), np.zeros(int(seconds * RATE), np.float32)
        for _ in range(2):  # two other voices talking at once
            pieces: list[np.ndarray] = []
            while sum(map(len, pieces)) < n:
                pieces.append(babble())
            audio += np.concatenate(pieces)[:n]
    else:
        audio = noise(seconds, 1.0, seed=rng.randrange(1 << 30))
    return audio / (float(np.sqrt(np.mean(audio ** 2))) + 1e-9)


def rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(audio ** 2))) if len(audio) else 0.0


class Builder:
    def __init__(self, which: str) -> None:
        self.which = which
        self.voices = voices(which)
        self.piper = Piper()

    def say(self, text: str, voice: Voice, rng: random.Random) -> np.ndarray:
        return voice.say(text, rng, self.piper)

    def wake_stream(self, engine: str) -> Stream:
        """Every voice says `WAKES_PER_VOICE` wake forms, gaps between; noisy copy at SNR_DB."""
        rng = random.Random(f"wake-{self.which}-{engine}")
        track = Track()
        track.gap(1.0)
        for voice in self.voices:
            for form in rng.sample(WAKE_FORMS, WAKES_PER_VOICE[self.which]):
                text = form.format(n=NAMES[engine])
                track.speak(self.say(text, voice, rng), text, voice.id, "wake")
                track.gap(WAKE_GAP_S)
        return self.write(f"{self.which}-wake-{engine}", track, noisy=True, seed=rng.randrange(1 << 30))

    def news(self, rng: random.Random) -> str:
        return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TIMES)}."

    def scene(self, track: Track, rng: random.Random) -> None:
        kind = rng.choices(["conversation", "tv", "requests", "lookalikes"], weights=[4, 4, 2, 2])[0]
        if kind == "conversation":
            a, b = rng.sample(self.voices, 2)
            for i in range(rng.randint(4, 8)):
                text = rng.choice(CHATTER) if rng.random() < 0.7 else f"{rng.choice(OPENERS)} {rng.choice(REQUESTS)}."
                track.speak(self.say(text, (a, b)[i % 2], rng), text, (a, b)[i % 2].id, kind)
                track.gap(rng.uniform(0.3, 1.2))
        elif kind == "tv":
            voice = rng.choice(self.voices)
            sub = Track()
            for _ in range(rng.randint(5, 10)):
                text = self.news(rng)
                sub.speak(self.say(text, voice, rng), text, voice.id, kind)
                sub.gap(rng.uniform(0.2, 0.6))
            speech = sub.audio()
            level = rms(np.concatenate([p for p in sub.parts if rms(p) > 0])) / 10 ** (rng.uniform(5, 15) / 20)
            background = bed(rng.choice(["music", "babble", "noise"]), len(speech) / RATE, rng,
                             lambda: self.say(self.news(rng), rng.choice(self.voices), rng) * 0.5)
            offset = track.t
            track.parts.append(speech + background[:len(speech)] * level)
            track.spans += [Span(s.text, s.voice, round(s.start + offset, 3), round(s.end + offset, 3), kind)
                            for s in sub.spans]
            track.t += len(speech) / RATE
        else:
            asked = [f"{o} {r}." for o, r in itertools.product(OPENERS, REQUESTS)]
            pool = LOOKALIKES if kind == "lookalikes" else asked
            for _ in range(rng.randint(3, 6)):
                voice, text = rng.choice(self.voices), rng.choice(pool)
                track.speak(self.say(text, voice, rng), text, voice.id, kind)
                track.gap(rng.uniform(1.0, 2.0))
        track.gap(rng.uniform(1.5, 3.0))

    def other_streams(self) -> list[Stream]:
        """Scenes of other speech, `TARGET_S` of speech in all, cut into ~FILE_S streams."""
        rng = random.Random(f"other-{self.which}")
        out: list[Stream] = []
        total = 0.0
        while total < TARGET_S[self.which]:
            track = Track()
            track.gap(1.0)
            while track.t < FILE_S:
                self.scene(track, rng)
            stream = self.write(f"{self.which}-other-{len(out):02d}", track, noisy=False, seed=0)
            out.append(stream)
            total += stream.speech_s
            print(f"  {stream.name}: {stream.seconds:.0f} s, {stream.speech_s:.0f} s of speech "
                  f"({total / 60:.1f} min so far)", flush=True)
        return out

    def write(self, name: str, track: Track, *, noisy: bool, seed: int) -> Stream:
        audio = track.audio()
        HERE.mkdir(parents=True, exist_ok=True)
        save(HERE / f"{name}-clean.wav", audio)
        if noisy:
            speech = np.concatenate([p for p in track.parts if rms(p) > 0])
            level = rms(speech) / 10 ** (SNR_DB / 20)
            save(HERE / f"{name}-noisy.wav", audio + noise(len(audio) / RATE, level, seed=seed))
        return Stream(name, track.spans, round(len(audio) / RATE, 3))


@dataclass
class Corpus:
    wake: dict[str, dict[str, Stream]]  # set -> engine -> stream
    other: dict[str, list[Stream]]  # set -> streams


def load(sets: tuple[str, ...] = SETS) -> Corpus:
    """The corpus, generated on first use (a few minutes) and then read from the cache."""
    index = HERE / "index.json"
    if index.exists():
        raw = json.loads(index.read_text())
        if all(s in raw["other"] for s in sets):
            return Corpus(
                {s: {e: _stream(x) for e, x in raw["wake"][s].items()} for s in sets},
                {s: [_stream(x) for x in raw["other"][s]] for s in sets})
    wake: dict[str, dict[str, Stream]] = {}
    other: dict[str, list[Stream]] = {}
    for which in SETS:
        print(f"generating the {which} set in {HERE} ...", flush=True)
        builder = Builder(which)
        wake[which] = {engine: builder.wake_stream(engine) for engine in NAMES}
        other[which] = builder.other_streams()
    index.write_text(json.dumps({
        "wake": {s: {e: asdict(x) for e, x in d.items()} for s, d in wake.items()},
        "other": {s: [asdict(x) for x in xs] for s, xs in other.items()},
    }))
    return Corpus({s: wake[s] for s in sets}, {s: other[s] for s in sets})


def _stream(raw: dict) -> Stream:
    return Stream(raw["name"], [Span(**s) for s in raw["spans"]], raw["seconds"])


if __name__ == "__main__":
    corpus = load()
    for which in SETS:
        wakes = {e: len(s.spans) for e, s in corpus.wake[which].items()}
        speech = sum(s.speech_s for s in corpus.other[which])
        print(f"{which}: wake utterances {wakes}, voices {len(voices(which))}, other speech {speech / 60:.1f} min")
