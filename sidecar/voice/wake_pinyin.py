"""The wake phrase in Mandarin ("你好小星"), matched by sound: whisper's characters through pinyin.

Whisper writes what it hears in characters, and many characters sound alike: a "你好小星" comes
back as 你好小心, 你好晓星, 你好小新 or 你好，小行. So the transcript's first characters are read
as toneless pinyin (`pypinyin`, every reading of a polyphone: 行 is xing or hang) and compared
with the phrase's syllables, with -n and -ng merged (whisper, and many speakers, say 星 xing as
心 xin): 你好小心 is the phrase, 你好小明 (ming) and 你好小雪 (xue) are not.

The greeting is required: a bare 小星 is 小心 ("careful!"), said every day, and only the phrase
as a whole is rare enough to wake her. So the guards against look-alikes are

* 小心, 小心点, 小星 alone — no greeting, no wake;
* 你好小明, 你好小红, 你好晓晴 — the name's last syllable differs: another name
  (`hears_another`, and the turn taker then asks whisper for no second guess);
* 你好小心 said as such, 你好小新 — the same sounds as the phrase, so they wake her: no
  transcript can tell them apart (tones do not help either: 星, 心 and 新 are all first tone).

The matcher has `NameMatcher`'s interface (sidecar/voice/wake.py), which the turn taker uses;
`name_matcher` picks the one for a phrase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from sidecar.voice.wake import NameMatch, NameMatcher

HAN = re.compile(r"[\u3400-\u9fff]")
# What a phrase may start with before the name: greetings. "你好" and "您好" sound alike to whisper.
GREETINGS = ("你好", "您好", "哈喽", "哈啰", "嗨", "嘿", "喂")
# Sounds said before the phrase ("嗯，你好小星") or between its greeting and the name ("你好呀，小星").
FILLERS = frozenset("嗯啊呃哎诶哦噢喂唉")
PARTICLES = frozenset("啊呀哇吖")
# A character or a Latin word as written, with its place in the text; punctuation and spaces are skipped.
_TOKEN = re.compile(r"[\u3400-\u9fff]|[A-Za-z0-9']+")
_RUN = re.compile(r"[\u3400-\u9fff]+|[A-Za-z0-9']+")  # runs of characters read together


def readings(char: str) -> frozenset[str]:
    """A character's toneless pinyin, -ng merged into -n ("星" -> {"xin"}); for any other token, itself
    in lower case."""
    return _sounds(char)[0]


def _sounds(text: str) -> list[frozenset[str]]:
    """Each token's sounds: a character's reading in its context (pypinyin's word list reads 小行 as
    xiao xing and 银行 as yin hang; every reading of a polyphone would let 姐 be xu)."""
    out: list[frozenset[str]] = []
    for m in _RUN.finditer(text):
        if HAN.match(m.group()):
            out += [frozenset({merged(s)}) for s in _pinyin(m.group())]
        else:
            out.append(frozenset({m.group().lower()}))
    return out


@lru_cache(maxsize=4096)
def _pinyin(run: str) -> tuple[str, ...]:
    from pypinyin import Style, lazy_pinyin

    said = lazy_pinyin(run, style=Style.NORMAL, errors=lambda chars: ["?"] * len(chars))
    return tuple(said) if len(said) == len(run) else tuple("?" * len(run))


def merged(syllable: str) -> str:
    """A syllable with -ng taken as -n ("xing" -> "xin"): the sounds whisper and speakers mix up."""
    return syllable[:-1] if syllable.endswith("ng") else syllable


def initial(syllable: str) -> str:
    """The syllable's initial consonant ("xin" -> "x", "zhang" -> "zh", "an" -> "")."""
    m = re.match(r"(?:zh|ch|sh|[bpmfdtnlgkhjqxrzcsyw])", syllable)
    return m.group() if m else ""


@dataclass(frozen=True)
class _Token:
    sounds: frozenset[str]
    text: str
    start: int
    end: int


def _tokens(text: str) -> list[_Token]:
    return [_Token(sounds, m.group(), m.start(), m.end())
            for m, sounds in zip(_TOKEN.finditer(text), _sounds(text), strict=True)]


