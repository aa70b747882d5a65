"""The conversation the sidecar owns: persona, history, and the chat messages of each turn.

The prompt is built for a small model: one persona line, one example exchange in the
persona's voice (a base model copies the shape of what it sees), then recent history within
`history_tokens`, then the user's words. History lives behind `History`, so the encrypted store
can take it over without touching this module.

Everything before the user's words is a prefix llama-server keeps cached between turns, so it
must stay byte-stable: history is not trimmed by one exchange per turn (which rewrites the whole
prefix after the persona every turn once the budget is full, so every turn re-evaluates it cold)
but from an anchor exchange that stays put until the budget overflows, then jumps forward to
half the budget at once (`keep`). `prefix()` is that prefix, for warming the cache.

A reply the user cut short is kept as far as it was heard and marked with a dash, so the model
knows it was interrupted there rather than believing it said the rest. With an outfit catalogue, the
system line offers the `[outfit: ID]` tag with the catalogue's ids.

In Mandarin (`language` "zh", voice.language) the system line, the example exchange and the default
persona are Chinese (her name 小星): a small model answers in the language of its prompt.

The user's name, once they say it ("My name is Arjun", "I'm Priya", "我叫小明"), goes in the system
line ("The user's name is Arjun."): it stays when the exchange that said it leaves the history, and
a small model told whose name it is stops answering "I'm Arjun" (`user_name`).

With a `Memory` (the encrypted store's facts about the user, sidecar.engine.stored), what she
knows of the user comes in two system messages after the history, never in the system line: a
fact learned there would change the prefix's first message and make llama-server evaluate the whole
prefix again. The newest facts within `chat.memory_tokens` end the prefix, so they are evaluated
when the prefix is warmed after each exchange, before the user speaks again; the older facts this
turn's words bring to mind (`Memory.recall`, within `chat.recall_tokens`) come just before the
user's words, the only memory tokens evaluated after the user has spoken.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sidecar.config import ChatConfig, PersonaConfig
from sidecar.outfit_catalogue import Outfit
from sidecar.outfit_tags import tag_instruction

# The sidecar has no tokenizer, so a message's tokens are estimated: its text at 3 characters a
# token plus what the chat template wraps it in. Measured with gemma3's tokenizer and the vicuna
# template on a spoken conversation: the text took 1.33 times len/4, and each exchange cost ~9
# tokens of template on top, so `len // 4 + 1` counted half of what the prompt really grew by and
# twenty short exchanges overflowed a 1024-token slot (llama-server refused every turn after).
CHARS_PER_TOKEN = 3
MESSAGE_TOKENS = 7  # the template's role markers and separators around one message, with a margin
# After the heard part of a reply the user cut short: the dash transcripts use for speech broken
# off. A bracketed "[interrupted]" was copied by the small model as its whole next reply.
INTERRUPTED = " —"
# The memory messages' openings: facts the user told her, true now, to answer from as they are. Told only
# "What you know about the user:", the small model twice answered a question about them with a question.
KNOWN = ("Facts the user told you earlier (they are true now, and newer than anything said before; when the user "
         "asks about them, answer from them directly, do not ask back):")
RECALLED = "More facts the user told you earlier (answer from them directly):"
# "My name is Arjun", "I'm Priya", "call me Jo", "我叫小明": a capitalised word, as whisper and people write
# names; the words people capitalise after "I'm" at the start of a sentence are not names.
_NAMED = re.compile(r"\b(?:[Mm]y name is|[Mm]y name's|I'm|I am|[Cc]all me)\s+([A-Z][a-z]{1,20})\b"
                    r"|(?:我叫|我的名字是|我的名字叫)([\u4e00-\u9fff]{1,4}?)(?:[，。！？,.!?\s]|$)")
_NOT_NAMES = {"Sorry", "So", "Not", "Just", "Fine", "Good", "Great", "Okay", "Ok", "Happy", "Sad", "Tired", "Here",
              "Back", "Home", "Ready", "Going", "Sure", "Glad", "Excited", "Nervous", "Feeling", "Very", "Really",
              "Still", "Also", "Always", "Bored", "Hungry", "Busy", "Done", "Alone", "Lonely", "Stella"}


def user_name(text: str) -> str | None:
    """The name the user gives themselves in `text`, if any."""
    for m in _NAMED.finditer(text):
        name = m.group(1) or m.group(2)
        if name and name not in _NOT_NAMES:
            return name
    return None


@dataclass(frozen=True)
class Exchange:
    user: str
    assistant: str  # as heard: up to the interruption if `interrupted`
    interrupted: bool = False

    @property
    def said(self) -> str:
        """The assistant's turn as the model sees it next time."""
        return self.assistant + INTERRUPTED if self.interrupted else self.assistant


class History(Protocol):
    def recent(self, limit: int) -> list[Exchange]:
        """The last `limit` exchanges, oldest first."""
        ...

    def append(self, exchange: Exchange) -> None: ...


class MemoryHistory:
    """History kept in memory for the session."""

    def __init__(self) -> None:
        self._exchanges: list[Exchange] = []

    def recent(self, limit: int) -> list[Exchange]:
        return self._exchanges[-limit:] if limit > 0 else []

    def append(self, exchange: Exchange) -> None:
        self._exchanges.append(exchange)


class Memory(Protocol):
    """What she remembers of the user beyond the history (sidecar.engine.stored.StoreMemory)."""

    def known(self, budget_tokens: int) -> list[str]:
        """The newest facts within the budget, as sentences, oldest first: the prefix's last message."""
        ...

    def recall(self, text: str, budget_tokens: int, known: list[str]) -> list[str]:
        """The facts `text` brings to mind that are not in `known`, within the budget."""
        ...

    def forget_last(self) -> int:
        """Forget the last exchange and what was learned from it ("forget that"); how many facts."""
        ...


