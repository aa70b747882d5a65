"""Speaking: a jitter buffer in front of the output (a sound device or a WAV file).

Each synthesized sentence is resampled (soxr) to the output's rate, faded in and out over a
few ms and followed by a short pause, so sentence joins never click, then queued in a
lock-free ring. The output pulls fixed blocks from the ring on its own clock — the device's
callback, or a writer that advances with the session clock — and plays silence when the ring
is empty. Every pull records which ring position plays at which timeline time, so the time
a sentence is *heard* is known exactly (`audio_out` events).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import re
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sidecar.clock import Clock
from sidecar.frames import (
    AudioOutFrame,
    BlinkFrame,
    BotSpeakingFrame,
    EndFrame,
    Frame,
    HeardFrame,
    InterruptionFrame,
    MouthFrame,
    PlaybackLevelsFrame,
    PlaybackStartFrame,
    PushToTalkFrame,
    ReplyDoneFrame,
    SpeechAudioFrame,
    SpeechStartedFrame,
    TurnEndedFrame,
    UserTurnFrame,
    VolumeFrame,
)
from sidecar.pipeline import Direction, Processor, VoiceError
from sidecar.voice.aec import PlayedLog
from sidecar.voice.audio import fade_edges, resample, to_int16
from sidecar.voice.devices import find_device, portaudio
from sidecar.voice.mouth import HOP_S, Blinks, mouth_levels, rms_envelope
from sidecar.voice.ring import Ring

log = logging.getLogger(__name__)

VOLUME_MIN_DB, VOLUME_MAX_DB = -30.0, 6.0


class JitterBuffer:
    """Audio waiting to be played, and the map from ring positions to timeline times."""

    def __init__(self, rate: int, seconds: float = 120.0) -> None:
        self.rate = rate
        self.ring = Ring(int(rate * seconds), np.float32)
        # (ring position, timeline time at which that position plays), set by each pull
        self._mark: tuple[int, float] = (0, 0.0)
        self._ends = 0.0  # when the last queued sample will have been heard
        self.gain = 1.0  # the volume, applied as audio is pulled so a change is heard at once
        self.played: PlayedLog | None = None  # told every pulled block: the echo canceller's reference
        # (first ring position, samples, when pulled, when heard) of the last pulls that took audio
        self._pulls: collections.deque[tuple[int, int, float, float]] = collections.deque(maxlen=512)

    def pull(self, out: np.ndarray, plays_at: float, now: float | None = None) -> int:
        """Fill `out` (silence past the queued audio); `plays_at` = when out[0] is heard, `now` =
        when it leaves for the device (default `plays_at`: a file has no latency)."""
        n = self.ring.read_into(out)
        if n:
            self._pulls.append((self.ring.consumed - n, n, plays_at if now is None else now, plays_at))
        out[n:] = 0.0
        if self.gain != 1.0:
            out *= self.gain
        if self.played is not None:
            self.played.played(plays_at, out, self.rate)
        # the next ring sample plays right after this block (now, or at the next pull if empty)
        self._mark = (self.ring.consumed, plays_at + len(out) / self.rate)
        return n

    def queue(self, audio: np.ndarray) -> float:
        """Append audio; returns the timeline time its first sample will be heard."""
        position, t = self._mark
        starts = t + (self.ring.written - position) / self.rate
        written = self.ring.write(audio)
        if written < len(audio):
            log.warning("playback buffer full: %d samples dropped", len(audio) - written)
        self._ends = starts + written / self.rate
        return starts

    def taken_at(self, position: int) -> tuple[float, float] | None:
        """When the output pulled ring position `position` and when that sample is heard, by the
        device's own latency (None if not pulled yet, or too long ago)."""
        for start, n, when, heard in list(self._pulls):
            if start + n > position:
                return when, heard + max(0, position - start) / self.rate
        return None

    def ends_at(self) -> float:
        """When everything queued so far will have been heard."""
        return self._ends

    def discard(self) -> None:
        self.ring.discard()
        self._ends = 0.0

    def resume(self, plays_at: float) -> None:
        """The output starts again after a rest: the next sample plays at `plays_at` (until its
        first pull says exactly when)."""
        self._mark = (self.ring.consumed, plays_at)


