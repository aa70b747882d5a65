"""What the gateway's llama-server client takes and gives: the request, the reply's items, its
health, the `UpstreamError` every failure becomes; and how error messages quote what they saw
(`snippet`, `describe_exception`, shared by the upstream modules)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ErrorCode = Literal[
    "context_exceeded", "loading", "unreachable", "broken_stream", "stalled", "bad_response",
    "no_healthy_upstream", "unauthorized",
]
SNIPPET_CHARS = 120  # how much of a bad answer to quote in a message

# What a person should do about each upstream failure (the message says what happened).
ACTIONS = {
    "context_exceeded": "Start a new conversation or shorten the history, then ask again.",
    "loading": "Wait a few seconds for the model to finish loading, then ask again.",
    "unreachable": "Check that llama-server is running and that the gateway's upstream URL is right.",
    "broken_stream": "Ask again; if it keeps happening, check llama-server's log.",
    "stalled": "Ask again; if it keeps happening, llama-server may be overloaded: restart it.",
    "bad_response": "Check that the gateway's upstream URL points to llama.cpp's llama-server.",
    "unauthorized": "The server's operator must give the gateway that llama-server's API key.",
    "no_healthy_upstream": "Start llama-server (or wait for it to load), then ask again.",
}


@dataclass(frozen=True)
class ChatRequest:
    """One turn to generate: the full chat (the sidecar owns the conversation) and sampling."""

    messages: list[dict[str, str]]
    max_tokens: int = 128
    temperature: float = 0.7
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    # Loop prevention (llama-server's samplers): a penalty on recent tokens, and DRY, which stops the
    # model repeating a run of tokens it already wrote ("I'm a cat. I'm a friendly cat. I'm a cat…").
    # None leaves the server's own setting.
    repeat_penalty: float | None = None
    dry_multiplier: float | None = None
    slot: int | None = None  # llama-server's id_slot (remote_api.slots); None lets it choose
    warm: bool = False  # evaluate the prompt into the slot's cache, generate nothing (remote_api.slots)

    def __post_init__(self) -> None:
        if not self.messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in self.messages
        ):
            raise ValueError("a chat request needs messages, each with 'role' and 'content' strings")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.slot is not None and self.slot < 0:
            raise ValueError(f"slot must be a slot id (0 or more) or None, got {self.slot}")
        if not 0.0 <= self.temperature <= 5.0:
            raise ValueError(f"temperature must be between 0 and 5, got {self.temperature}")
        if self.repeat_penalty is not None and not 1.0 <= self.repeat_penalty <= 2.0:
            raise ValueError(f"repeat_penalty must be between 1 and 2, got {self.repeat_penalty}")
        if self.dry_multiplier is not None and not 0.0 <= self.dry_multiplier <= 5.0:
            raise ValueError(f"dry_multiplier must be between 0 and 5, got {self.dry_multiplier}")
        if not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError("stop strings must be non-empty strings")


@dataclass(frozen=True)
class TokenDelta:
    """A piece of the reply, relayed the moment llama-server sends it."""

    text: str


@dataclass(frozen=True)
class Finished:
    """The reply is complete.

    `reason` is "stop" (end of text or a stop string) or "length" (max_tokens reached), whichever
    API produced it; `tokens` counts generated tokens; `timings` is llama-server's own dict
    (prompt_n, prompt_ms, predicted_n, predicted_ms, ...), empty if it sent none.
    """

    reason: str
    tokens: int
    timings: dict


class UpstreamError(Exception):
    """A reply could not be produced; `code` is machine-readable, `message` is for people."""

    def __init__(self, code: ErrorCode, message: str, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Health:
    """What `GET /health` and `GET /slots` said; `idle_slots` is None when /slots is disabled."""

    ok: bool
    loading: bool
    idle_slots: int | None
    detail: str
    slots: int | None = None  # how many slots it has (None when /slots is disabled)


def snippet(raw: bytes | str) -> str:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    text = " ".join(text.split())
    return repr(text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else ""))


def describe_exception(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