class PinyinMatcher:
    """Finds a Mandarin wake phrase at the start of a transcript, by its syllables.

    The phrase splits into a greeting ("你好") and the name ("小星"); a phrase with no known
    greeting is all name ("小星小星"). A transcript holds the phrase when, after at most two
    fillers (嗯, 啊), the greeting's syllables come (你/您 alike) and then the name's, a particle
    (呀) allowed between them; what follows is the user's question.

    Prompted with the phrase, whisper writes it for greetings that sound a little like it ("你好晓晴",
    "你好，星星" -> "你好小星。"), so the phrase found in a transcript must also sound so in one of
    whisper's unprompted readings (`confirms`, `sounds_in`; the turn taker asks for them).
    """

    confirms = True

    def __init__(self, phrase: str) -> None:
        chars = [m.group() for m in _TOKEN.finditer(phrase)]
        if not chars or not all(HAN.fullmatch(c) for c in chars):
            raise ValueError(f"a Mandarin wake phrase is written in Chinese characters, e.g. 你好小星, not {phrase!r}")
        joined = "".join(chars)
        greeting = next((g for g in GREETINGS if joined.startswith(g) and len(joined) > len(g)), "")
        self.phrase = joined
        sounds = _sounds(joined)
        self.greeting = sounds[:len(greeting)]
        self.name = joined[len(greeting):]
        self.syllables = sounds[len(greeting):]
        self.spellings = [self.name]  # how whisper writes the name (the odds check scores these)
        self.reach = len(joined) + 2

    def match(self, transcript: str) -> NameMatch | None:
        tokens = _tokens(transcript)
        for skip in range(min(2, len(tokens)) + 1):
            if skip and tokens[skip - 1].text not in FILLERS:
                return None
            end = self._phrase_at(tokens, skip, _same)
            if end is not None:
                last = tokens[end - 1]
                rest = transcript[last.end:].lstrip(" ，。！？、,.!?;；:：-—~～").strip()
                return NameMatch(rest, end, transcript[:tokens[end - len(self.syllables)].start].strip())
        return None

    def _phrase_at(self, tokens: list[_Token], i: int, same) -> int | None:
        """The index after the phrase if it starts at token `i` (the name compared by `same`), else None."""
        for want in self.greeting:
            if i >= len(tokens) or not _greets(tokens[i].sounds, want):
                return None
            i += 1
        if self.greeting and i < len(tokens) and tokens[i].text in PARTICLES:
            i += 1
        for want in self.syllables:
            if i >= len(tokens) or not same(tokens[i].sounds, want):
                return None
            i += 1
        return i

    def leading(self, reading: str) -> NameMatch | None:
        """The phrase at the reading's start (no acoustic model listens for a Mandarin phrase, so there
        is no name heard by it alone to look for further in)."""
        return self.match(reading)

    def leads(self, reading: str) -> bool:
        return self.leading(reading) is not None

    def sounds_in(self, reading: str) -> bool:
        """The phrase in an unprompted reading, its syllables said loosely (`_loose`: x, s and sh alike, as
        accents say them: 少 for 小), the last one's consonant enough ("你好小心", "你好笑醒", "你好少姓",
        "你好笑声"; not "你好小明", "你好，小请", "你好星星")."""
        tokens = _tokens(reading)
        return any(self._phrase_at(tokens, i, self._near) is not None for i in range(min(3, len(tokens))))

    def _near(self, heard: frozenset[str], want: frozenset[str]) -> bool:
        if want is self.syllables[-1]:
            return _same(heard, want) or bool({_loose(h)[0] for h in heard} & {_loose(w)[0] for w in want})
        return _same(heard, want) or bool({_loose(h) for h in heard} & {_loose(w) for w in want})

    def hears_another(self, reading: str) -> bool:
        """The greeting and a name like hers but for its last syllable's consonant ("你好小明", "你好小红"):
        whisper heard another name, and its prompted guesses would write hers for it."""
        if not self.greeting or len(self.syllables) < 2:
            return False
        tokens = _tokens(reading)
        for i in range(min(3, len(tokens))):
            end = self._phrase_at(tokens, i, _any)
            if end is None:
                continue
            said = tokens[end - len(self.syllables):end]
            head_same = all(_same(t.sounds, w) for t, w in zip(said[:-1], self.syllables[:-1], strict=True))
            if head_same and not _same_initial(said[-1].sounds, self.syllables[-1]):
                return True
        return False


def _same(heard: frozenset[str], want: frozenset[str]) -> bool:
    return bool(heard & want)


def _same_initial(heard: frozenset[str], want: frozenset[str]) -> bool:
    return bool({initial(s) for s in heard} & {initial(s) for s in want})


def _loose(syllable: str) -> tuple[str, str]:
    """A syllable as an accent may blur it: its initial with x, s and sh one sound, and its final without
    the glide i before a vowel ("xiao" and "shao" -> ("s", "ao"); "xin" -> ("s", "in"))."""
    first = initial(syllable)
    final = syllable[len(first):]
    if len(final) > 1 and final[0] == "i" and final[1] in "aeou":
        final = final[1:]
    return ("s" if first in ("x", "s", "sh") else first), final


def loose_syllables(text: str) -> list[tuple[str, str] | None]:
    """Each character of `text` as an accent or whisper may blur it (`_loose`; None for anything but a
    character): how a Mandarin request is matched by its sound ("欢向与韩府" is 换上宇航服)."""
    return [_loose(next(iter(sounds))) if HAN.match(m.group()) else None
            for m, sounds in zip(_TOKEN.finditer(text), _sounds(text), strict=True)]


def _any(heard: frozenset[str], want: frozenset[str]) -> bool:
    return True


def _greets(heard: frozenset[str], want: frozenset[str]) -> bool:
    """A greeting's syllable, a final -n aside (你 ni and 您 nin)."""
    return bool({s.rstrip("n") or s for s in heard} & {s.rstrip("n") or s for s in want})


def is_mandarin(phrase: str) -> bool:
    """Whether a wake phrase is written in Chinese characters."""
    return bool(HAN.search(phrase))


def name_matcher(phrase: str) -> NameMatcher | PinyinMatcher:
    """The matcher for a wake phrase: by pinyin for Chinese characters, else by spelling and sound."""
    return PinyinMatcher(phrase) if is_mandarin(phrase) else NameMatcher(phrase)


def phrase_prompt(phrase: str) -> str:
    """The phrase as whisper is prompted with it: "Hey Stella." ("hey_jarvis" -> "Hey Jarvis."), "你好小星。"."""
    if is_mandarin(phrase):
        return phrase.strip() + "。"
    return phrase.replace("_", " ").title() + "."
