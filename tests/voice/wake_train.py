"""Training the "hey stella" acoustic model: a small network on openWakeWord's speech embeddings.

Run: ``.venv/bin/python tests/voice/wake_train.py`` (about an hour on 2 cores; ``--train-only``
once the voices' windows are cached, about 25) writes
``sidecar/voice/models/hey_stella.npz`` (`sidecar.voice.wake_net.WakeNet`). Nothing here runs
in the app or in CI: the file it writes is committed, and a test checks what it hears.

**Voices.** Only voices the wake corpus's *seen* sets used (v1 to v6: English accents with
espeak-ng variants, English said by twenty-seven other languages' voices, Festival's voices, piper
joe at 21 speeds and played faster or slower) and English said by thirty-two more
espeak-ng languages; never flite (v5's synthesiser: tests/voice/test_wake_net.py checks what the
model hears from a synthesiser it never heard) and never a voice, language, speed or text of the
held-out set v7 (`tests/voice/test_wake_corpus.py` checks it). A tenth of the voices is kept aside: they choose
each network's epoch.

**What it learns.** Every voice says "Hey Stella" (alone, or with a request after it, in the
seen sets' words) among sentences that are not a wake word: chatter, requests, news and
look-alikes ("Hey Della", "Hey Stellan", "Please tell us", "I told Stella"; and since v6 had been
read, the look-alikes that still woke her there: "Hey Shelby", "Hey Mirella", "Hey, spell that again"). Each voice's
speech goes through the same streaming front end as the microphone's (80 ms at a time), once
clean and once over a music, babble or noise bed at 0-20 dB SNR. A window of 16 embeddings
(1.28 s) ending just after the name is a positive; windows in other speech, silence and beds are
negatives; windows in the middle of the phrase or just after it are left out.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from sidecar.voice.audio import RATE  # noqa: E402
from sidecar.voice.wake import CHUNK  # noqa: E402
from sidecar.voice.wake_net import FEATURES, WINDOW, WakeNet  # noqa: E402
from tests.voice import wake_corpus  # noqa: E402
from tests.voice.speech import Piper, noise  # noqa: E402
from tests.voice.wake_corpus import SNR_DB, TEXTS, Voice, bed, rms  # noqa: E402

OUT = REPO / "sidecar" / "voice" / "models" / "hey_stella.npz"
OTHERS = OUT.with_name("hey_stella_others.npz")  # personal enrolment's negatives (`others_bank`)
CACHE = wake_corpus.ROOT / "train3"
# English said by espeak-ng voices of languages the seen sets did not have (none is in v7).
EXTRA_LANGUAGES = ("ca", "hr", "id", "vi", "sw", "af", "lv", "et", "ms", "eu", "is", "lt", "sq", "cy", "ga", "eo",
                   "la", "io", "haw", "pap", "qu", "tk", "uz", "ku", "tn", "gn", "lfn", "kl", "om", "ltg", "smj", "py")
CLASSIC = ("", "+f1", "+f2", "+f3", "+f4", "+f5", "+m1", "+m2", "+m3", "+m4", "+m5", "+m6", "+m7", "+m8")
SEEN = ("tuning", "seen", "seen2", "seen3", "seen4", "seen5", "seen6")
SEEN_TEXTS = tuple(dict.fromkeys(wake_corpus.FOLDER[s] for s in SEEN))  # their words: folders v1 to v6
POSITIVE = (-0.05, 0.35)  # a window ending this close to the name's end (s) is a positive
LEFT_OUT = 2.2  # ... and windows from the phrase's start to this long after its end (what a window hears) left out
SEEDS = (7, 11, 13)  # one network each, averaged (`ensemble`): one alone varies from seed to seed on new voices
NAME_FORMS = ("Hey Stella.", "Hey Stella,", "Hey Stella!", "Hey Stella?", "Hey, Stella.", "Hey Stellar.")


def training_voices() -> list[Voice]:
    out = [v for s in SEEN for v in wake_corpus.voices(s) if v.engine != "flite"]  # flite: never heard (tests)
    rng = random.Random("extra-languages")
    for lang in EXTRA_LANGUAGES:
        out += [Voice(f"espeak {lang}{v}", "espeak", lang + v) for v in rng.sample(CLASSIC, 3)]
    return out


@dataclass
class Piece:
    audio: np.ndarray
    name_end: float | None  # seconds into the piece where "Hey Stella" ends (None: not a wake word)


# "Hey <name>" for names that are not hers: the look-alikes the model must refuse (none of v7's).
OTHER_NAMES = (
    "Bella", "Della", "Ella", "Nella", "Sheila", "Stacy", "Stan", "Stanley", "Steve", "Stephen", "Stuart", "Sarah",
    "Shelly", "Kelly", "Celia", "Estelle", "Fella", "Tessa", "Selma", "Zelda", "Stellan", "Stephanie", "Ellie",
    "Helen", "Isabella", "Gabriella", "Sally", "Delia", "Bettina", "Stelmach", "Esther", "Stelios", "Teller", "Dell",
    "Stefan", "Stacey", "Kayla", "Bela", "Luna", "Anna", "Emma", "Olivia", "Sophia", "Amelia", "Evelyn", "Emily",
    "Aria", "Scarlett", "Victoria", "Layla", "Chloe", "Penelope", "Nora", "Lily", "Eleanor", "Hannah", "Natalie",
    "Zoe", "Leah", "Hazel", "Violet", "Aurora", "Claire", "Lucy", "Caroline", "Nova", "Emilia", "Samantha", "Maya",
    "Elena", "Sadie", "Cora", "Ruby", "Eva", "Adele", "Hailey", "Gianna", "Valentina", "Isla", "Eliana", "Ivy",
    "Lydia", "Julia", "Delilah", "Arianna", "Vivian", "Sophie", "Clara", "Melanie", "Katherine", "Isabelle",
    "Natalia", "Maria", "Athena", "Taylor", "Rose", "Kylie", "Margaret", "Lyla", "Eliza", "Andrea", "Melody",
    "Iris", "Annabelle", "Valeria", "Cecilia", "Valerie", "Molly", "Daisy", "Genevieve", "Arabella", "Elise",
    "Lucia", "Diana", "Sienna", "Callie", "Rachel", "Summer", "Alana", "Rebecca", "Paige", "Fiona", "Steven",
    "Sebastian", "Seth", "Sam", "Terry", "Ted", "Neil", "Nelson", "Wells", "Elliot", "Kevin", "Dennis", "Shane",
    "Trevor", "Daniel", "Phil", "Mel", "Stella's mum", "Estela's friend", "Tella", "Stelian", "Stellio", "Bellamy",
    "Marisa", "Rosella", "Louisa", "Ariella", "Isabel", "Estefania", "Stavros", "Stephen King", "Teller Bank",
)
OTHER_HEYS = ("Hey, tell me more.", "Hey, sell it.", "Hey, still here?", "Hey, stay there.", "Hey, settle down.",
              "Hey, steady on.", "Hey, stop that.", "Hey, step back.", "Hey, tell them.", "Hey, hello.", "Hey there.",
              "Hey, tell a story.", "Hey, stellar job.", "Hey, stealing is bad.", "Hey, the cellar.", "Hey, stencil.",
              "Hey, spell it out.", "Hey, still awake?", "Hey, smell that.", "Hey, sell the car.", "Hey, spill it.",
              "Hi, I'm Sheila.", "Hi, I'm Della.", "Hi, it's Bella.", "Hey, stand still.", "Hey, spelling bee!")


# The nearest look-alikes (one sound from "Stella"), said far more often in a second set of tracks:
# the first model took most of them for her name.
CLOSE_NAMES = ("Della", "Bella", "Ella", "Nella", "Fella", "Teller", "Estelle", "Stellan", "Tella", "Sella", "Kella",
               "Shella", "Celia", "Sheila", "Selma", "Stelios", "Stelmach", "Esther", "Stanley", "Stacy", "Zella",
               "Stela's cousin", "Kayla", "Sarah", "Stephen", "Steve", "Helen", "Ellie", "Delia", "Tessa", "Fenella",
               "Gisela", "Estela", "Stellan Skarsgard", "Pella", "Vella", "Mela", "Lela", "Stefa", "Sta",
               # v5's and v6's look-alikes that still woke her (once seen): names ending "-ella", "-illa", "-elby"
               "Shelby", "Mirella", "Cinderella", "Drusilla", "Sheldon", "Priscilla", "Stellmacher", "Donatella",
               "Antonella", "Graciela", "Sybella", "Camilla", "Stacia", "Shelley", "Spella", "Stillman", "Estrella")


def docstring_sentences() -> list[str]:
    """Plain English sentences from the standard library's docstrings: words no set says."""
    import importlib
    import re

    out: set[str] = set()
    for name in ("os", "re", "json", "random", "string", "textwrap", "collections", "functools", "itertools",
                 "email", "http.client", "urllib.request", "logging", "argparse", "unittest", "asyncio", "threading",
                 "subprocess", "pathlib", "datetime", "calendar", "decimal", "fractions", "statistics", "csv",
                 "zipfile", "tarfile", "shutil", "tempfile", "socket", "difflib", "inspect", "dataclasses", "enum",
                 "contextlib", "heapq", "bisect", "copy", "pickle", "gzip", "hashlib", "uuid", "locale", "io", "time",
                 "queue", "signal", "wave", "colorsys", "cmd", "shlex", "pdb", "timeit", "gc", "sys"):
        module = importlib.import_module(name)
        for thing in [module, *(getattr(module, a) for a in dir(module) if not a.startswith("_"))]:
            doc = getattr(thing, "__doc__", None)
            if isinstance(doc, str):
                out |= {x for x in re.split(r"(?<=[.!?])\s+", " ".join(doc.split()))
                        if re.fullmatch(r"[A-Z][A-Za-z ,']{20,120}[.]", x) and 5 <= len(x.split()) <= 18}
    return sorted(out)


