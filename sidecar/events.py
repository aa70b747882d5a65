"""The session's event log (JSONL) and the per-turn timeline, both pipeline observers.

Every line has `type` and `t` (seconds on the session timeline, shared with in.wav and
out.wav), so latencies can be measured by comparing files. Each frame is written once, when
it is first pushed.
"""

from __future__ import annotations

import collections
import json
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sidecar.frames import (
    AudioFrame,
    AudioOutFrame,
    ErrorFrame,
    Frame,
    HeardFrame,
    InterruptionFrame,
    PlaybackStartFrame,
    ReplyDoneFrame,
    RequestSentFrame,
    SentenceFrame,
    TokenFrame,
    TranscriptFrame,
    TurnEndedFrame,
    TurnTimelineFrame,
    UserTurnFrame,
)
from sidecar.pipeline import Direction, Processor

log = logging.getLogger(__name__)


def event_record(frame: Frame) -> dict[str, Any]:
    """The event as the JSONL log writes it and the window receives it."""
    return {"type": frame.event, "t": round(frame.t if frame.t is not None else 0.0, 4), **frame.event_data()}


class EachEventOnce:
    """An observer that hands each event frame to `handle` once: observers see a frame at every
    processor it passes, an event is reported where it is first pushed."""

    def __init__(self, handle: Callable[[Frame], None], remember: int = 1024) -> None:
        self.handle = handle
        self.remember = remember
        self._seen: OrderedDict[int, Frame] = OrderedDict()

    def __call__(self, source: Processor | None, frame: Frame, direction: Direction = Direction.DOWN) -> None:
        if frame.event is None or id(frame) in self._seen:
            return
        self._seen[id(frame)] = frame  # holding it keeps its id unique while it is remembered
        if len(self._seen) > self.remember:
            self._seen.popitem(last=False)
        self.handle(frame)


# Not in the process log: tokens, sentences and TTS lines carry what she says, and the mouth
# moves ~30 times a second (at INFO, a line each flooded the app's log and cost the event loop).
# The JSONL file has them all.
NOT_LOGGED = frozenset({"token", "sentence", "tts", "mouth"})


class EventLog(EachEventOnce):
    """Writes frames that are events as JSON lines (flushed at once, so a test can follow)."""

    def __init__(self, path: Path | None) -> None:
        super().__init__(self._write)
        self._file: IO[str] | None = path.open("w", encoding="utf-8") if path is not None else None

    def _write(self, frame: Frame) -> None:
        record = event_record(frame)
        if frame.event not in NOT_LOGGED:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("event %s", json.dumps(record, ensure_ascii=False))
            else:  # what was said, either way, stays out of the log at INFO: its length only
                log.info("event %s", json.dumps({k: f"<{len(v)} chars>" if k == "text" else v
                                                 for k, v in record.items()}, ensure_ascii=False))
        if self._file is not None:
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


# Milestones of a turn, in the order they happen, and the stage each gap is named after.
STAGES = (
    ("speech_end", "endpoint", "hangover"),
    ("endpoint", "transcript", "asr"),
    ("transcript", "request_sent", "turn_taking"),
    ("request_sent", "first_token", "llm_first_token"),
    ("first_token", "first_sentence", "first_sentence"),
    ("first_sentence", "first_audio", "tts_and_buffer"),
)
# The same span as the device sees it (a sound device's marks; a file's have no capture lag).
DEVICE_STAGES = (
    ("speech_end_block", "speech_end_captured", "capture_lag"),  # its block complete -> in the pipeline
    ("first_sentence", "audio_queued", "tts"),
    ("audio_queued", "audio_written", "prebuffer"),  # queued -> the output took its first sample
    ("audio_written", "first_audio", "device_latency"),  # -> heard, per the device's own clock
)


@dataclass
class _Turn:
    marks: dict[str, float] = field(default_factory=dict)
    buffered_ms: float | None = None
    prompt: dict[str, int] = field(default_factory=dict)

    def mark(self, name: str, t: float | None, first: bool = True) -> None:
        if t is not None and (not first or name not in self.marks):
            self.marks[name] = t


