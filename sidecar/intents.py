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
  ("请换上宇航服"), not after 不/别/没;
* the time, the date, the day of the week — the whole utterance asks for it ("what's the time",
  "tell me the date", "what day is it today"), answered from the injected clock in the user's
  time zone (the computer's own, `TZ` honoured). A question that merely contains the words
  ("what time did you wake up?", "what day do you like best?") goes to the model;
* forget — "forget that", "忘掉这个": she forgets the last exchange and the facts learned from it
  (`Forget`, acted on by sidecar.reply; docs/memory.md).

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
        return self._clock(said) or self._dressing(" ".join(said)) or self._outfit_zh(text)

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
            return None
        named = self._named_zh(m.group("rest"))
        return Wear(named.pop()) if len(named) == 1 else None

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


def _same(key: str, word: str) -> bool:
    return key == word or (len(key) >= 5 and edit_distance(key, word) <= 1) or key == word.rstrip("s")
