"""The microphone's wake-ups: every block while something is under way, a few at a time while nobody speaks;
none once the engine's loop is gone."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import numpy as np

from sidecar.clock import Clock
from sidecar.frames import AudioFrame, EndFrame
from sidecar.pipeline import Pipeline, Processor
from sidecar.voice.capture import DeviceSource, WakeUps


class Holding(Processor):
    """A processor holding work outside its queue (speech being heard, audio playing) while `held`."""

    def __init__(self) -> None:
        super().__init__()
        self.held = False

    def pending(self) -> bool:
        return self.held


def wakes(wake_ups: WakeUps, blocks: int) -> list[bool]:
    return [wake_ups.block() for _ in range(blocks)]


def test_while_nothing_is_under_way_the_blocks_go_down_in_threes():
    wake_ups = WakeUps(idle_every=3)
    wake_ups.under_way = False
    assert wakes(wake_ups, 7) == [False, False, True, False, False, True, False]


def test_once_something_is_under_way_every_block_wakes_the_loop_the_waiting_ones_with_it():
    wake_ups = WakeUps(idle_every=3)
    wake_ups.under_way = False
    assert wakes(wake_ups, 2) == [False, False]
    wake_ups.under_way = True  # the user started speaking: the next block goes down at once, with the two before
    assert wakes(wake_ups, 3) == [True, True, True]
    wake_ups.under_way = False  # quiet again: the count starts afresh
    assert wakes(wake_ups, 3) == [False, False, True]


def test_a_new_microphone_wakes_the_loop_at_every_block_until_the_pipeline_has_been_asked():
    assert wakes(WakeUps(idle_every=3), 2) == [True, True]


def test_the_pipeline_is_under_way_while_any_processor_holds_speech_or_audio():
    first, second = Holding(), Holding()
    pipeline = Pipeline([first, second], Clock())
    assert not pipeline.under_way()
    second.held = True
    assert pipeline.under_way()
    second.held = False
    first.held = True
    assert pipeline.under_way()


def test_a_stream_that_outlives_the_engines_loop_ends_quietly():
    """PortAudio calls back from its own thread after the engine's event loop has closed (the engine exiting
    with the microphone open): nothing is left to wake, and nothing is raised into PortAudio's thread."""
    source = DeviceSource("default", 32)
    loop = asyncio.new_event_loop()
    source._loop, source._arrived = loop, asyncio.Event()
    loop.close()
    source._finished()  # the stream ending
    source.wake_ups.under_way = True
    source._callback(np.zeros((512, 1), np.int16), 512, None, SimpleNamespace(input_overflow=False))  # a block


class Talking(DeviceSource):
    """A DeviceSource whose "device" is a thread writing a 32 ms block into the ring every 32 ms,
    as PortAudio's callback does."""

    async def start(self) -> None:
        self._loop, self._arrived = asyncio.get_running_loop(), asyncio.Event()
        self.device_name = "test"
        self._thread = threading.Thread(target=self._talk, daemon=True)
        self._thread.start()

    def _talk(self) -> None:
        while not self._ended:
            self._callback(np.zeros((self.block, 1), np.int16), self.block, None, SimpleNamespace(input_overflow=False))
            time.sleep(self.block / 16000)

    async def stop(self) -> None:
        self._ended = True
        self._thread.join()


class Busy(Processor):
    """Blocks the engine's event loop for `stall_s` at the first audio block (a loaded machine's
    model load or a long GIL hold), then ends the session after `blocks` more."""

    def __init__(self, stall_s: float, blocks: int) -> None:
        super().__init__()
        self.stall_s, self.blocks, self.seen = stall_s, blocks, 0

    async def process(self, frame, direction) -> None:  # noqa: ANN001
        if isinstance(frame, AudioFrame):
            if self.seen == 0:
                time.sleep(self.stall_s)
            self.seen += 1
            if self.seen == self.blocks:
                await self.push(EndFrame())
        await self.push(frame, direction)


def test_a_stalled_engine_is_not_taken_for_a_microphone_that_stopped():
    """The stall timer can only fire once the engine's loop runs again, and then the blocks the
    microphone delivered meanwhile are waiting: that is a late engine, not a lost microphone."""
    busy = Busy(stall_s=0.6, blocks=40)
    asyncio.run(asyncio.wait_for(Pipeline([Talking("default", 32, stall_s=0.2), busy], Clock()).run(), 10))
    assert busy.seen >= 40, "the session ended before the blocks after the stall came"
