"""The conversation the sidecar owns: persona, history, and the chat messages of each turn.

The prompt is built for a small model: one persona line, one example exchange in the
persona's voice (a base model copies the shape of what it sees), then as much recent history
as fits `history_tokens`, oldest exchanges dropped first, then the user's words. History lives
behind `History`, so the encrypted store can take it over without touching this module.

A reply the user cut short is kept as far as it was heard and marked with a dash, so the model
knows it was interrupted there rather than believing it said the rest. With an outfit catalogue, the
system line offers the `[outfit: ID]` tag with the catalogue's ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sidecar.config import ChatConfig, PersonaConfig
from sidecar.outfit_catalogue import Outfit
from sidecar.outfit_tags import tag_instruction

CHARS_PER_TOKEN = 4  # a cheap, safe-side estimate; the sidecar has no tokenizer
# After the heard part of a reply the user cut short: the dash transcripts use for speech broken
# off. A bracketed "[interrupted]" was copied by the small model as its whole next reply.
INTERRUPTED = " —"


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


def estimate_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


class Conversation:
    def __init__(self, persona: PersonaConfig, chat: ChatConfig, history: History | None = None,
                 outfits: Sequence[Outfit] = ()) -> None:
        self.persona = persona
        self.chat = chat
        self.history = history if history is not None else MemoryHistory()
        self.outfits = tuple(outfits)

    def system_line(self) -> str:
        p = self.persona
        line = f"You are {p.name}, {p.personality}. {p.speaking_style}"
        return f"{line} {tag_instruction(self.outfits)}" if self.outfits else line

    def messages(self, user_text: str) -> list[dict[str, str]]:
        """The chat messages for answering `user_text` now."""
        budget = self.chat.history_tokens
        kept: list[Exchange] = []
        for exchange in reversed(self.history.recent(64)):
            cost = estimate_tokens(exchange.user) + estimate_tokens(exchange.said)
            if cost > budget:
                break
            budget -= cost
            kept.append(exchange)
        messages = [{"role": "system", "content": self.system_line()},
                    {"role": "user", "content": "Hello, who are you?"},
                    {"role": "assistant", "content": self.persona.greeting}]
        for exchange in reversed(kept):
            messages += [{"role": "user", "content": exchange.user},
                         {"role": "assistant", "content": exchange.said}]
        messages.append({"role": "user", "content": user_text})
        return messages

    def record(self, user_text: str, reply: str, interrupted: bool = False) -> None:
        """Keep what was said (on barge-in: only what the user actually heard, marked)."""
        if reply.strip():
            self.history.append(Exchange(user_text, reply.strip(), interrupted))
