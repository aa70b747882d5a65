"""The microphone's wake-ups: every block while something is under way, a few at a time while nobody speaks;
none once the engine's loop is gone."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np

from sidecar.clock import Clock
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