def pieces(voice: Voice, rng: random.Random, piper: Piper, prose: list[str]) -> list[Piece]:
    """One track's worth: 8 wake utterances, 5 other sentences and 5 look-alikes, shuffled."""
    texts = [TEXTS[f] for f in SEEN_TEXTS]
    out = []
    for _ in range(8):
        name = voice.say(rng.choice(NAME_FORMS), rng, piper)
        out.append(Piece(with_request(name, voice, rng, piper, texts), len(name) / RATE))
    for _ in range(5):
        t = rng.choice(texts)
        text = rng.choice(t.chatter + [f"{o} {r}." for o, r in itertools.product(t.openers[:3], t.requests[:4])]
                          + [f"{rng.choice(t.subjects)} {rng.choice(t.verbs)} {rng.choice(t.objects)}."] + prose)
        out.append(Piece(voice.say(text, rng, piper), None))
    for _ in range(5):
        t = rng.choice(texts)
        lookalike = rng.choice([x for x in t.lookalikes if "Jarvis" not in x] + list(OTHER_HEYS)
                               + [f"Hey {n}." for n in OTHER_NAMES] * 2)
        audio = voice.say(lookalike, rng, piper)
        out.append(Piece(with_request(audio, voice, rng, piper, texts), None))
    rng.shuffle(out)
    return out