class FileOutput:
    """A WAV file on the session timeline: sample k is t = k / rate, silence where nothing plays."""

    def __init__(self, path: Path, rate: int, block_ms: int = 20) -> None:
        self.path = path
        self.rate = rate
        self.buffer = JitterBuffer(rate)
        self._block = np.zeros(rate * block_ms // 1000, np.float32)
        self._wav: wave.Wave_write | None = None
        self._task: asyncio.Task[None] | None = None
        self._written = 0
        self.tap: Ring | None = None  # a copy of what is written, for a simulated echo path

    async def open(self, clock: Clock) -> None:
        self._wav = wave.open(str(self.path), "wb")
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(self.rate)
        self._task = asyncio.create_task(self._write(clock), name="file-output")

    def catch_up(self, now: float) -> None:
        """Write the file up to `now`, so audio queued next lands at its true time.

        Half a sample of slack: `now` = 4.02 + 0.02 must reach the block ending at 64640 / 16000
        (the echo canceller needs what played up to the microphone block's end, every block).
        """
        while self._written + len(self._block) <= now * self.rate + 0.5:
            self._pull()

    def hush(self) -> None:
        """A file is written on without pause: its samples are the session's timeline."""

    def rest(self) -> None:
        """As `hush`."""

    def wake(self) -> None:
        """Always writing."""

    async def _write(self, clock: Clock) -> None:
        while True:
            self.catch_up(clock.now())
            await asyncio.sleep(len(self._block) / self.rate / 2)

    def _pull(self) -> None:
        self.buffer.pull(self._block, self._written / self.rate)
        self._wav.writeframes(to_int16(self._block).tobytes())
        if self.tap is not None:
            self.tap.write(self._block)
        self._written += len(self._block)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._wav is not None:
            while self.buffer.ring.available():  # whatever is still queued belongs in the file
                self._pull()
            self._wav.close()


class DeviceOutput:
    """A sounddevice OutputStream whose callback only copies from the ring (never blocks).

    `rate` 0 plays at the device's own rate, so the only resampling is ours (soxr), not the
    sound server's.
    """

    def __init__(self, device: str, rate: int, block_ms: int = 20) -> None:
        self.device_spec = device
        self.name = device
        self.rate = rate
        self.block_ms = block_ms
        self.buffer = JitterBuffer(rate or 48000, seconds=1.0)  # sized for the device by open()
        self._stream: Any = None
        self._clock: Clock | None = None
        self._fallback_latency = 0.05
        self._hushed = False

    def catch_up(self, now: float) -> None:
        """The device plays on its own clock: nothing to do."""

    async def open(self, clock: Clock) -> None:
        """Find and start the device (a VoiceError, naming the choices, if it cannot be used)."""
        sd = portaudio()
        index, self.name, default_rate = find_device(self.device_spec, "output")
        self.rate = self.rate or default_rate
        self.buffer = JitterBuffer(self.rate)
        self._clock = clock
        try:
            self._stream = sd.OutputStream(device=index, samplerate=self.rate, channels=1, dtype="float32",
                                           blocksize=self.rate * self.block_ms // 1000, callback=self._callback)
        except sd.PortAudioError as exc:
            raise self._unusable(exc) from None
        self._fallback_latency = float(self._stream.latency)
        self._stream.start()
        log.info("speaking on %r at %d Hz", self.name, self.rate)

    def hush(self) -> None:
        """Nothing to play for a moment: the callback hands the device silence and returns, without
        pulling or feeding the echo reference (within a conversation the stream stays up). Everything queued
        has played, so the buffer's memory goes back: its 2 minutes of audio (20 MiB at 44.1 kHz) were all
        resident once her replies had gone round it, for good."""
        if not self._hushed:
            self._hushed = True
            self.buffer.ring.release()
            log.debug("speaker hushed")

    def rest(self) -> None:
        """Stop the stream once the conversation has gone quiet. Playing silence cost a callback
        thread, a sound-server client thread and the server's mixing: 1.7 % of a core, a sixth of the
        app's idle listening. Not between replies: a stream started on a sink nobody else plays to took
        up to 1.9 s to play its first block (a PulseAudio null sink; a real sink is suspended after 5 s
        idle, and a Bluetooth one takes as long to resume)."""
        self.hush()
        if self._stream is not None and self._stream.active:
            self._stream.abort()
            log.debug("speaker resting")

    def wake(self) -> None:
        """A reply may be on its way (the user has begun to speak): pull again, and start the stream if it
        rested. A speaker gone meanwhile (unplugged, taken) is a VoiceError that says what to do, as at open."""
        if self._hushed:
            self.buffer.resume(self._clock.now() + self._fallback_latency)  # until the next pull says exactly
            self._hushed = False
        if self._stream is not None and not self._stream.active:
            try:
                self._stream.start()
            except portaudio().PortAudioError as exc:
                raise self._unusable(exc) from None
            log.debug("speaker awake")

    def _unusable(self, exc: Exception) -> VoiceError:
        return VoiceError(f"cannot open the speaker {self.name!r} at {self.rate} Hz: {exc}. Choose another "
                          "with --output-device (or voice.output_device)")

    def _callback(self, outdata: np.ndarray, frames: int, when: Any, status: Any) -> None:
        # PortAudio's thread: copy from the ring, nothing that can block.
        if self._hushed:
            outdata.fill(0)
            return
        delay = when.outputBufferDacTime - when.currentTime
        if not 0 < delay < 1:
            delay = self._fallback_latency
        now = self._clock.now()
        self.buffer.pull(outdata[:, 0], now + delay, now)

    async def close(self) -> None:
        if self._stream is not None:
            self._stream.abort()
            self._stream.close()


Output = FileOutput | DeviceOutput


@dataclass
class PlayedSentence:
    """A sentence in the buffer: its words and when they are heard."""

    text: str
    start: float
    duration: float

    def heard_by(self, t: float) -> str:
        """The words heard in full by `t`. Speech takes time by its letters more than by its words
        ("Yes, Stella." cut at 0.56 of 1.14 s had said "Yes,", not nothing), so a word is heard once
        the played share of the sentence reaches the share of its letters up to the word's end."""
        if t >= self.start + self.duration:
            return self.text
        if t <= self.start:
            return ""
        played = len(self.text) * (t - self.start) / self.duration
        return " ".join(m.group() for m in re.finditer(r"\S+", self.text) if m.end() <= played)


class Playback(Processor):
    """Queues each sentence's audio; reports when each is heard and when the reply ends.

    `audio_out` events carry the time the sentence's first sample reaches the output; a
    `BotSpeakingFrame` goes upstream when the reply's audio starts and when it has all played,
    with a `HeardFrame` saying what was heard. Each sentence's level envelope goes upstream
    too (the echo guard's reference) and, as `mouth` events every 20 ms, downstream — all on
    the audio clock, like the blinks. An interruption empties the buffer at once: what was
    heard up to then is reported, the rest never plays. Every block the output pulls goes to
    `played`, stamped with when it is heard: the echo canceller's reference.
    """

    IDLE_WAKE_S = 0.25  # between replies, the watcher's longest sleep
    HUSH_AFTER_S = 1.0  # nothing played for this long: the output's callback stops pulling

    def __init__(self, output: Output, pause_ms: int, *, volume_db: float = 0.0, volume_step_db: float = 6.0,
                 played: PlayedLog | None = None, rest_after_s: float = 15.0) -> None:
        """`rest_after_s`: the output rests once it has had nothing to play for this long (the conversation
        has gone quiet), and is hushed after `HUSH_AFTER_S`;
        the user speaking or typing wakes it."""
        super().__init__()
        self.output = output
        self.rest_after_s = rest_after_s
        self.played = played
        self.pause_ms = pause_ms
        self.volume_db = volume_db
        self.volume_step_db = volume_step_db
        self._due: list[Frame] = []  # frames to push once the clock reaches their t
        self._mouth: collections.deque[MouthFrame] = collections.deque()
        self._blinks = Blinks()
        self._speaking_turn: int | None = None
        self._reply_done: set[int] = set()
        self._spoken: set[int] = set()  # turns that queued audio
        self._starts: dict[int, tuple[int, PlaybackStartFrame]] = {}  # turn -> its first sound's ring position
        self._sentences: dict[int, list[PlayedSentence]] = {}  # what each turn still in the buffer says, and when
        self._watch: asyncio.Task[None] | None = None
        self._queued = asyncio.Event()  # a sentence was queued: wakes the idle watcher
        self._wanted = 0.0  # when a reply was last on its way: the output stays awake a while after

    @property
    def gain(self) -> float:
        return 10 ** (self.volume_db / 20)

    async def start(self) -> None:
        await self.output.open(self.clock)
        self.output.buffer.gain = self.gain
        self.output.buffer.played = self.played
        self._watch = asyncio.create_task(self._watch_clock(), name="playback-watch")

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        await self.output.close()

    def pending(self) -> bool:
        return bool(self._due) or self._speaking_turn is not None

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, SpeechAudioFrame):
            await self._queue_sentence(frame)
            return
        if isinstance(frame, SpeechStartedFrame | PushToTalkFrame | UserTurnFrame):
            self._awake()  # a reply may be on its way: the output is up long before it comes
        if isinstance(frame, ReplyDoneFrame):
            self._reply_done.add(frame.turn)
            if frame.turn not in self._spoken:  # nothing was said: the turn is over now
                await self.push(HeardFrame(turn=frame.turn, text="", interrupted=frame.reason == "cancelled"),
                                Direction.UP)
                await self.push(TurnEndedFrame(turn=frame.turn), Direction.UP)
        elif isinstance(frame, InterruptionFrame):
            await self._cut()
        elif isinstance(frame, VolumeFrame):
            self.volume_db = min(VOLUME_MAX_DB, max(VOLUME_MIN_DB, self.volume_db + frame.step * self.volume_step_db))
            self.output.buffer.gain = self.gain
            log.info("volume %+.0f dB", self.volume_db)
        elif isinstance(frame, EndFrame):
            while self.pending():  # let the last words play out
                await asyncio.sleep(0.02)
        await self.push(frame, direction)

    async def _cut(self) -> None:
        """Stop now: drop what is queued, report what was heard of each reply in the buffer."""
        self.output.buffer.discard()
        now = self.clock.now()
        self._due.clear()
        self._mouth.clear()
        self._starts.clear()
        for turn, played in self._sentences.items():
            heard = " ".join(w for w in (p.heard_by(now) for p in played) if w)
            cut = turn not in self._reply_done or any(p.start + p.duration > now for p in played)
            await self.push(HeardFrame(turn=turn, text=heard, interrupted=cut), Direction.UP)
            if turn != self._speaking_turn:  # an earlier reply whose end was still scheduled
                await self.push(TurnEndedFrame(turn=turn), Direction.UP)
        self._sentences.clear()
        await self.push(PlaybackLevelsFrame(start=now, hop=HOP_S, rms=np.zeros(0, np.float32), cut=True),
                        Direction.UP)
        if self._speaking_turn is not None:
            await self.push(MouthFrame(level=0.0))
            await self.push(BotSpeakingFrame(turn=self._speaking_turn, speaking=False), Direction.UP)
            await self.push(TurnEndedFrame(turn=self._speaking_turn), Direction.UP)
            self._speaking_turn = None

    def _awake(self) -> None:
        self._wanted = self.clock.now()
        self.output.wake()

    async def _queue_sentence(self, frame: SpeechAudioFrame) -> None:
        self._queued.set()
        self._awake()
        rate = self.output.rate
        audio = fade_edges(resample(frame.audio, frame.rate, rate), rate)
        sound = np.concatenate([audio, np.zeros(rate * self.pause_ms // 1000, np.float32)])
        self.output.catch_up(self.clock.now())
        position = self.output.buffer.ring.written
        starts = self.output.buffer.queue(sound)
        if frame.turn not in self._spoken:  # the turn's first sound: the device side of its timeline
            now = self.clock.now()
            self._starts[frame.turn] = (position, PlaybackStartFrame(
                turn=frame.turn, queued=round(now, 4), buffered_ms=round((starts - now) * 1000, 1), written=None,
                heard=None))
        if self._speaking_turn != frame.turn:
            if self._speaking_turn is not None:  # the previous reply's audio ends where this one starts
                self._due += self._ended(self._speaking_turn, starts)
            self._speaking_turn = frame.turn
            self._spoken.add(frame.turn)
            self._due.append(BotSpeakingFrame(turn=frame.turn, speaking=True, t=starts))
        self._due.append(AudioOutFrame(turn=frame.turn, index=frame.index, duration=round(len(audio) / rate, 3),
                                       t=starts))
        self._sentences.setdefault(frame.turn, []).append(PlayedSentence(frame.text, starts, len(audio) / rate))
        self._mouth.extend(MouthFrame(level=round(float(level), 3), t=starts + k * HOP_S)
                           for k, level in enumerate(mouth_levels(sound, rate)))
        await self.push(PlaybackLevelsFrame(start=starts, hop=HOP_S, rms=rms_envelope(sound, rate) * self.gain),
                        Direction.UP)

    def _ended(self, turn: int, t: float) -> list[Frame]:
        """The frames that say turn `turn` has been heard in full at `t`."""
        played = self._sentences.pop(turn, [])
        return [HeardFrame(turn=turn, text=" ".join(p.text for p in played), interrupted=False, t=t),
                BotSpeakingFrame(turn=turn, speaking=False, t=t), TurnEndedFrame(turn=turn, t=t)]

    def _busy(self) -> bool:
        """Something is scheduled on the audio clock (the watcher looks every 10 ms)."""
        return bool(self._mouth or self._due or self._starts) or self._speaking_turn is not None

    async def _watch_clock(self) -> None:
        """Push scheduled frames when their time comes; notice when a reply has played out.

        While a reply plays it looks every 10 ms; between replies it sleeps until the next blink or
        until a sentence is queued (a 100 Hz wake-up was a tenth of the engine's idle listening)."""
        while True:
            if self._busy():
                await asyncio.sleep(0.01)
            else:
                self._queued.clear()
                wait = min(self.IDLE_WAKE_S, max(0.0, self._blinks.next_at - self.clock.now()))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._queued.wait(), wait)
            now = self.clock.now()
            while self._mouth and self._mouth[0].t <= now:
                await self.push(self._mouth.popleft())
            blink = self._blinks.due(now)
            if blink is not None:
                await self.push(BlinkFrame(t=blink))
            while self._due and self._due[0].t <= now:
                frame = self._due.pop(0)
                await self.push(frame, Direction.DOWN if isinstance(frame, AudioOutFrame) else Direction.UP)
            for turn, (position, start) in list(self._starts.items()):  # once the output took it and it is heard
                taken = self.output.buffer.taken_at(position)
                if taken is not None and now >= taken[1]:
                    del self._starts[turn]
                    start.written, start.heard = round(taken[0], 4), round(taken[1], 4)
                    await self.push(start)
            turn = self._speaking_turn
            ends = self.output.buffer.ends_at()
            if turn is not None and turn in self._reply_done and not self._due and now >= ends:
                self._speaking_turn = None
                for frame in self._ended(turn, ends):
                    await self.push(frame, Direction.UP)
            quiet_s = now - max(ends, self._wanted)
            if self._busy() or quiet_s < self.HUSH_AFTER_S:
                continue
            if quiet_s >= self.rest_after_s:
                self.output.rest()
            else:
                self.output.hush()