def estimate_tokens(text: str) -> int:
    """The prompt tokens one message holding `text` costs, on the safe side."""
    return len(text) // CHARS_PER_TOKEN + MESSAGE_TOKENS


class Conversation:
    def __init__(self, persona: PersonaConfig, chat: ChatConfig, history: History | None = None,
                 outfits: Sequence[Outfit] = (), language: str = "en") -> None:
        self.base_persona = persona  # as configured; `persona` is it in the conversation's language
        self.language = language
        self.chat = chat
        self.history = history if history is not None else MemoryHistory()
        self.memory: Memory | None = None  # the store's, once it is open (`remember_in`)
        self.outfits = tuple(outfits)
        self._anchor: Exchange | None = None  # the oldest exchange in the prompt, kept until it must go
        self.user_name = self._named_in(self.history)  # as the user last gave it (`user_name`)

    @property
    def persona(self) -> PersonaConfig:
        return self.base_persona.spoken_in(self.language)

    def remember_in(self, history: History, memory: Memory | None = None) -> None:
        """Keep the history there from now on (the encrypted store, once it is open), and remember with `memory`."""
        self.history = history
        self.memory = memory
        self.user_name = self._named_in(history) or self.user_name

    def forget_last(self) -> int:
        """"Forget that": the last exchange and the facts learned from it are forgotten; how many facts."""
        if self.memory is None:
            return 0
        forgotten = self.memory.forget_last()
        self.forgotten()
        return forgotten

    def forgotten(self) -> None:
        """Facts and exchanges were forgotten (here, in the window or by `stella memory`): what was said then
        is no longer known."""
        self.user_name = self._named_in(self.history)

    @staticmethod
    def _named_in(history: History) -> str | None:
        """The name the user last gave in the stored history (it outlives a restart)."""
        names = [n for e in history.recent(256) if (n := user_name(e.user))]
        return names[-1] if names else None

    def system_line(self) -> str:
        p = self.persona
        if self.language == "zh":
            line = (f"你是{p.name}（Stella），{p.personality}。你的名字永远是{p.name}；用户是另一个人，"
                    f"用户说出自己的名字时，那是用户的名字，不是你的。{p.speaking_style}请用普通话回答。")
            if self.user_name:
                line += f"用户的名字是{self.user_name}。"
            return f"{line} {tag_instruction(self.outfits, 'zh')}" if self.outfits else line
        # small models take the user's name for their own ("Hi, I'm Arjun" → "I'm Arjun") unless told apart
        line = (f"You are {p.name}, {p.personality}. Your name is always {p.name}; the user is someone else, and "
                f"when they tell you their name, it is theirs, not yours. {p.speaking_style}")
        if self.user_name:
            line += f" The user's name is {self.user_name}."
        return f"{line} {tag_instruction(self.outfits)}" if self.outfits else line

    def messages(self, user_text: str) -> list[dict[str, str]]:
        """The chat messages for answering `user_text` now."""
        prefix = self.prefix()
        recalled = ([] if self.memory is None or self.chat.recall_tokens == 0 else
                    self.memory.recall(user_text, self.chat.recall_tokens, self._known()))
        if recalled:
            prefix.append({"role": "system", "content": f"{RECALLED} {' '.join(recalled)}"})
        return [*prefix, {"role": "user", "content": user_text}]

    def _known(self) -> list[str]:
        if self.memory is None or self.chat.memory_tokens == 0:
            return []
        return self.memory.known(self.chat.memory_tokens)

    def prefix(self) -> list[dict[str, str]]:
        """Persona, example, kept history and what she knows of the user: what every next turn starts with."""
        messages = [{"role": "system", "content": self.system_line()},
                    {"role": "user", "content": "你好，你是谁？" if self.language == "zh" else "Hello, who are you?"},
                    {"role": "assistant", "content": self.persona.greeting}]
        for exchange in self.keep(self.history.recent(64)):
            messages += [{"role": "user", "content": exchange.user},
                         {"role": "assistant", "content": exchange.said}]
        if known := self._known():
            messages.append({"role": "system", "content": f"{KNOWN} {' '.join(known)}"})
        return messages

    def keep(self, recent: list[Exchange]) -> list[Exchange]:
        """The history to show: from the anchor while it fits the budget; when it no longer does,
        the newest exchanges within half the budget, the oldest of them the new anchor."""
        costs = [estimate_tokens(e.user) + estimate_tokens(e.said) for e in recent]
        start = _last_index(recent, self._anchor)
        if start is None or sum(costs[start:]) > self.chat.history_tokens:
            start, budget = len(recent), self.chat.history_tokens // 2
            while start > 0 and costs[start - 1] <= budget:
                budget -= costs[start - 1]
                start -= 1
            self._anchor = recent[start] if start < len(recent) else None
        return recent[start:]

    def record(self, user_text: str, reply: str, interrupted: bool = False) -> None:
        """Keep what was said (on barge-in: only what the user actually heard, marked)."""
        self.user_name = user_name(user_text) or self.user_name
        if reply.strip():
            self.history.append(Exchange(user_text, reply.strip(), interrupted))


def _last_index(items: list[Exchange], item: Exchange | None) -> int | None:
    """Where `item` last occurs in `items` (None if absent): the anchor, found again by value."""
    for i in range(len(items) - 1, -1, -1):
        if items[i] == item:
            return i
    return None