def with_request(audio: np.ndarray, voice: Voice, rng: random.Random, piper: Piper, texts: list) -> np.ndarray:
    """`audio` alone, or half the time with a request after it."""
    if rng.random() < 0.5:
        return audio
    t = rng.choice(texts)
    request = rng.choice(t.wake_forms).split(",", 1)[-1].strip() if rng.random() < 0.6 else rng.choice(t.requests)
    return np.concatenate([audio, np.zeros(int(rng.uniform(0.02, 0.25) * RATE), np.float32),
                           voice.say(request, rng, piper)])


def close_pieces(voice: Voice, rng: random.Random, piper: Piper) -> list[Piece]:
    """A close look-alike track's worth: 10 of `CLOSE_NAMES` and 3 wake utterances, shuffled."""
    texts = [TEXTS[f] for f in SEEN_TEXTS]
    out = [Piece(with_request(voice.say(f"Hey {rng.choice(CLOSE_NAMES)}{rng.choice('.,!?')}", rng, piper), voice,
                              rng, piper, texts), None) for _ in range(10)]
    for _ in range(3):
        name = voice.say(rng.choice(NAME_FORMS), rng, piper)
        out.append(Piece(with_request(name, voice, rng, piper, texts), len(name) / RATE))
    rng.shuffle(out)
    return out


