"""Grouping streamed tokens into sentences, so speech can start before the reply is complete.

A boundary is sentence-final punctuation followed by a space and then something that does not
continue the sentence: "Dr. Smith", "e.g. this", "3.14", "U.S." and "J. K. Rowling" stay whole;
CJK full stops end a sentence with no space after them; a newline always ends one. To speak
sooner, the first sentence of a reply may be cut at its first comma (or ; : —) once it has
`first_clause_words` words. Deciding often needs the next character, so a boundary is
confirmed one token late, or at the end of the reply — except a comma or semicolon after a
letter, which ends the first clause at once (a token sooner: ~40 ms of a small model on one core).
A first sentence with no comma may also be cut before a word that starts a new clause ("I love
rainy days | because …", "… | and …") once it has `first_break_words` words: an instruct model
writes long first sentences at ~8-14 tokens a second here, and the whole sentence kept her silent
for a second or more (tests/bench/app_latency.py).

In Mandarin (`language="zh"`) a sentence ends at 。！？；… (full- or half-width) with nothing to confirm,
and a chunk is cut at ，、： once it holds `ZH_FIRST_CLAUSE` characters (the reply's first chunk: her voice
starts sooner) or `ZH_CLAUSE` (later ones: a comma's pause each few characters would sound clipped);
Latin words inside a Chinese reply are kept (the voice says them).

Small models sometimes glue stray tokens to the end of a sentence ("Paris.łę", "music.我可以",
"music.ButtonClicked..."): a sentence mark followed at once by another script or a capital
still ends the sentence, and `speakable` drops what no voice could say.
"""

from __future__ import annotations

import re
import unicodedata

from sidecar.frames import Frame, InterruptionFrame, ReplyDoneFrame, SentenceFrame, TokenFrame
from sidecar.pipeline import Direction, Processor