class TurnTimeline:
    """Collects each turn's milestones; when the turn is over, emits a TurnTimelineFrame.

    speech_end (the user's last voiced audio), endpoint (end-of-speech decided), transcript,
    request_sent, first_token, last_token, first_sentence, first_audio (heard), reply_done,
    turn_end; for a reply cut short also interruption (decided: barge-in, "stop"), stopped
    (playback cut) and cancelled (the request cancelled upstream, reply_done's time).
    `latency_ms.total` is speech_end -> first_audio, the delay the user feels. The device side
    (DEVICE_STAGES): speech_end_block / speech_end_captured (when the microphone block holding
    the end of speech was complete, and when it reached the pipeline, on the wall clock whose
    origin is the first block's arrival: a capture lag a few ms below zero is that origin's
    error, its growth is real), audio_queued,
    audio_written (the output callback took the first sample) and `buffered_ms` (audio and
    device latency ahead of the first sound when it was queued).
    """

    def __init__(self, emit: Callable[[TurnTimelineFrame], None], *, spoken: bool = True) -> None:
        self.emit = emit
        self.spoken = spoken  # without playback (typed turns read on screen) a turn ends with its reply
        self._turns: dict[int, _Turn] = {}
        self._finished: set[int] = set()  # frames of a turn still travel after it ended
        self._heard: dict[float, tuple[float, float]] = {}  # utterance end -> (endpoint, transcript)
        self._blocks: collections.deque[tuple[float, float]] = collections.deque(maxlen=256)  # (end, arrived)

    def __call__(self, source: Processor | None, frame: Frame, direction: Direction = Direction.DOWN) -> None:
        if isinstance(frame, AudioFrame):
            if frame.arrived is not None:
                self._blocks.append((frame.t + frame.duration, frame.arrived))
        elif isinstance(frame, TranscriptFrame):
            self._heard[frame.utterance.end] = (frame.utterance.t, frame.t)
            while len(self._heard) > 16:  # transcripts that started no turn
                self._heard.pop(next(iter(self._heard)))
        elif isinstance(frame, UserTurnFrame):
            turn = self._get(frame.turn)
            if frame.speech_end is not None:
                turn.mark("speech_end", frame.speech_end)
                endpoint, transcript = self._heard.pop(frame.speech_end, (None, None))
                turn.mark("endpoint", endpoint)
                turn.mark("transcript", transcript)
                for end, arrived in self._blocks:
                    if end >= frame.speech_end - 1e-6:
                        turn.mark("speech_end_block", end)
                        turn.mark("speech_end_captured", arrived)
                        break
            turn.mark("user_turn", frame.t)
        elif isinstance(frame, RequestSentFrame):
            self._get(frame.turn).mark("request_sent", frame.t)
        elif isinstance(frame, TokenFrame):
            self._get(frame.turn).mark("first_token", frame.t)
            self._get(frame.turn).mark("last_token", frame.t, first=False)
        elif isinstance(frame, SentenceFrame):
            self._get(frame.turn).mark("first_sentence", frame.t)
        elif isinstance(frame, AudioOutFrame):
            self._get(frame.turn).mark("first_audio", frame.t)
        elif isinstance(frame, PlaybackStartFrame):
            turn = self._get(frame.turn)
            turn.mark("audio_queued", frame.queued)
            turn.mark("audio_written", frame.written)
            turn.mark("first_audio", frame.heard, first=False)  # the device's word over the prediction
            turn.buffered_ms = frame.buffered_ms
        elif isinstance(frame, ReplyDoneFrame):
            self._get(frame.turn).mark("reply_done", frame.t)
            if frame.prompt_tokens is not None:
                self._get(frame.turn).prompt = {"evaluated": frame.prompt_tokens, "cached": frame.cached_tokens or 0}
            if frame.reason == "cancelled":
                self._get(frame.turn).mark("cancelled", frame.t)
            if not self.spoken:
                self._finish(frame.turn, frame.t)
        elif isinstance(frame, InterruptionFrame):
            for turn in self._turns.values():
                turn.mark("interruption", frame.t)
        elif isinstance(frame, HeardFrame) and frame.interrupted:
            self._get(frame.turn).mark("stopped", frame.t)
        elif isinstance(frame, TurnEndedFrame):
            self._finish(frame.turn, frame.t)
        elif isinstance(frame, ErrorFrame) and frame.fatal:
            self._turns.clear()

    def _get(self, turn: int) -> _Turn:
        return _Turn() if turn in self._finished else self._turns.setdefault(turn, _Turn())

    def _finish(self, number: int, t: float | None) -> None:
        turn = self._turns.pop(number, None)
        if turn is None:
            return
        self._finished = {n for n in self._finished if n > number - 32} | {number}
        turn.mark("turn_end", t)
        marks = turn.marks
        gaps = {name: round((marks[b] - marks[a]) * 1000, 1)
                for a, b, name in (*STAGES, *DEVICE_STAGES) if a in marks and b in marks}
        if turn.buffered_ms is not None:
            gaps["buffered"] = turn.buffered_ms
        start = "speech_end" if "speech_end" in marks else "user_turn"
        if start in marks and "first_audio" in marks:
            gaps["total"] = round((marks["first_audio"] - marks[start]) * 1000, 1)
        self.emit(TurnTimelineFrame(turn=number, marks={k: round(v, 4) for k, v in marks.items()},
                                    latency_ms=gaps, prompt=turn.prompt, t=t))
