"""Speech to text with CTranslate2 (int8) on the faster-whisper weights, fed a trimmed log-mel.

whisper.cpp encodes at least a 15 s window (shorter ones make tiny.en repeat itself), so a 2 s
question costs ~0.5 s on 2 cores. CTranslate2's encoder takes the utterance's own length: the
log-mel here covers the utterance plus a little silence (`window`), not 30 s — faster-whisper's
front end would pad to 30 s and lose the gain. int8 weights halve the time again.

A short window makes whisper say the utterance twice ("What is the capital of France? What is
the capital of France? What" — measured on every clip tried without a guard). Two guards: it
decodes with timestamps and keeps only segments that start before the audio ends, and a
phrase that starts over right after itself is cut there (`unrepeat`). With both, 4 s windows
gave the words of the 30 s window.

The tokenizer is the weights' own byte-level BPE (tokenizer.json), used for the prompt ("Hey
Stella." biases the spelling of the name) and the wake check's few words (`odds`) only; decoding
reads vocabulary.txt. Its tables weigh 27 MiB and take 0.1-0.3 s to read, for words that recur:
they are read when new words come (`prepare`, which the ASR processor and the wake check run in
the background as they start) and dropped once those are encoded; each word's tokens are kept.

Mandarin (`language="zh"`, a multilingual model): whisper is told the language and given a line of
simplified Chinese as what came before (`LANGUAGE_PROMPTS`): without it whisper base writes traditional
characters (CER 17.5 % against 5 %, FACTS.md); what traditional characters it still writes are made
simplified. Decoding is greedy (temperature 0) with no fallback in
either language: fallback retries took one Mandarin clip to 28.9 s.
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from remote_api.shared.models.whisper_ggml import byte_decoder, read_vocabulary
from sidecar.voice.asr import LEAD_IN, clean
from sidecar.voice.audio import RATE
from sidecar.voice.logmel import log_mel

# How long CTranslate2's OpenMP threads spin before they sleep (libgomp reads it as the library loads; a
# user's own setting wins). Its default, 300,000 spins, makes two threads fight whatever else runs: the
# engine shares two cores with the window as the app starts, and whisper's load took 0.55-0.94 s beside
# two busy loops, 0.22-0.31 s with 10,000. Transcripts took as long either way (beside one busy loop,
# median 142-173 against 154-192 ms; alone 189-204 against 161-189 ms).
OPENMP_SPIN_COUNT = "10000"
MIN_FRAMES = 400  # 4 s of log-mel frames: at 3 s tiny.en misheard words ("penguins life")
STEP = 100  # windows are whole seconds, so a few sizes cover every utterance
# Byte-level BPE pre-tokenisation (GPT-2's pattern, with letters as [^\W\d_]).
_PIECES = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")
# What whisper is given as the previous text before the caller's prompt, per language: simplified characters
LANGUAGE_PROMPTS = {"en": "", "zh": "以下是普通话的句子。"}
# The token cap per second of speech: a guard against whisper running on, not a limit on speech (Chinese
# characters often take two or three byte-level tokens)
TOKENS_PER_SECOND = {"en": 8, "zh": 16}
# A transcript's units for `unrepeat`: words, or in text written without spaces each Chinese character with the
# punctuation after it (a repeated phrase there is at least two characters: "谢谢", "看看" are words)
_HAN = re.compile(r"[\u3400-\u9fff]")
_HAN_UNITS = re.compile(r"[\u3400-\u9fff][^\u3400-\u9fff\w]*|[A-Za-z0-9']+[^\u3400-\u9fff\w]*|[^\w]+|\w")


def window(seconds: float, min_frames: int = MIN_FRAMES) -> int:
    """Log-mel frames for an utterance of `seconds`: its length + 1 s, whole seconds, >= `min_frames`, <= 30 s."""
    return min(3000, max(min_frames, STEP * math.ceil((seconds + 1.0) * 100 / STEP)))


class BPE:
    """Encodes text to whisper token ids (the merges of tokenizer.json, best rank first)."""

    def __init__(self, folder: Path) -> None:
        model = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]
        self.ids: dict[str, int] = model["vocab"]
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        self.ranks = {pair: i for i, pair in enumerate(merges)}
        self.byte_chars = {b: c for c, b in byte_decoder().items()}

    def encode(self, text: str) -> tuple[int, ...]:
        out: list[int] = []
        for piece in _PIECES.findall(text):
            parts = [self.byte_chars[b] for b in piece.encode("utf-8")]
            while len(parts) > 1:
                pairs = [(self.ranks.get((a, b), math.inf), i) for i, (a, b) in enumerate(itertools.pairwise(parts))]
                rank, i = min(pairs)
                if rank == math.inf:
                    break
                parts[i:i + 2] = [parts[i] + parts[i + 1]]
            out += [self.ids[p] for p in parts]
        return tuple(out)


def unrepeat(text: str) -> str:
    """Cut a transcript where a phrase starts over and repeats to the end, whole or partly
    ("Can you tell me a joke? Can you tell me a" -> "Can you tell me a joke?", "今天天气很好。今天天气" ->
    "今天天气很好。"): whisper running on past the words. A repeat with words after it ("tell me, tell me a
    story") is speech."""
    han = bool(_HAN.search(text)) and " " not in text.strip()
    words = _HAN_UNITS.findall(text) if han else text.split()
    plain = [re.sub(r"[^\w']", "", w.lower()) for w in words]
    n = len(plain)
    for start in range(n):
        for size in range(2 if han else 1, n - start - 1):
            rest = plain[start + size:]
            again = [plain[start + k % size] for k in range(len(rest))]
            # the last word may be cut short by the token cap ("... giraffe. How tall is a gir"); in Chinese the last
            # character may be misheard the second time ("睡着了。小猫在" after "小猫再…")
            last = again[-1].startswith(rest[-1]) or (han and len(rest) >= 3)
            if len(rest) >= 2 and rest[:-1] == again[:-1] and last:
                return ("" if han else " ").join(words[:start + size])
    return text


def without_line(text: str, line: str) -> str:
    """`text` without `line` (or nearly it: a character more, less or misheard) at its start, and the
    punctuation after it."""
    want = re.sub(r"\W", "", line)
    at = [i for i, ch in enumerate(text) if ch.isalnum()]
    for n in (len(want), len(want) - 1, len(want) + 1):
        if want and 0 < n <= len(at) and difflib.SequenceMatcher(None, "".join(text[i] for i in at[:n]),
                                                                  want).ratio() >= 0.8:
            return text[at[n - 1] + 1:].lstrip(" ,.!?;:，。！？；：、")
    return text


class CT2Transcriber:
    """Same contract as `asr.Transcriber`: float32 16 kHz audio in, text out."""

    def __init__(self, folder: Path, threads: int, compute_type: str = "int8", min_window_s: float = 4.0,
                 language: str = "en") -> None:
        """`language`: "en", or "zh" (Mandarin: a multilingual model, written in simplified characters)."""
        os.environ.setdefault("GOMP_SPINCOUNT", OPENMP_SPIN_COUNT)
        import ctranslate2

        self.min_frames = max(MIN_FRAMES, int(round(min_window_s * 100 / STEP)) * STEP)

        self._ct2 = ctranslate2
        self._model = ctranslate2.models.Whisper(str(folder), device="cpu", compute_type=compute_type,
                                                 intra_threads=threads, inter_threads=1)
        self._folder = folder
        self._vocab = read_vocabulary(folder)
        self._bytes = byte_decoder()
        self._tokens: dict[str, list[int]] = {}
        self._tokens_lock = threading.Lock()
        special = {t: i for i, t in enumerate(self._vocab) if t.startswith("<|")}
        self._start = [special["<|startoftranscript|>"]]  # with timestamps: the repetition guard reads them
        if language not in LANGUAGE_PROMPTS:
            raise ValueError(f"whisper's language must be one of {', '.join(LANGUAGE_PROMPTS)}, got {language!r}")
        if self._model.is_multilingual:  # the language, transcribed (not left for the model to guess)
            self._start += [special[f"<|{language}|>"], special["<|transcribe|>"]]
        elif language != "en":
            raise ValueError(f"{folder.name} is an English-only whisper model; language {language!r} needs a "
                             "multilingual one (whisper-base-ct2)")
        self.language = language
        self._lead = LANGUAGE_PROMPTS[language]
        self._rate = TOKENS_PER_SECOND[language]
        self._simplified = None
        if language == "zh":
            from opencc import OpenCC  # opencc-python-reimplemented: tables only, read in ~5 ms

            self._simplified = OpenCC("t2s")
        self._no_timestamps = special["<|notimestamps|>"]
        self._prev = special["<|startofprev|>"]
        self._end = special["<|endoftext|>"]
        self._time0 = self._no_timestamps + 1  # <|0.00|>; each next id is 20 ms later

    def __call__(self, audio: np.ndarray, abort: threading.Event | None = None, prompt: str = "") -> str:
        """Text of a float32 16 kHz utterance. `abort` is checked before encoding and before decoding
        (a CTranslate2 call cannot be stopped halfway, so the two halves are separate calls)."""
        if len(audio) < RATE // 10 or (abort is not None and abort.is_set()):
            return ""
        seconds = (LEAD_IN + len(audio)) / RATE
        features = self._model.encode(self._features(audio, self.min_frames))
        if abort is not None and abort.is_set():
            return ""
        lead = self._prompt(prompt)
        # CTranslate2 counts the prompt in `max_length`: the language's own line is not taken from the words
        (result,) = self._model.generate(features, [lead + self._start], beam_size=1,
                                         max_length=int(self._rate * seconds) + 16 + self._lead_tokens(),
                                         no_repeat_ngram_size=0, suppress_blank=True)
        if abort is not None and abort.is_set():
            return ""
        return self._written(unrepeat(clean(self._text(result.sequences_ids[0], seconds))))

    def readings(self, audio: np.ndarray, n: int, prompt: str = "") -> list[str]:
        """The `n` best readings of a short float32 16 kHz clip (beam search, no timestamps): what
        else whisper could have heard (the wake word's second guess, sidecar/voice/wake_nbest.py)."""
        if len(audio) < RATE // 10:
            return []
        seconds = (LEAD_IN + len(audio)) / RATE
        lead = self._prompt(prompt) + self._start + [self._no_timestamps]
        # the length counts the prompt's tokens too: a Chinese one ("以下是普通话的句子。 你好小星。") took them all
        (result,) = self._model.generate(self._features(audio, MIN_FRAMES), [lead], beam_size=n, num_hypotheses=n,
                                         max_length=len(lead) + int(8 * seconds) + 8)
        return [self._written(self._decode(i for i in ids if i < self._end).strip()) for ids in result.sequences_ids]

    def odds(self, audio: np.ndarray, lead: str, words: list[str]) -> list[float]:
        """Whisper's log-probability, with no prompt, that a short float32 16 kHz clip starts with
        `lead` followed by each of `words` (teacher-forced, so only the words' own tokens count):
        how well the audio alone supports a word a prompt made whisper write."""
        if len(audio) < RATE // 10 or not words:
            return [-math.inf] * len(words)
        features = self._features(audio, MIN_FRAMES)
        lead_ids = self._encoded(" " + lead.strip()) if lead.strip() else []
        texts = [lead_ids + self._encoded(" " + word.strip()) for word in words]
        encoded = np.asarray(self._model.encode(features))  # once, for every word
        batch = self._ct2.StorageView.from_array(np.ascontiguousarray(np.repeat(encoded, len(texts), axis=0)))
        results = self._model.align(batch, self._start + [self._no_timestamps], texts,
                                    [features.shape[2]] * len(texts))
        return [sum(math.log(max(p, 1e-12)) for p in r.text_token_probs[len(lead_ids):]) for r in results]

    def _features(self, audio: np.ndarray, min_frames: int):  # noqa: ANN202 (a ctranslate2.StorageView)
        """The log-mel of the audio after a lead-in of silence, its window at least `min_frames`."""
        frames = window((LEAD_IN + len(audio)) / RATE, min_frames)
        padded = np.zeros(frames * 160 + 160, np.float32)  # log_mel drops the last frame
        usable = min(len(audio), len(padded) - LEAD_IN)
        padded[LEAD_IN:LEAD_IN + usable] = audio[:usable]
        return self._ct2.StorageView.from_array(np.ascontiguousarray(log_mel(padded)[None, :, :frames]))

    def prepare(self, prompt: str) -> None:
        """Encode `prompt`'s words for the runs to come (the tokenizer is read for them, then dropped)."""
        self._encoded(" " + f"{self._lead} {prompt}".strip())

    def _prompt(self, prompt: str) -> list[int]:
        """What came before, as whisper's previous-text tokens ("Hey Stella." spells the name), after the
        language's own line (Mandarin: simplified characters)."""
        prompt = f"{self._lead} {prompt}".strip()
        return [self._prev, *self._encoded(" " + prompt)] if prompt else []

    def _written(self, text: str) -> str:
        """Mandarin in simplified characters: whisper base still writes traditional ones for some clips with
        the prompt (這個週末, 現在幾點 in 4 of 12 test clips), so they are converted (OpenCC's t2s table);
        and without the language's prompt line, which whisper sometimes writes back for words it cannot make out
        ("你可以给我发email。" heard as "以下普通话的句子。")."""
        if self._simplified is None or not text:
            return text
        return without_line(self._simplified.convert(text), self._lead)

    def _lead_tokens(self) -> int:
        """How many tokens the language's own prompt line takes (English: none)."""
        return len(self._encoded(" " + self._lead)) + 1 if self._lead else 0

    def _encoded(self, text: str) -> list[int]:
        """`text`'s tokens, each word's kept: the prompt and the wake check's few words recur."""
        pieces = _PIECES.findall(text)
        with self._tokens_lock:  # a run that comes while `prepare` reads the tokenizer waits for it
            if missing := [p for p in pieces if p not in self._tokens]:
                bpe = BPE(self._folder)
                self._tokens.update((p, list(bpe.encode(p))) for p in missing)
            return [i for p in pieces for i in self._tokens[p]]

    def _text(self, ids: list[int], seconds: float) -> str:
        """The words of the segments that start before the audio's end."""
        kept: list[int] = []
        inside = False  # timestamps come in pairs: a segment's start, then its end
        for i in ids:
            if i >= self._time0:
                if not inside and (i - self._time0) * 0.02 >= seconds - 0.1:
                    break  # a segment that starts after the audio: whisper saying it again
                inside = not inside
            elif i < self._end:
                kept.append(i)
        return self._decode(kept)

    def _decode(self, ids: Iterable[int]) -> str:
        """Token ids (text tokens only) to text, through the vocabulary's byte-level pieces."""
        return bytes(self._bytes[c] for i in ids for c in self._vocab[i]).decode("utf-8", errors="replace")