ENDS = ".!?…"
CJK_ENDS = "。！？"
CLOSERS = "\"'”’)]»」』"
CLAUSE = ",;:—"
ZH_ENDS = "。！？；…!?;"
ZH_CLAUSE_MARKS = "，、：,:"
ZH_FIRST_CLAUSE = 2  # characters before the first chunk of a Chinese reply may end at a comma: "好的，"
# (Kokoro: ~0.9 s on one core, not ~1.9 s for the whole first sentence; tests/bench/results/mandarin.md)
ZH_CLAUSE = 10  # ... and later chunks
_ZH_UNITS = re.compile(r"[\u3400-\u9fff]|[A-Za-z0-9]+")  # a character, or a Latin word or number
ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "a.m", "p.m", "no",
    "approx", "fig", "mt", "ave", "inc", "ltd", "co", "dept", "est", "u.s", "u.k",
}
_LAST_WORD = re.compile(r"([\w.]+)\.$")
MAX_WORD = 30  # longer runs of letters are not words ("ButtonClickedattendedattended...")
_UNSPACED = {"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "THAI"}  # scripts written without spaces
# words that start a new clause: a first sentence may be cut before one, said as a breath's pause
BREAK_WORDS = {"and", "but", "so", "because", "when", "while", "if", "which", "where", "since", "or", "as", "with",
               "for", "like", "although", "though", "until", "unless"}
_BREAK = re.compile(r"\s(\w+)(?=\s)")


def script(ch: str) -> str:
    """The writing system of a letter ("LATIN", "CJK", "CYRILLIC", ...); "" for anything else."""
    if not ch.isalpha():
        return ""
    name = unicodedata.name(ch, "").split(" ")[0]
    return "CJK" if name in ("CJK", "HIRAGANA", "KATAKANA") else name


def main_script(text: str) -> str:
    scripts = [script(ch) for ch in text if ch.isalpha()]
    return max(sorted(set(scripts)), key=scripts.count) if scripts else ""


def speakable(text: str, main: str = "", also: str = "") -> str:
    """Text as a voice should say it: no markdown, tags, [stage directions] or emoji, no letters from another
    script than `main` (default: the text's own) or `also`, no letter runs too long to be words."""
    text = re.sub(r"<[^<>]{0,24}>", " ", text)  # tags, and special tokens such as "<s>"
    text = re.sub(r"\[[^\[\]]{0,24}\]", " ", text)  # stage directions: "[laughs]", "[interrupted]"
    text = re.sub(r"[*_#`~|<>]", " ", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "So")
    main = main or main_script(text)
    if main:
        text = "".join(ch for ch in text if not ch.isalpha() or script(ch) in (main, also))
        if main not in _UNSPACED:
            text = " ".join(w for w in text.split() if sum(ch.isalpha() for ch in w) <= MAX_WORD)
    text = " ".join(text.split())
    return text if any(ch.isalnum() for ch in text) else ""


def sentences_of(text: str, first_clause_words: int = 4, language: str = "en") -> list[str]:
    """A whole reply as the sentences that would be spoken."""
    splitter = SentenceSplitter(first_clause_words, language=language)
    return splitter.feed(text) + splitter.flush()


class SentenceSplitter:
    """One reply's text in, its sentences out; the first sentence sets the reply's script (in Mandarin: Chinese,
    with Latin words kept)."""

    def __init__(self, first_clause_words: int = 4, max_chars: int = 240, first_break_words: int = 0,
                 language: str = "en") -> None:
        self.first_clause_words = first_clause_words
        self.first_break_words = first_break_words  # 0: no cut before a clause word
        self.max_chars = max_chars
        self.chinese = language == "zh"
        self._buf = ""
        self._emitted = 0
        self._script = "CJK" if self.chinese else ""

    def feed(self, text: str) -> list[str]:
        self._buf += text
        return self._split(final=False)

    def flush(self) -> list[str]:
        """The end of the reply: whatever is left is the last sentence."""
        out = self._split(final=True)
        rest, self._buf = self._speakable(self._buf), ""
        if rest:
            out.append(rest)
        return out

    def _speakable(self, text: str) -> str:
        sentence = speakable(text, self._script, "LATIN" if self.chinese else "")
        self._script = self._script or main_script(sentence)
        return sentence

    def _split(self, final: bool) -> list[str]:
        out: list[str] = []
        while True:
            cut = self._boundary(final)
            if cut is None:
                break
            sentence, self._buf = self._speakable(self._buf[:cut]), self._buf[cut:].lstrip()
            if sentence:
                out.append(sentence)
                self._emitted += 1
        return out

    def _boundary(self, final: bool) -> int | None:
        """Index just after the first confirmed boundary in the buffer, or None."""
        buf = self._buf
        for i, ch in enumerate(buf):
            if ch == "\n" and buf[:i].strip():
                return i + 1
            if ch in CJK_ENDS or (self.chinese and ch in ZH_ENDS):
                return self._after_closers(i + 1, also=ZH_ENDS if self.chinese else "")
            if self.chinese:
                if ch in ZH_CLAUSE_MARKS and not (ch in ",:" and buf[i - 1:i].isdigit()) and len(
                        _ZH_UNITS.findall(buf[:i])) >= (ZH_CLAUSE if self._emitted else ZH_FIRST_CLAUSE):
                    return i + 1  # "1,000" and "3:45" go on
                if ch in CLAUSE or ch in ZH_CLAUSE_MARKS:
                    continue
            if ch in ENDS:
                end = self._after_closers(i + 1, also=ENDS)
                decided = self._ends_sentence(i, end, final)
                if decided is None:
                    return None  # need more text to know
                if decided:
                    return end
            elif ch in CLAUSE and self._emitted == 0 and len(buf[:i].split()) >= self.first_clause_words:
                if i + 1 < len(buf) and buf[i + 1].isspace():
                    return i + 1
                if i + 1 == len(buf) and ch in ",;" and buf[i - 1].isalpha():
                    return i + 1  # "know," ends a clause whatever comes next (only digits go on: "1,000")
        if self._emitted == 0 and self.first_break_words and main_script(buf) == "LATIN":
            for m in _BREAK.finditer(buf):
                if m.group(1).lower() in BREAK_WORDS and len(buf[:m.start()].split()) >= self.first_break_words:
                    return m.start() + 1
        if len(buf) > self.max_chars:  # a run-on: cut at the last space so speech can go on
            space = buf.rfind(" ", 0, self.max_chars)
            return space + 1 if space > 0 else self.max_chars
        return None

    def _after_closers(self, j: int, also: str = "") -> int:
        while j < len(self._buf) and (self._buf[j] in CLOSERS or self._buf[j] in also):
            j += 1
        return j

    def _ends_sentence(self, i: int, end: int, final: bool) -> bool | None:
        buf = self._buf
        if end == len(buf):
            return True if final else None
        if not buf[end].isspace():
            return self._glued(i, end)
        rest = buf[end:].lstrip()
        if not rest:
            return True if final else None
        if rest[0].islower():
            return False  # "etc. and so on"
        if buf[i] == ".":
            m = _LAST_WORD.search(buf[:i + 1])
            word = m.group(1) if m else ""
            if word.lower() in ABBREVIATIONS or (len(word) == 1 and word.isupper() and word != "I"):
                return False  # "Dr. Smith", "J. K. Rowling"
            if word.isdigit() and not buf[:i - len(word)].strip():
                return False  # a list item "1. Apples"
        return True


    def _glued(self, i: int, end: int) -> bool:
        """A sentence mark with no space after it: "3.14", "e.g.", "U.S.A" and "example.com"
        go on; another script ("music.我") or a capital after a whole word ("done.Next") does not."""
        buf, nxt = self._buf, self._buf[end]
        if script(nxt) and script(nxt) != script(buf[i - 1] if i else ""):
            return bool(script(buf[i - 1] if i else "")) or not buf[i - 1:i].isdigit()
        if nxt.isupper():
            m = _LAST_WORD.search(buf[:i + 1]) if buf[i] == "." else None
            word = m.group(1) if m else buf[:i].split()[-1] if buf[:i].split() else ""
            return len(word) >= 2 and word.lower() not in ABBREVIATIONS and "." not in word
        return False


class Sentences(Processor):
    """Tokens in, one SentenceFrame per sentence out, as soon as each is complete."""

    def __init__(self, first_clause_words: int, first_break_words: int = 0, language: str = "en") -> None:
        super().__init__()
        self.first_clause_words = first_clause_words
        self.first_break_words = first_break_words
        self.language = language
        self._splitter = self._new()
        self._turn = 0
        self._index = 0

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, TokenFrame):
            if frame.turn != self._turn:
                self._turn, self._index = frame.turn, 0
                self._splitter = self._new()
            await self._emit(self._splitter.feed(frame.text))
            return
        if isinstance(frame, ReplyDoneFrame) and frame.turn == self._turn:
            await self._emit(self._splitter.flush())
        elif isinstance(frame, InterruptionFrame):
            self._splitter = self._new()
        await self.push(frame, direction)

    def _new(self) -> SentenceSplitter:
        return SentenceSplitter(self.first_clause_words, first_break_words=self.first_break_words,
                                language=self.language)

    async def _emit(self, sentences: list[str]) -> None:
        for text in sentences:
            await self.push(SentenceFrame(turn=self._turn, index=self._index, text=text))
            self._index += 1
