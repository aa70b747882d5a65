"""Small processors for driving a pipeline in tests: a scripted source and a frame collector."""

from __future__ import annotations

import asyncio

from sidecar.clock import Clock
from sidecar.frames import Frame
from sidecar.pipeline import Direction, Pipeline, Processor, Source


class Feed(Source):
    """Pushes its script: frames, and numbers meaning "wait this many seconds"."""

    def __init__(self, script: list[Frame | float]) -> None:
        super().__init__()
        self.script = script

    async def produce(self) -> None:
        self.clock.start()
        for step in self.script:
            if isinstance(step, Frame):
                await self.push(step)
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
