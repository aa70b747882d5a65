"""Decoders of llama-server's two streaming APIs: each turns one SSE event's data into reply items
(`TokenDelta`, `Finished`), checking its JSON shape through the `Upstream` that reads it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from remote_api.upstream_types import Finished, TokenDelta, UpstreamError, snippet

if TYPE_CHECKING:
    from remote_api.upstream import Upstream


class CompletionEvents:
    """Turns `/completion` events (`content`, then a last one with `stop: true`) into items."""

    _REASONS = {"eos": "stop", "word": "stop", "limit": "length"}

    def __init__(self, upstream: Upstream) -> None:
        self._up = upstream

    def feed(self, data: str) -> Iterator[TokenDelta | Finished]:
        obj = self._up._event_json(data)
        content = obj.get("content", "")
        if not isinstance(content, str):
            raise self._up.bad_answer(f"an event whose 'content' is not text: {snippet(data)}")
        if content:
            yield TokenDelta(content)
        if obj.get("stop") is True:
            stop_type = str(obj.get("stop_type") or "eos")
            tokens = obj.get("tokens_predicted")
            timings = obj.get("timings")
            yield Finished(
                self._REASONS.get(stop_type, stop_type),
                tokens if isinstance(tokens, int) else 0,
                timings if isinstance(timings, dict) else {},
            )

    def at_end(self) -> Finished | None:
        """/completion has no terminator besides its final event: ending without it is a break."""
        return None


class ChatEvents:
    """Turns `chat.completion.chunk` events, the usage event and `[DONE]` into items."""

    def __init__(self, upstream: Upstream) -> None:
        self._up = upstream
        self._reason: str | None = None
        self._deltas = 0
        self._tokens: int | None = None
        self._timings: dict = {}

    def feed(self, data: str) -> Iterator[TokenDelta | Finished]:
        if data == "[DONE]":
            finished = self.at_end()
            if finished is None:
                raise UpstreamError(
                    "broken_stream",
                    f"llama-server at {self._up.base_url} ended the reply ([DONE]) without saying why "
                    "it stopped, so it may be incomplete. Try again.",
                )
            yield finished
            return
        obj = self._up._event_json(data)
        choices = obj.get("choices")
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise self._up.bad_answer(f"an event without a 'choices' list: {snippet(data)}")
        for choice in choices:
            delta = choice.get("delta") or {}
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str) and content:
                self._deltas += 1
                yield TokenDelta(content)
            if choice.get("finish_reason"):
                self._reason = str(choice["finish_reason"])
        usage = obj.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self._tokens = usage["completion_tokens"]
        if isinstance(obj.get("timings"), dict):
            self._timings = obj["timings"]

    def at_end(self) -> Finished | None:
        """Finished once a finish_reason has been seen (tolerating a missing `[DONE]`)."""
        if self._reason is None:
            return None
        tokens = self._tokens
        if tokens is None:
            predicted = self._timings.get("predicted_n")
            tokens = predicted if isinstance(predicted, int) else self._deltas
        return Finished(self._reason, tokens, self._timings)
