"""Driving a pipeline in tests: a scripted source, a frame collector, a scripted chat link."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from remote_api.client import Done, Token
from sidecar.clock import Clock
from sidecar.frames import Frame
from sidecar.pipeline import Direction, Pipeline, Processor, Source


class Feed(Source):
    """Pushes its script: frames, numbers meaning "wait this many seconds", and conditions
    (callables) meaning "wait until it holds" — a premise that must not depend on the machine's speed."""

    def __init__(self, script: list[Frame | float | Callable[[], bool]]) -> None:
        super().__init__()
        self.script = script

    async def produce(self) -> None:
        self.clock.start()
        for step in self.script:
            if isinstance(step, Frame):
                await self.push(step)
            elif callable(step):
                while not step():
                    await asyncio.sleep(0.005)
            else:
                await asyncio.sleep(step)


class Collect(Processor):
    """Keeps every frame that reaches it, and passes it on."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[Frame] = []

    async def process(self, frame: Frame, direction: Direction) -> None:
        self.frames.append(frame)
        await self.push(frame, direction)


def run(script: list[Frame | float], processors: list[Processor], timeout: float = 30) -> list[Frame]:
    """Run Feed(script) -> processors -> Collect until an EndFrame gets through; what arrived."""
    sink = Collect()
    asyncio.run(asyncio.wait_for(Pipeline([Feed(script), *processors, sink], Clock()).run(), timeout))
    return sink.frames


class ScriptedTurn:
    """A reply that streams fixed text word by word, or as the given tokens (a ChatTurn
    without a server)."""

    def __init__(self, rid: str, text: str | list[str], delay_s: float = 0.01) -> None:
        self.rid = rid
        self.text = text
        self.delay_s = delay_s
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    async def __aiter__(self):
        pieces = self.text if isinstance(self.text, list) else [w + " " for w in self.text.split()]
        for i, piece in enumerate(pieces):
            if self.cancelled:
                break
            await asyncio.sleep(self.delay_s)
            yield Token(self.rid, i, piece)
        yield Done(self.rid, "cancelled" if self.cancelled else "stop", len(pieces), {})


class ScriptedLink:
    """A ChatLink answering with `replies` in turn, keeping the messages of each request."""

    def __init__(self, replies: list[str | list[str]]) -> None:
        self.replies = replies
        self.requests: list[list[dict[str, str]]] = []
        self.warmed: list[list[dict[str, str]]] = []  # the prefixes it was asked to warm
        self.turns: list[ScriptedTurn] = []

    def warm(self, messages) -> None:
        self.warmed.append(messages)

    def chat(self, messages, *, max_tokens, temperature, stop, **samplers) -> ScriptedTurn:
        self.requests.append(messages)
        self.turns.append(ScriptedTurn(f"r{len(self.requests)}",
                                       self.replies[(len(self.requests) - 1) % len(self.replies)]))
        return self.turns[-1]
