"""The model's outfit tags: `[outfit: ID]` in a reply, offered in the system line
(`tag_instruction`), taken out of the text as it streams, even split across tokens (`TagFilter`),
and turned into outfit changes for catalogue ids only by the pipeline processor `OutfitTags`.

A reply whose only tags name outfits the catalogue lacks ("[outfit: space_suit]") is not a silent
nothing: the model is asked again once (`ask_again`: the ids it may use, nothing else to say), and
if it still names none, the closest outfit is worn (`closest`) and she says so (`fallback_note`). A
reply to a dressing request that names an outfit in words, with no tag, wears it. `settle` decides,
given a way to ask the model; `sidecar.reply` and the companion bench both run it."""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from sidecar.frames import Frame, InterruptionFrame, OutfitFrame, ReplyDoneFrame, TokenFrame
from sidecar.intents import Intents
from sidecar.outfit_catalogue import Outfit
from sidecar.pipeline import Direction, Processor

log = logging.getLogger(__name__)

OUTFIT_TAG = re.compile(r"\[\s*outfit\s*[:=]\s*([^\]\s]*)\s*\]", re.IGNORECASE)
_TAG_PREFIX = re.compile(r"\[\s*(?:o(?:u(?:t(?:f(?:i(?:t(?:\s*[:=]?[^\]]*)?)?)?)?)?)?)?$", re.IGNORECASE)
MAX_TAG = 48


def strip_tags(text: str) -> str:
    """`text` without [outfit: ...] tags (what is said aloud and kept in the history)."""
    return " ".join(OUTFIT_TAG.sub(" ", text).split()) if OUTFIT_TAG.search(text) else text


def tag_instruction(outfits: Sequence[Outfit], language: str = "en") -> str:
    """The system line's sentences that offer the outfit tag, with the ids it may use. A small model told
    "to change your outfit, write [outfit: ID]" handed the sentence to the user ("To change your outfit,
    write [outfit: school]"): the tag is said to be hers. (An example reply, "Sure! [outfit: hoodie]", was
    copied word for word, with made-up tags.) In Mandarin ("zh") the same, each outfit by its Chinese name."""
    if language == "zh":
        return ("你可以换自己的衣服：用户请你穿上或换上某套衣服，或者为某件事打扮时，说你换上了哪一套，并在回答最后写上"
                "标签 [outfit: ID]，ID 只能是其中之一：" + "、".join(
                    f"{o.id}（{o.chinese[0] if o.chinese else o.name}）" for o in outfits) + "。")
    return ("You can change your own clothes: when the user asks you to wear or show an outfit, or to dress for "
            "something, say which outfit you put on and end your reply with the tag [outfit: ID], ID exactly one "
            "of: " + ", ".join(f"{o.id} ({o.name.lower()})" for o in outfits) + ".")


@dataclass(frozen=True)
class TagCheck:
    """What a finished reply's tags ask of the catalogue: the outfit it named (its last valid tag), or,
    when it named none the catalogue has, the first id it tried."""

    wear: str | None = None
    unknown: str | None = None


def check_tags(reply: str, outfits: Sequence[Outfit]) -> TagCheck:
    ids = OUTFIT_TAG.findall(reply)
    known = [i for i in ids if i in {o.id for o in outfits}]
    if known:
        return TagCheck(wear=known[-1])
    return TagCheck(unknown=ids[0]) if ids else TagCheck()


def ask_again(messages: list[dict[str, str]], reply: str, unknown: str,
              outfits: Sequence[Outfit]) -> list[dict[str, str]]:
    """The one follow-up request for a reply that named an outfit the catalogue lacks."""
    return [*messages, {"role": "assistant", "content": reply},
            {"role": "user", "content": f'(There is no outfit "{unknown}". Answer with only the tag '
                                        f'[outfit: ID], ID exactly one of: {", ".join(o.id for o in outfits)}.)'}]


def closest(unknown: str, outfits: Sequence[Outfit]) -> Outfit:
    """The catalogue outfit nearest to an id the model made up: by shared words of its id, name and
    occasions ("space_suit", "astronaut_outfit" → the space suit), else by spelling."""
    said = set(re.findall(r"[a-z]+", unknown.lower()))

    def words_of(o: Outfit) -> set[str]:
        return set(re.findall(r"[a-z]+", f"{o.id} {o.name}".lower().replace("_", " "))) | set(o.occasions)

    def spelling(o: Outfit) -> float:
        return max(difflib.SequenceMatcher(None, unknown.lower(), text.lower()).ratio() for text in (o.id, o.name))

    return max(outfits, key=lambda o: (len(said & words_of(o)), spelling(o)))