def track(voice: Voice, rng: random.Random, piper: Piper, noisy: bool,
          said: list[Piece]) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """`said` laid end to end with gaps, over a bed if `noisy`; the phrases' (start, end)."""
    parts: list[np.ndarray] = [np.zeros(int(rng.uniform(0.5, 1.5) * RATE), np.float32)]
    names: list[tuple[float, float]] = []
    t = len(parts[0]) / RATE
    for p in said:
        if p.name_end is not None:
            names.append((t, t + p.name_end))
        parts += [p.audio, np.zeros(int(rng.uniform(0.2, 0.9) * RATE), np.float32)]
        t += (len(p.audio) + len(parts[-1])) / RATE
    audio = np.concatenate(parts)
    if noisy:
        speech = np.concatenate([p for p in parts if rms(p) > 0])
        level = rms(speech) / 10 ** (rng.uniform(0, 20) / 20)
        chatter = [x for f in SEEN_TEXTS for x in TEXTS[f].chatter]
        background = bed(rng.choice(["music", "babble", "noise"]), len(audio) / RATE + 0.1, rng,
                         lambda: voice.say(rng.choice(chatter), rng, piper) * 0.5)
        audio = audio + background[:len(audio)] * level
    gain = rng.uniform(0.3, 1.0) / max(1e-6, float(np.max(np.abs(audio))))
    return (audio * gain).astype(np.float32), names


def pcm_of(audio: np.ndarray) -> np.ndarray:
    """Float audio as the 16-bit samples the front end takes."""
    return (np.clip(audio, -1, 1) * 32767).astype(np.int16)


def embeddings(audio: np.ndarray) -> np.ndarray:
    """The streaming front end's embeddings, one per 80 ms chunk (the one at each chunk's end)."""
    from pyopen_wakeword import OpenWakeWordFeatures

    features = OpenWakeWordFeatures.from_builtin()
    pcm = pcm_of(audio)
    history: list[np.ndarray] = []
    out = []
    for i in range(0, len(pcm) - CHUNK + 1, CHUNK):
        history += [e.reshape(-1) for e in features.process_streaming(pcm[i:i + CHUNK].tobytes())]
        out.append(np.stack(history[-WINDOW:]))
        history = history[-WINDOW:]
    features.close()
    return np.stack(out)


def labels(n: int, names: list[tuple[float, float]]) -> np.ndarray:
    """1 positive, 0 negative, -1 left out, for the window ending at each chunk's end."""
    ends = (np.arange(n) + 1) * CHUNK / RATE
    out = np.zeros(n, np.int8)
    for start, end in names:
        out[(ends > start) & (ends < end + LEFT_OUT)] = -1
        out[(ends >= end + POSITIVE[0]) & (ends <= end + POSITIVE[1])] = 1
    return out


def voice_data(args: tuple[int, Voice, str]) -> Path:
    """One voice's windows and labels: `kind` "mixed" (wake words among other speech and look-alikes)
    or "close" (the nearest look-alikes), each clean and over a bed."""
    index, voice, kind = args
    path = CACHE / f"{index:03d}{'-close' if kind == 'close' else ''}.npz"
    if path.exists():
        return path
    piper, prose = Piper(), docstring_sentences()
    xs, ys = [], []
    for noisy in (False, True):
        rng = random.Random(f"train-{voice.id}-{noisy}{'-close' if kind == 'close' else ''}")
        said = close_pieces(voice, rng, piper) if kind == "close" else pieces(voice, rng, piper, prose)
        audio, names = track(voice, rng, piper, noisy, said)
        x = embeddings(audio).astype(np.float16)  # kept small: some 2 GB of windows in all
        xs.append(x)
        ys.append(labels(len(x), names))
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, x=np.concatenate(xs), y=np.concatenate(ys), voice=voice.id)
    return path


def build(workers: int) -> list[Path]:
    # the close look-alikes from every second voice: they are the same names in every voice's mouth
    todo = [(i, v, kind) for kind in ("mixed", "close") for i, v in enumerate(training_voices())
            if kind == "mixed" or i % 2 == 0]
    started = time.monotonic()
    out = []
    with ProcessPoolExecutor(workers) as pool:
        for i, path in enumerate(pool.map(voice_data, todo), 1):
            out.append(path)
            if i % 10 == 0 or i == len(todo):
                print(f"  {i}/{len(todo)} voices ({time.monotonic() - started:.0f} s)", flush=True)
    return out


