"""Requests handled on the spot, without asking the model: stop, volume, outfits, the clock.

`Intents.parse` maps what the user said to an intent, or None for anything to be answered:

* stop — the whole utterance is a stop phrase ("Stop.", "Be quiet, Stella", "That's enough");
  inside a longer sentence ("don't stop the music") it is conversation, not a command;
* volume — short requests ("louder", "turn it down", "volume up");
* outfit — a dressing verb ("wear", "put on", "change into", "switch to", "dress up for", "get
  ready for", ...) followed by words that name exactly one catalogue outfit. Its words come from
  the atlas manifest (id and display name), the last word of the name counting double ("the red
  hoodie" is the hoodie), and from the occasions the outfit suits ("dress up for a trip to the
  moon" is the space suit, `outfit_catalogue.OCCASIONS`); one typo is forgiven ("pajamas").
  "Wear something nice", "wear the bikini", "don't wear the red dress" and "should I wear my
  hoodie?" change nothing. In Mandarin: 换上/穿上/换成/换/穿 and an outfit's Chinese name
  ("请换上宇航服"), not after 不/别/没 — also by sound, as whisper may write it ("欢向与韩府": the verb and
  the name in pinyin, x/s/sh and -n/-ng alike);
* the time, the date, the day of the week — the whole utterance asks for it ("what's the time",
  "tell me the date", "what day is it today"), answered from the injected clock in the user's
  time zone (the computer's own, `TZ` honoured). A question that merely contains the words
  ("what time did you wake up?", "what day do you like best?") goes to the model;
* forget — "forget that", "忘掉这个": she forgets the last exchange and the facts learned from it
  (`Forget`, acted on by sidecar.reply; docs/memory.md).

In Mandarin the same, whole utterances, politeness and her name aside (请, 小星, 吧, 吗): stop (停,
停下, 别说了, 闭嘴吧, 安静), volume (大声点, 小声一点, 声音大一点, 音量调低), the clock (几点了, 现在几点,
今天几号, 星期几) — answered in Mandarin ("现在是下午三点四十五分。"), a question in English in English.
"不要停" and "你几点睡觉？" are conversation.

The model may change outfits too, but only by writing `[outfit: ID]` with a catalogue id
(the system line lists them); `OutfitTags` (`sidecar.outfit_tags`) takes such tags out of the reply as it streams —
even split across tokens — and passes on catalogue ids only, logging the rest.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sidecar.outfit_catalogue import Outfit
from sidecar.voice.wake import edit_distance, words
from sidecar.voice.wake_pinyin import loose_syllables

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stop:
    pass


@dataclass(frozen=True)
class Volume:
    step: int  # +1 louder, -1 softer


@dataclass(frozen=True)
class Wear:
    outfit: str


@dataclass(frozen=True)
class Tell:
    """A question the machine answers itself; `text` is the reply, spoken like any other."""

    text: str


@dataclass(frozen=True)
class Forget(Tell):
    """"Forget that": the last exchange and what she learned from it are forgotten; `text` says so."""


Intent = Stop | Volume | Wear | Tell

# Words that carry no request ("please stop", "okay, be quiet now").
_FILLER = {"please", "ok", "okay", "now", "hey", "just", "oh", "alright", "right", "um", "uh", "so", "and",
           "can", "you", "could", "would", "will", "a", "bit", "little", "lot", "the", "it"}
_STOP = {"stop", "stop talking", "stop speaking", "be quiet", "quiet", "shut up", "hush", "shh", "shush",
         "silence", "enough", "that's enough", "that is enough", "stop stop", "cancel", "never mind",
         "nevermind", "be silent", "quiet down", "stop that"}
_LOUDER = {"louder", "speak up", "volume up", "turn up", "turn volume up", "turn up volume", "turn sound up",
           "turn up sound", "increase volume", "raise volume", "more volume", "speak louder", "talk louder",
           "be louder"}
_SOFTER = {"quieter", "softer", "volume down", "turn down", "turn volume down", "turn down volume",
           "turn sound down", "turn down sound", "decrease volume", "lower volume", "less volume",
           "speak softer", "speak quieter", "talk quieter", "talk softer", "not loud", "lower your voice",
           "be quieter", "be softer"}
_WEAR = re.compile(
    r"\b(?:wear(?:ing)?|put on|puts on|change into|change to|changing into|switch to|switch into|switch over to|"
    r"dress(?:ed)? (?:up )?in|get into|get in|getting into|slip into|try on|go with|see you in|be in|"
    r"dress(?:ed)? up for|dress(?:ed)? for|get(?:ting)? (?:dressed|ready) for|"
    r"change your (?:outfit|clothes) to|put (?:the |your )?(?P<object>[a-z' ]+?) on\b)\s*(?P<rest>.*)")
# Other ways to ask her to dress ("show me your party look", "get changed for school", "get your gear on"): the
# outfit then comes from the whole request, by name or occasion. A bare "dress" is not one ("I love your red
# dress" is a compliment).
_DRESS_WORDS = re.compile(r"\b(?:wears|outfit|outfits|clothes|gear|changed|change|dressed|suit up|(?:your|a|the) "
                          r"(?:\w+ )?look)\b")
_WEAR_ZH = re.compile(r"(?<![不别没])(?:换上|穿上|换成|换|穿)(?P<rest>.+)")
_NEGATED = re.compile(r"\b(?:don't|do not|dont|never|not|stop)\s+(?:\w+\s+){0,2}$")
# "should I wear my hoodie?" is about the user's clothes
_USERS_OWN = re.compile(r"\bmy\b")
_USER_SUBJECT = re.compile(r"\b(?:i|i'll|we)\s+(?:\w+\s+)?$")
_GENERIC = {"the", "your", "a", "an", "that", "this", "outfit", "clothes", "one", "please", "on", "again", "now",
            "today", "for", "me", "us", "instead", "of", "little", "stella"}


# Clock questions are matched on the whole utterance, these words taken out first.
_CLOCK_FILLER = {"please", "now", "right", "today", "today's", "hey", "ok", "okay", "so", "um", "uh", "oh",
                 "exactly", "currently", "actually", "again", "quickly", "then"}
_ASKING = r"(?:(?:can|could|would|will) you )?(?:tell me |do you know |you know |i'd like to know |i want to know )?"
_CLOCK = {
    "time": re.compile(_ASKING + r"(?:what is the (?:current )?time|what time is it|what time it is|"
                                 r"the (?:current )?time|have you got the time)"),
    "date": re.compile(_ASKING + r"(?:what is the (?:current )?date|what date is it|what date it is|what is date|"
                                 r"the (?:current )?date|what is the date of today)"),
    "day": re.compile(_ASKING + r"(?:what day is it|what day it is|what day is|which day is it|"
                                r"what day of the week is it|what day of the week it is|what is the day|"
                                r"what day of the week|what is the day of the week)"),
}


# Mandarin: what the utterance is once punctuation, politeness and her name are taken away.
_ZH_PUNCTUATION = re.compile(r"[\s，。！？、,.!?;；:：~～…\-—\"“”'‘’]+")
_ZH_BEFORE = re.compile(r"^(?:(?:你好)?小星|stella|请问|请|麻烦你|麻烦|你能不能|你可以|能不能|可以|帮我|给我|"
                        r"告诉我|你知道|那个|好了|好|嗯|啊|哎|喂|你)+", re.IGNORECASE)
_ZH_AFTER = re.compile(r"(?:(?:你好)?小星|stella|吧|啊|呀|吗|呢|嘛|哦|好吗|好不好|行吗|可以吗|谢谢|拜托了?)+$",
                       re.IGNORECASE)
_ZH_STOP = {"停", "停下", "停下来", "停止", "停一下", "停停", "停停停", "别说了", "不要说了", "别讲了",
            "不要讲了", "别说话了", "闭嘴", "安静", "安静点", "安静一点", "安静一下", "够了", "算了", "嘘", "住口",
            "别吵了", "不说了"}
_ZH_LOUDER_CORES = ("大声点", "大声一点", "大点声", "大声些", "大声一些", "声音大点", "声音大一点", "声音大些",
                    "声音开大点",
                    "声音调大", "声音调大点", "声音调大一点", "音量大点", "音量大一点", "音量调大", "音量调大点",
                    "音量调大一点", "调大音量", "调高音量", "音量调高", "开大声点", "说大声点", "说大声一点", "大声说")
_ZH_SOFTER_CORES = ("小声点", "小声一点", "小点声", "小声些", "小声一些", "声音小点", "声音小一点", "声音小些",
                    "声音关小点",
                    "声音调小", "声音调小点", "声音调小一点", "音量小点", "音量小一点", "音量调小", "音量调小点",
                    "音量调小一点", "调小音量", "调低音量", "音量调低", "轻点声", "轻一点", "说小声点", "说小声一点",
                    "小声说", "声音太大了", "太吵了")
_ZH_LOUDER = {pre + core for pre in ("", "再", "你") for core in _ZH_LOUDER_CORES} | {"声音太小了", "听不清", "听不见"}
_ZH_SOFTER = {pre + core for pre in ("", "再", "你") for core in _ZH_SOFTER_CORES}
_ZH_CLOCK = {
    "time": re.compile(r"(?:现在)?(?:是)?(?:几点|几点钟|什么时间|什么时候了|几点几分)了?|现在的?时间|时间"),
    "date": re.compile(r"(?:今天|今儿)(?:是)?(?:几号|几月几号|几月几日|几月几号了?|什么日期|的日期|日期)了?|今天是哪天|"
                       r"现在是几月几号"),
    "day": re.compile(r"(?:今天)?(?:是)?(?:星期几|礼拜几|周几)了?"),
}
_ZH_DIGITS = "零一二三四五六七八九"
_HAN = re.compile(r"[\u3400-\u9fff]")
_ZH_WEEKDAYS = ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日")
_FORGET = {"forget that", "forget it", "forget this", "forget what i just said", "forget what i said",
           "forget i said that", "forget about that", "forget about it", "you can forget that"}
_FORGET_ZH = re.compile(r"^(?:请|你)?(?:把(?:这个|它|刚才的话|刚才说的)?)?(?:忘掉|忘了|忘记|忘)"
                        r"(?:这个|它|吧|刚才说的|刚才的话|那个)?(?:吧|了|好吗)?[。！!.]?$")


def local_now() -> datetime:
    """Now, in the computer's time zone (the user's)."""
    return datetime.now().astimezone()


def clock_answer(asked: str, now: datetime) -> str:
    """What Stella says to a clock question, in words a voice reads well."""
    if asked == "time":
        hour = now.hour % 12 or 12
        return f"It's {hour}:{now.minute:02d} {'AM' if now.hour < 12 else 'PM'}."
    if asked == "date":
        return f"Today is {now:%A}, {now:%B} {now.day}, {now.year}."
    return f"Today is {now:%A}."


def chinese_number(n: int) -> str:
    """0-99 as Mandarin reads it (45 -> 四十五, 10 -> 十, 3 -> 三)."""
    if n < 10:
        return _ZH_DIGITS[n]
    tens, ones = divmod(n, 10)
    return ("" if tens == 1 else _ZH_DIGITS[tens]) + "十" + (_ZH_DIGITS[ones] if ones else "")


def chinese_clock_answer(asked: str, now: datetime) -> str:
    """What Stella says to a Mandarin clock question: "现在是下午三点四十五分。", "今天是十二月七日，星期一。"."""
    if asked == "time":
        part = ("凌晨" if now.hour < 5 else "早上" if now.hour < 9 else "上午" if now.hour < 12 else
                "中午" if now.hour < 13 else "下午" if now.hour < 18 else "晚上")
        hour = now.hour % 12 or 12
        spoken = "两" if hour == 2 else chinese_number(hour)
        minutes = "整" if now.minute == 0 else ("零" if now.minute < 10 else "") + chinese_number(now.minute) + "分"
        return f"现在是{part}{spoken}点{minutes}。"
    if asked == "date":
        year = "".join(_ZH_DIGITS[int(d)] for d in str(now.year))
        day = f"{chinese_number(now.month)}月{chinese_number(now.day)}日"
        return f"今天是{year}年{day}，{_ZH_WEEKDAYS[now.weekday()]}。"
    return f"今天是{_ZH_WEEKDAYS[now.weekday()]}。"


def mandarin_core(text: str) -> str:
    """What a Mandarin utterance asks once punctuation, politeness and her name are taken away
    ("小星，请停下吧！" -> "停下")."""
    said = _ZH_PUNCTUATION.sub("", text)
    return _ZH_AFTER.sub("", _ZH_BEFORE.sub("", said)) or said


class Intents:
    """The intent parser for one catalogue (and the character's name, dropped as a vocative)."""

    def __init__(self, outfits: Sequence[Outfit], name: str = "",
                 now: Callable[[], datetime] = local_now) -> None:
        self.outfits = tuple(outfits)
        self.name = name.lower()
        self.now = now
        # each outfit's words and their weights: the head noun (last word of the name) counts double
        self._keywords: dict[str, dict[str, int]] = {}
        for o in self.outfits:
            name_words = words(o.name.replace("_", " "))
            weights = {w: 1 for w in words(o.id.replace("_", " ")) + name_words if w not in _GENERIC}
            if name_words:
                weights[name_words[-1]] = 2
            if len(name_words) > 1:  # "spacesuit"
                weights["".join(name_words)] = len(name_words) + 1
            self._keywords[o.id] = weights
        self._occasions = {o.id: {w: 1 for w in o.occasions} for o in self.outfits}

    def parse(self, text: str) -> Intent | None:
        said = [w for w in words(text) if w != self.name]
        core = " ".join(w for w in said if w not in _FILLER)
        if core in _STOP or " ".join(said) in _STOP:
            return Stop()
        if core in _LOUDER:
            return Volume(+1)
        if core in _SOFTER:
            return Volume(-1)
        if core in _FORGET or " ".join(said) in _FORGET:
            return Forget("Okay, I've forgotten that.")
        if _FORGET_ZH.match(text.strip()) and "忘" in text:
            return Forget("好的，我已经忘掉了。")
        if _WEAR.search(" ".join(said)):  # a dressing verb: its object decides (or nothing does)
            return self._clock(said) or self._outfit(" ".join(said))
        return self._clock(said) or self._dressing(" ".join(said)) or self._mandarin(text) or self._outfit_zh(text)

    def _mandarin(self, text: str) -> Intent | None:
        """Stop, volume and the clock, said in Mandarin (the whole utterance asks it)."""
        if not _HAN.search(text):
            return None
        core = mandarin_core(text)
        if core in _ZH_STOP:
            return Stop()
        if core in _ZH_LOUDER:
            return Volume(+1)
        if core in _ZH_SOFTER:
            return Volume(-1)
        for kind, pattern in _ZH_CLOCK.items():
            if pattern.fullmatch(core):
                return Tell(chinese_clock_answer(kind, self.now()))
        return None

    def _clock(self, said: list[str]) -> Tell | None:
        asked = " ".join(w for w in said if w not in _CLOCK_FILLER).replace("what's", "what is")
        for kind, pattern in _CLOCK.items():
            if pattern.fullmatch(asked):
                return Tell(clock_answer(kind, self.now()))
        return None

    def _outfit(self, text: str) -> Wear | None:
        m = _WEAR.search(text)
        if m is None or _NEGATED.search(text[:m.start()]) or _USER_SUBJECT.search(text[:m.start()]):
            return None
        obj = m.group("object") or m.group("rest")
        if _USERS_OWN.search(obj):
            return None
        # an occasion ("dress up for the moon", "wear something comfy"), not a garment by name ("put on
        # your wedding gown" is an outfit she does not have)
        occasion = text[m.start():m.start("rest")].split()[-1:] == ["for"] or obj.startswith("something")
        found = self.resolve(obj) or (self.resolve(obj, self._occasions) if occasion else None)
        if found is None:
            log.info("an outfit request names no single outfit of the catalogue")
            log.debug("outfit request %r names no single outfit of the catalogue", text)
            return None
        return Wear(found)

    def _dressing(self, text: str) -> Wear | None:
        """A request that names no garment after a dressing verb but still asks her to dress for something."""
        m = _DRESS_WORDS.search(text)
        if m is None or _NEGATED.search(text[:m.start()]) or _USER_SUBJECT.search(text[:m.start()]):
            return None
        around = text[max(0, m.start() - 12):m.end() + 12]
        if _USERS_OWN.search(around) or re.search(r"\b(?:should|shall) (?:i|we)\b", text):
            return None
        found = self.resolve(text) or self.resolve(text, self._occasions)
        return Wear(found) if found else None

    def asks_to_dress(self, text: str) -> bool:
        """Whether `text` asks her about clothes at all (a dressing verb, "outfit", "clothes", 穿/换/衣)."""
        said = " ".join(w for w in words(text) if w != self.name)
        return bool(_WEAR.search(said) or _DRESS_WORDS.search(said) or re.search(r"\bdress\b", said)
                    or re.search(r"[穿换衣]", text))

    def named_in_reply(self, request: str, reply: str) -> str | None:
        """The one outfit a reply to a dressing request names in words, with no tag ("I'll put on my pyjamas",
        "我会穿上宇航服"): the model said it, so she wears it."""
        if not self.asks_to_dress(request):
            return None
        named = self._named_zh(reply)
        found = self.resolve(reply)
        if found:
            named.add(found)
        return named.pop() if len(named) == 1 else None

    def _outfit_zh(self, text: str) -> Wear | None:
        m = _WEAR_ZH.search(text)
        if m is None or "我" in text[:m.start()]:  # "我穿上睡衣了" is the user's own clothes
            return self._outfit_by_sound(text)
        named = self._named_zh(m.group("rest"))
        return Wear(named.pop()) if len(named) == 1 else self._outfit_by_sound(text)

    def _outfit_by_sound(self, text: str) -> Wear | None:
        """换上 / 穿上 / 换成 and one outfit's Chinese name, matched by their syllables (whisper writes 换上宇航服
        as 欢向与韩府 for an accent): the verb first, not after 不/别/没 or 我, the name after it (the longest
        one heard)."""
        chars = [c for c in text if _HAN.match(c)]
        said = loose_syllables("".join(chars))
        for verb in _VERBS_ZH:
            at = _find(said, loose_syllables(verb))
            if at is None or any(c in "不别没我" for c in chars[:at]):
                continue
            rest = said[at + len(verb):]
            # the longest name heard wins: 与韩府 sounds like 宇航服 and holds 汉服 (han fu) too
            heard = {o.id: max((len(n) for n in o.chinese if _find(rest, loose_syllables(n)) is not None), default=0)
                     for o in self.outfits}
            best = max(heard.values(), default=0)
            named = [oid for oid, length in heard.items() if length == best]
            if best and len(named) == 1:
                log.info("an outfit asked for in Mandarin, matched by its sound")
                return Wear(named[0])
        return None

    def _named_zh(self, text: str) -> set[str]:
        """The outfits whose Chinese names `text` holds."""
        return {o.id for o in self.outfits if any(name in text for name in o.chinese)}

    def resolve(self, phrase: str, keywords: dict[str, dict[str, int]] | None = None) -> str | None:
        """The one outfit `phrase` names (by the outfits' names, or by `keywords`), or None (no outfit,
        or a tie)."""
        said = [w for w in words(phrase) if w not in _GENERIC]
        scores = {oid: sum(weight for key, weight in keys.items() if any(_same(key, w) for w in said))
                  for oid, keys in (keywords or self._keywords).items()}
        best = max(scores.values(), default=0)
        winners = [oid for oid, score in scores.items() if score == best]
        return winners[0] if best > 0 and len(winners) == 1 else None


_VERBS_ZH = ("换上", "穿上", "换成")


def _find(said: list, want: list) -> int | None:
    """Where the syllables `want` first occur in `said` (None: nowhere)."""
    for i in range(len(said) - len(want) + 1):
        if said[i:i + len(want)] == want:
            return i
    return None


def _same(key: str, word: str) -> bool:
    return key == word or (len(key) >= 5 and edit_distance(key, word) <= 1) or key == word.rstrip("s")