# How the one follow-up is asked for: a tag and nothing else, the same every time.
ASK_AGAIN = {"max_tokens": 16, "temperature": 0.0, "stop": ["\n"]}


@dataclass(frozen=True)
class Settled:
    """The outfit a finished reply leaves her in, and how that was decided."""

    wear: str | None = None
    via: str = ""  # "tag" (worn as it streamed, by `OutfitTags`), "named", "asked again" or "closest"
    note: str = ""  # what she says about it (only "closest")


async def settle(reply: str, request: str, messages: list[dict[str, str]], intents: Intents,
                 ask: Callable[[list[dict[str, str]]], Awaitable[str]]) -> Settled:
    """The outfit `reply` (to the user's `request`, asked with `messages`) should leave her in; `ask` sends one
    more request (`ASK_AGAIN`) and returns the model's answer."""
    outfits = intents.outfits
    check = check_tags(reply, outfits)
    if check.wear is not None:
        return Settled(check.wear, "tag")
    if check.unknown is None:
        named = intents.named_in_reply(request, strip_tags(reply))
        return Settled(named, "named") if named else Settled()
    wear = check_tags(await ask(ask_again(messages, reply, check.unknown, outfits)), outfits).wear
    if wear is not None:
        return Settled(wear, "asked again")
    nearest = closest(check.unknown, outfits)
    return Settled(nearest.id, "closest", fallback_note(check.unknown, nearest))


def fallback_note(unknown: str, outfit: Outfit) -> str:
    """What she says when she wears the closest outfit instead of the one she named."""
    asked = " ".join(re.findall(r"[A-Za-z]+", unknown)).lower() or "that"
    article = "an" if asked[0] in "aeiou" else "a"
    return f" I don't have {article} {asked}, so I'm wearing my {outfit.name.lower()} instead."


class TagFilter:
    """One reply's text in pieces; the text without outfit tags, and the tags' ids, out."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> tuple[str, list[str]]:
        out, ids = [], []
        buf = self._held + text
        self._held = ""
        while buf:
            start = buf.find("[")
            if start < 0:
                out.append(buf)
                break
            out.append(buf[:start])
            buf = buf[start:]
            end = buf.find("]")
            if end < 0:
                if _TAG_PREFIX.match(buf) and len(buf) <= MAX_TAG:
                    self._held = buf  # may be the start of a tag: wait for more
                else:
                    out.append(buf)
                break
            tag = OUTFIT_TAG.fullmatch(buf[:end + 1])
            if tag:
                ids.append(tag.group(1))
            else:
                out.append(buf[:end + 1])
            buf = buf[end + 1:]
        return "".join(out), ids

    def flush(self) -> str:
        """The end of the reply: an unfinished tag is dropped, anything else kept."""
        held, self._held = self._held, ""
        return "" if _TAG_PREFIX.match(held) and held.lower().lstrip("[ ").startswith("outfit") else held


class OutfitTags(Processor):
    """Between the reply and the sentences: strips outfit tags, passes on catalogue ones."""

    def __init__(self, outfits: Sequence[Outfit]) -> None:
        super().__init__()
        self.ids = {o.id for o in outfits}
        self._filter = TagFilter()
        self._turn = 0

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, TokenFrame) and direction is Direction.DOWN:
            if frame.turn != self._turn:
                self._turn, self._filter = frame.turn, TagFilter()
            text, ids = self._filter.feed(frame.text)
            for outfit in ids:
                await self._wear(outfit)
            if text:  # the same frame, so the log keeps one line per token (as the model wrote it)
                frame.text = text
                await self.push(frame, direction)
            return
        if isinstance(frame, ReplyDoneFrame) and frame.turn == self._turn:
            rest = self._filter.flush()
            if rest:
                await self.push(TokenFrame(turn=frame.turn, index=-1, text=rest))
        elif isinstance(frame, InterruptionFrame):
            self._filter = TagFilter()
        await self.push(frame, direction)

    async def _wear(self, outfit: str) -> None:
        if outfit in self.ids:
            await self.push(OutfitFrame(id=outfit, source="assistant"))
        else:
            log.info("the reply asked for outfit %r, which is not in the catalogue (%s): settled when it ends", outfit,
                     ", ".join(sorted(self.ids)))
