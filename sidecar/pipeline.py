"""A small typed-frame pipeline in the pipecat style.

Processors are linked in a chain; each has its own queue and worker task, so a slow one
(whisper, piper) never holds up the ones before it. Frames go downstream (microphone →
speaker) or upstream (playback telling the microphone side that Stella is speaking, which
barge-in needs). System frames skip the queues; an `InterruptionFrame` travelling downstream
makes every processor it reaches cancel the output work in hand and drop queued output
frames — interruption is something that flows through the pipeline, never a flag poked from
outside.

Observers see every frame a processor pushes (the event log, the turn timeline).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Callable, Iterable

from sidecar.clock import Clock
from sidecar.frames import EndFrame, ErrorFrame, Frame, InterruptionFrame, SystemFrame

log = logging.getLogger(__name__)


class Direction(enum.Enum):
    DOWN = "down"
    UP = "up"


Observer = Callable[["Processor", Frame, Direction], None]


class VoiceError(RuntimeError):
    """The session cannot go on (e.g. the microphone is gone); the message says what to do."""


class Processor:
    """One step of the pipeline. Override `process`; call `push` to pass frames on."""

    def __init__(self) -> None:
        self.name = type(self).__name__
        self._next: Processor | None = None
        self._prev: Processor | None = None
        self._pipeline: Pipeline | None = None
        self._queue: asyncio.Queue[tuple[Frame, Direction]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._current: Frame | None = None  # the queued frame being handled now

    # --- what subclasses override -----------------------------------------------------------

    async def process(self, frame: Frame, direction: Direction) -> None:
        """Handle one frame; the default passes it on unchanged."""
        await self.push(frame, direction)

    async def start(self) -> None:
        """Load models, open devices: runs before any frame flows."""

    async def stop(self) -> None:
        """Release what `start` took; runs after the last frame."""

    def pending(self) -> bool:
        """True while the processor holds work not visible in its queue (speech in progress,
        a reply streaming, audio not yet played)."""
        return False

    # --- plumbing ---------------------------------------------------------------------------

    @property
    def pipeline(self) -> Pipeline:
        if self._pipeline is None:
            raise RuntimeError(f"{self.name} is not part of a running pipeline")
        return self._pipeline

    @property
    def clock(self) -> Clock:
        return self.pipeline.clock

    @property
    def busy(self) -> bool:
        return self._current is not None or not self._queue.empty() or self.pending()

    async def push(self, frame: Frame, direction: Direction = Direction.DOWN) -> None:
        """Stamp `frame` (if it has no time yet), show it to the observers, hand it on."""
        if frame.t is None:
            frame.t = self.clock.now()
        self.pipeline.observe(self, frame, direction)
        target = self._next if direction is Direction.DOWN else self._prev
        if target is not None:
            await target.receive(frame, direction)
        elif direction is Direction.DOWN:
            self.pipeline.reached_end(frame)

    async def receive(self, frame: Frame, direction: Direction) -> None:
        if not isinstance(frame, SystemFrame):
            self._queue.put_nowait((frame, direction))
            return
        if isinstance(frame, InterruptionFrame) and direction is Direction.DOWN:
            await self._drop_output()
        await self._handle(frame, direction)

    async def _drop_output(self) -> None:
        """Cancel the output work in hand and forget queued output; the user's frames stay."""
        kept = []
        while not self._queue.empty():
            frame, direction = self._queue.get_nowait()
            if not frame.interruptible or direction is Direction.UP:
                kept.append((frame, direction))
        for item in kept:
            self._queue.put_nowait(item)
        current = self._current
        if current is not None and current.interruptible and self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._current = None
            self._spawn()

    async def _run(self) -> None:
        while True:
            frame, direction = await self._queue.get()
            self._current = frame
            try:
                await self._handle(frame, direction)
            finally:
                self._current = None

    async def _handle(self, frame: Frame, direction: Direction) -> None:
        try:
            await self.process(frame, direction)
        except asyncio.CancelledError:
            raise
        except VoiceError as exc:
            await self.push(ErrorFrame(code="fatal", message=str(exc), fatal=True))
        except Exception as exc:  # a bug or a bad input must not end the whole session
            log.exception("%s failed on %s", self.name, type(frame).__name__)
            await self.push(ErrorFrame(code="internal", message=f"{self.name}: {exc}"))

    def _attach(self, pipeline: Pipeline, prev: Processor | None, nxt: Processor | None) -> None:
        self._pipeline, self._prev, self._next = pipeline, prev, nxt

    def _spawn(self) -> None:
        self._worker = asyncio.create_task(self._run(), name=f"{self.name}-worker")

    async def _cancel(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker


class Source(Processor):
    """The head of a pipeline: `produce` runs in its own task once everything has started."""

    async def produce(self) -> None:
        raise NotImplementedError


class Pipeline:
    """Processors in a chain, sharing one clock; `run()` returns after an EndFrame got through."""

    def __init__(self, processors: Iterable[Processor], clock: Clock, observers: Iterable[Observer] = ()) -> None:
        self.processors = list(processors)
        self.clock = clock
        self.observers = list(observers)
        self._done = asyncio.Event()
        self._fatal: ErrorFrame | None = None
        for i, p in enumerate(self.processors):
            p._attach(self, self.processors[i - 1] if i else None,
                      self.processors[i + 1] if i + 1 < len(self.processors) else None)

    def observe(self, source: Processor, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, ErrorFrame) and frame.fatal:
            self._fatal = frame
            self._done.set()
        for observer in self.observers:
            observer(source, frame, direction)

    def reached_end(self, frame: Frame) -> None:
        if isinstance(frame, EndFrame):
            self._done.set()

    def backlog(self) -> int:
        """Frames waiting in queues, all processors together."""
        return sum(p._queue.qsize() for p in self.processors)

    def under_way(self) -> bool:
        """Something in progress that a late frame would delay: speech being heard, audio playing."""
        return any(p.pending() for p in self.processors)

    def idle(self, *, besides: Processor | None = None) -> bool:
        """Nothing queued, in hand or pending anywhere (but in `besides`)."""
        return not any(p.busy for p in self.processors if p is not besides)

    async def queue(self, frame: Frame) -> None:
        """Inject a frame at the head (text input, push-to-talk, end of session)."""
        await self.processors[0].receive(frame, Direction.DOWN)

    async def run(self) -> None:
        """Start every processor, run until an EndFrame reaches the end, then stop them all.

        Raises VoiceError if a fatal ErrorFrame ended the session.
        """
        started: list[Processor] = []
        producer: asyncio.Task[None] | None = None
        try:
            for p in self.processors:
                await p.start()
                started.append(p)
            for p in self.processors:
                p._spawn()
            head = self.processors[0]
            if isinstance(head, Source):
                producer = asyncio.create_task(self._produce(head), name="source")
            await self._done.wait()
        finally:
            if producer is not None:
                producer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await producer
            for p in self.processors:
                await p._cancel()
            for p in reversed(started):
                try:
                    await p.stop()
                except Exception:
                    log.exception("stopping %s failed", p.name)
        if self._fatal is not None:
            raise VoiceError(self._fatal.message)

    async def _produce(self, source: Source) -> None:
        try:
            await source.produce()
        except VoiceError as exc:
            await source.push(ErrorFrame(code="fatal", message=str(exc), fatal=True))
        except Exception as exc:  # without its source the session cannot go on: end it, loudly
            log.exception("%s failed", source.name)
            await source.push(ErrorFrame(code="fatal", message=f"{source.name} failed: {exc}", fatal=True))
