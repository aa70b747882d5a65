"""The frame pipeline: order, observers, interruption as a frame, end and errors."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from sidecar.clock import Clock
from sidecar.events import EventLog
from sidecar.frames import (
    AudioFrame,
    EndFrame,
    ErrorFrame,
    Frame,
    InterruptionFrame,
    MouthFrame,
    SentenceFrame,
    TokenFrame,
    TranscriptFrame,
    UserTurnFrame,
    UtteranceFrame,
)
from sidecar.pipeline import Direction, Pipeline, Processor, Source, VoiceError

from .harness import Collect, Feed, run


class Slow(Processor):
    """Takes a while over each token, like TTS over a sentence."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[Frame] = []
        self.finished: list[Frame] = []

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, TokenFrame | UtteranceFrame):
            self.started.append(frame)
            await asyncio.sleep(0.2)
            self.finished.append(frame)
        await self.push(frame, direction)


class Broken(Processor):
    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, TokenFrame) and frame.text == "boom":
            raise RuntimeError("boom")
        await self.push(frame, direction)


def utterance() -> UtteranceFrame:
    return UtteranceFrame(audio=np.zeros(160, np.float32), start=0.0, end=0.01)


def test_frames_flow_in_order_and_the_log_has_each_event_once(tmp_path):
    log = EventLog(tmp_path / "events.jsonl")
    frames = [TokenFrame(turn=1, index=i, text=f"w{i}") for i in range(5)]
    sink, last = Collect(), Collect()
    asyncio.run(asyncio.wait_for(Pipeline([Feed([*frames, EndFrame()]), sink, last], Clock(), [log]).run(), 5))
    log.close()
    assert [f.text for f in last.frames if isinstance(f, TokenFrame)] == [f"w{i}" for i in range(5)]
    lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [x["type"] for x in lines] == ["token"] * 5 + ["end"], "one line per event, however many hops"
    assert all(isinstance(x["t"], float) and x["t"] >= 0 for x in lines)
    assert lines[0] == {"type": "token", "t": lines[0]["t"], "turn": 1, "index": 0, "text": "w0"}


def test_the_process_log_gets_turn_events_not_the_mouth_moving_thirty_times_a_second(tmp_path, caplog):
    log = EventLog(tmp_path / "events.jsonl")
    frames = [MouthFrame(level=k / 50, t=k * 0.02) for k in range(50)]
    caplog.set_level("INFO", logger="sidecar.events")
    asyncio.run(asyncio.wait_for(Pipeline([Feed([*frames, EndFrame()]), Collect()], Clock(), [log]).run(), 5))
    log.close()
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert len(lines) == 51, "the JSONL file keeps every mouth frame"
    logged = [json.loads(r.getMessage().removeprefix("event "))["type"] for r in caplog.records]
    assert logged == ["end"], caplog.text


def test_an_interruption_drops_queued_output_but_never_what_the_user_said():
    slow = Slow()
    seen = run([*[TokenFrame(turn=1, index=i, text=f"w{i}") for i in range(3)], utterance(),
                TranscriptFrame(text="hi", asr_ms=1.0, utterance=utterance()), 0.1,  # the first token is in hand
                InterruptionFrame(reason="user spoke"), SentenceFrame(turn=2, index=0, text="after"), EndFrame()],
               [slow])
    assert [f.text for f in slow.started if isinstance(f, TokenFrame)] == ["w0"], "queued tokens must be dropped"
    assert not [f for f in slow.finished if isinstance(f, TokenFrame)], "the token in hand must be cancelled"
    # the interruption overtook the queue; the user's utterance and transcript survived it, in order
    assert [type(f).__name__ for f in seen] == ["InterruptionFrame", "UtteranceFrame", "TranscriptFrame",
                                                 "SentenceFrame", "EndFrame"]


def test_user_work_in_hand_is_not_cancelled_by_an_interruption():
    slow = Slow()
    run([utterance(), 0.05, InterruptionFrame(reason="stop"), EndFrame()], [slow])
    assert len(slow.finished) == 1


def test_a_failing_processor_reports_an_error_and_the_session_goes_on():
    seen = run([TokenFrame(turn=1, index=0, text="boom"), TokenFrame(turn=1, index=1, text="fine"), EndFrame()],
               [Broken()])
    errors = [f for f in seen if isinstance(f, ErrorFrame)]
    assert errors and "boom" in errors[0].message and not errors[0].fatal
    assert [f.text for f in seen if isinstance(f, TokenFrame)] == ["fine"]


def test_a_fatal_error_ends_the_session_with_its_message():
    class Dies(Source):
        async def produce(self) -> None:
            self.clock.start()
            raise VoiceError("the microphone went away")

    with pytest.raises(VoiceError, match="microphone went away"):
        asyncio.run(asyncio.wait_for(Pipeline([Dies(), Collect()], Clock()).run(), 5))


def test_frames_are_stamped_on_the_session_clock():
    audio, turn = run([0.1, AudioFrame(pcm=np.zeros(320, np.int16), rate=16000, t=0.02),
                       UserTurnFrame(turn=1, text="hi", source="text"), EndFrame()], [])[:2]
    assert audio.t == 0.02, "a frame that carries its own time keeps it"
    assert 0.09 <= turn.t <= 0.5, "a frame without one is stamped when first pushed"