def kept_aside(paths: list[Path]) -> set[int]:
    """A tenth of the voices, never trained on: they choose each network's epoch and report its rates."""
    voices = sorted({voice_of(p) for p in paths})
    order = np.random.default_rng(7).permutation(len(voices))
    return {voices[i] for i in order[:max(1, len(voices) // 10)]}


def train(paths: list[Path], seed: int = 7, epochs: int = 10, hidden: int = 256) -> tuple[WakeNet, dict]:
    """An MLP, 1536 -> hidden -> hidden -> 1, by Adam on balanced batches with dropout, from `seed`;
    the voices kept aside (`kept_aside`, the same for every seed): the epoch with the lowest balanced
    loss on them is kept, and they report the rates."""
    rng = np.random.default_rng(seed)
    voices = sorted({voice_of(p) for p in paths})
    aside = kept_aside(paths)
    data = [np.load(p) for p in paths]
    x, y = windows([d for p, d in zip(paths, data, strict=True) if voice_of(p) not in aside])
    ax, ay = windows([d for p, d in zip(paths, data, strict=True) if voice_of(p) in aside])
    mean, std = x.mean(0, dtype=np.float64).astype(np.float32), x.std(0, dtype=np.float64).astype(np.float32) + 1e-3
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    print(f"training on {len(pos)} positive and {len(neg)} negative windows, {len(voices) - len(aside)} voices",
          flush=True)
    net = initial(rng, mean, std, hidden=hidden)
    adam = Adam(params(net))
    batch, best = 512, (np.inf, net)
    for epoch in range(epochs):
        steps = len(neg) // (batch * 3 // 4)
        loss_sum = 0.0
        for _ in range(steps):
            idx = np.concatenate([rng.choice(pos, batch // 4), rng.choice(neg, batch * 3 // 4)])
            xb = x[idx].astype(np.float32)
            xb = xb + rng.normal(0, 0.5, xb.shape).astype(np.float32) * std  # jitter: voices it never heard
            loss, grads = loss_and_grads(net, xb, y[idx], rng, weight_decay=1e-3, dropout=0.5)
            adam.step(params(net), grads, lr=1e-3)
            loss_sum += loss
        held = balanced_loss(net, ax, ay)
        print(f"  epoch {epoch + 1}: loss {loss_sum / steps:.4f}, kept-aside voices {held:.4f}", flush=True)
        if held < best[0]:
            best = (held, copy.deepcopy(net))
    held = [d for p, d in zip(paths, data, strict=True) if voice_of(p) in aside]
    return best[1], {"aside": sorted(aside), **evaluate(best[1], held)}


def ensemble(nets: list[WakeNet]) -> WakeNet:
    """One network whose logit is the mean of `nets`' logits, exactly: trained on the same windows,
    they share the inputs' standardisation; their hidden layers are laid side by side (the second
    one block-diagonal), so the app runs an ensemble as one `WakeNet` with no code of its own."""
    if any(not (np.array_equal(n.mean, nets[0].mean) and np.array_equal(n.std, nets[0].std)) for n in nets):
        raise ValueError("the networks were trained on different windows (their standardisations differ)")
    w2 = np.zeros((sum(n.w2.shape[0] for n in nets), sum(n.w2.shape[1] for n in nets)), np.float32)
    r = c = 0
    for n in nets:
        w2[r:r + n.w2.shape[0], c:c + n.w2.shape[1]] = n.w2
        r, c = r + n.w2.shape[0], c + n.w2.shape[1]
    return WakeNet(nets[0].mean, nets[0].std, np.concatenate([n.w1 for n in nets], axis=1),
                   np.concatenate([n.b1 for n in nets]), w2, np.concatenate([n.b2 for n in nets]),
                   np.concatenate([n.w3 for n in nets]) / len(nets),
                   np.asarray(np.mean([n.b3 for n in nets]), np.float32))


def voice_of(path: Path) -> int:
    """The training voice a cached file is of (its number)."""
    return int(path.stem.split("-")[0])


def windows(data: list) -> tuple[np.ndarray, np.ndarray]:
    x = np.concatenate([d["x"] for d in data]).reshape(-1, WINDOW * FEATURES)
    y = np.concatenate([d["y"] for d in data])
    return x[y >= 0], y[y >= 0].astype(np.float32)


def balanced_loss(net: WakeNet, x: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(net.score(x.astype(np.float32)), 1e-7, 1 - 1e-7)
    return float(-np.mean(np.log(p[y == 1])) - np.mean(np.log(1 - p[y == 0]))) / 2


def initial(rng: np.random.Generator, mean: np.ndarray, std: np.ndarray, hidden: int) -> WakeNet:
    n = WINDOW * FEATURES
    def he(fan_in: int, shape: tuple[int, ...]) -> np.ndarray:
        return rng.normal(0, np.sqrt(2 / fan_in), shape).astype(np.float32)

    zeros = np.zeros(hidden, np.float32)
    return WakeNet(mean, std, he(n, (n, hidden)), zeros, he(hidden, (hidden, hidden)), zeros.copy(),
                   he(hidden, (hidden,)) / 2, np.zeros((), np.float32))


def params(net: WakeNet) -> list[np.ndarray]:
    return [net.w1, net.b1, net.w2, net.b2, net.w3, net.b3]


def loss_and_grads(net: WakeNet, x: np.ndarray, y: np.ndarray, rng: np.random.Generator, weight_decay: float,
                   dropout: float) -> tuple[float, list[np.ndarray]]:
    """Binary cross-entropy and its gradients (backpropagation by hand), dropout on both hidden layers."""
    z = (x - net.mean) / net.std
    keep1 = (rng.random((len(x), net.w1.shape[1])) >= dropout) / (1 - dropout)
    keep2 = (rng.random((len(x), net.w2.shape[1])) >= dropout) / (1 - dropout)
    h1 = np.maximum(0, z @ net.w1 + net.b1) * keep1
    h2 = np.maximum(0, h1 @ net.w2 + net.b2) * keep2
    logit = h2 @ net.w3 + net.b3
    p = 1 / (1 + np.exp(-np.clip(logit, -30, 30)))
    loss = float(np.mean(-y * np.log(p + 1e-7) - (1 - y) * np.log(1 - p + 1e-7)))
    d = (p - y) / len(y)
    gw3, gb3 = h2.T @ d, np.asarray(d.sum(), np.float32)
    d2 = np.outer(d, net.w3) * (h2 > 0) * keep2
    gw2, gb2 = h1.T @ d2, d2.sum(0)
    d1 = (d2 @ net.w2.T) * (h1 > 0) * keep1
    gw1, gb1 = z.T @ d1, d1.sum(0)
    return loss, [gw1 + weight_decay * net.w1, gb1, gw2 + weight_decay * net.w2, gb2, gw3, gb3]


class Adam:
    def __init__(self, params: list[np.ndarray]) -> None:
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, params: list[np.ndarray], grads: list[np.ndarray], lr: float) -> None:
        self.t += 1
        for p, g, m, v in zip(params, grads, self.m, self.v, strict=True):
            m *= 0.9
            m += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            p -= lr * (m / (1 - 0.9 ** self.t)) / (np.sqrt(v / (1 - 0.999 ** self.t)) + 1e-8)


def evaluate(net: WakeNet, data: list) -> dict:
    """On the voices kept aside, window by window: the wake utterances missed at each threshold (their
    best score under it), and the rises over it in the other audio as false accepts an hour (a harsh
    count: half the other pieces are look-alikes; `utterance_scores` is the one the thresholds use)."""
    best, other = [], []
    for d in data:
        y = d["y"]
        s = net.score(d["x"].reshape(len(y), -1).astype(np.float32))
        # a wake utterance: its positive windows, in runs
        runs = np.split(np.flatnonzero(y == 1), np.flatnonzero(np.diff(np.flatnonzero(y == 1)) > 1) + 1)
        best += [float(s[r].max()) for r in runs if len(r)]
        other.append(s[y == 0])
    other_s = np.concatenate(other)
    hours = len(other_s) * CHUNK / RATE / 3600
    out = {"wakes": len(best), "other_hours": round(hours, 3), "by_threshold": {}}
    for thr in (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98):
        fr = float(np.mean(np.array(best) < thr))
        # false accepts: rising edges over the threshold (refractory handled by run-length)
        above = other_s >= thr
        fa = int(np.sum(above[1:] & ~above[:-1]) + above[0])
        out["by_threshold"][thr] = {"fr": round(fr, 4), "fa_per_h": round(fa / hours, 2)}
    return out


def utterance_scores(net: WakeNet, voices: list[Voice], seed: str = "aside") -> dict[str, list[float]]:
    """Each voice's utterances one at a time, as the phrase engine weighs them: the model's best score
    in each wake utterance, look-alike greeting ("Hey Bella.") and other sentence."""
    piper, prose = Piper(), docstring_sentences()
    out: dict[str, list[float]] = {"wake": [], "noisy wake": [], "look-alike": [], "close look-alike": [],
                                   "other": []}
    texts = [TEXTS[f] for f in SEEN_TEXTS]
    for voice in voices:
        rng = random.Random(f"{seed}-{voice.id}")
        said = [("wake", with_request(voice.say(rng.choice(NAME_FORMS), rng, piper), voice, rng, piper, texts))
                for _ in range(6)]
        said += [("noisy wake", a + noise(len(a) / RATE + 0.01, rms(a) / 10 ** (SNR_DB / 20),
                                          seed=rng.randrange(1 << 30))[:len(a)]) for _, a in said[:]]
        said += [("look-alike", voice.say(f"Hey {rng.choice(OTHER_NAMES)}.", rng, piper)) for _ in range(10)]
        said += [("close look-alike", voice.say(f"Hey {rng.choice(CLOSE_NAMES)}.", rng, piper)) for _ in range(6)]
        said += [("other", voice.say(rng.choice(prose), rng, piper)) for _ in range(4)]
        for kind, audio in said:
            pad = np.zeros(int(0.6 * RATE), np.float32)
            x = embeddings(np.concatenate([pad, audio, pad])).reshape(-1, WINDOW * FEATURES).astype(np.float32)
            out[kind].append(float(net.score(x).max()))
    return out


def others_bank(net: WakeNet, paths: list[Path], seed: int = 0) -> np.ndarray:
    """Personal enrolment's other speech (`sidecar.voice.wake_verifier.others`): from every third
    voice, 12 windows of its other speech, silence and beds at random and the 6 the model scores
    highest (its look-alikes): some 3000 windows of 176 voices, clean and over beds."""
    rng = np.random.default_rng(seed)
    out = []
    for path in paths[::3]:
        with np.load(path) as f:
            x, y = f["x"], f["y"]
        negative = np.where(y == 0)[0]
        scores = net.score(x[negative].reshape(len(negative), -1).astype(np.float32))
        picked = np.r_[rng.choice(negative, min(len(negative), 12), replace=False), negative[np.argsort(scores)[-6:]]]
        out.append(x[picked].reshape(len(picked), -1))
    return np.concatenate(out)


def save_bank(bank: np.ndarray) -> None:
    """Stored as 8-bit steps of each feature's range (a quarter of float32's size; the verifier
    standardises its windows, so the steps' error is a small, fixed noise)."""
    low, high = bank.min(0), bank.max(0)
    step = np.maximum(high - low, 1e-6) / 255
    np.savez_compressed(OTHERS, q=np.round((bank - low) / step).astype(np.uint8), low=low.astype(np.float32),
                        step=step.astype(np.float32))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--members", type=int, default=len(SEEDS), help="networks in the ensemble (one per seed)")
    parser.add_argument("--train-only", action="store_true", help="train on the cached data (no new speech)")
    parser.add_argument("--bank-only", action="store_true", help="only write enrolment's bank of other speech, "
                        "for the model there is (from the cached data)")
    args = parser.parse_args()
    paths = sorted(CACHE.glob("*.npz")) if args.train_only or args.bank_only else build(args.workers)
    if args.bank_only:
        save_bank(others_bank(WakeNet.load(OUT), paths))
        print(f"wrote {OTHERS} ({OTHERS.stat().st_size / 1024:.0f} KiB)")
        return
    members = [train(paths, seed=seed, epochs=args.epochs)[0] for seed in SEEDS[:args.members]]
    net = ensemble(members)
    aside = kept_aside(paths)
    print(json.dumps(evaluate(net, [np.load(p) for p in paths if voice_of(p) in aside]), indent=1))
    scores = utterance_scores(net, [training_voices()[i] for i in sorted(aside)])
    print("on the voices kept aside, one utterance at a time (best score in each):")
    for threshold in (0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.95, 0.98, 0.99):
        print(f"  {threshold}: " + ", ".join(f"{kind} {'missed' if kind == 'wake' else 'taken'} "
                                            f"{np.mean((np.array(v) < threshold) == (kind == 'wake')):.1%}"
                                            for kind, v in scores.items()))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    net.save(OUT)
    save_bank(others_bank(net, paths))
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.0f} KiB) and {OTHERS} ({OTHERS.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
