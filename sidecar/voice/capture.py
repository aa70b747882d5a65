"""Where user audio comes from: a microphone, or a WAV file played as a microphone would.

Both produce 16 kHz mono int16 `AudioFrame`s of `block_ms`, stamped with the time of their
first sample on the session timeline (sample n is t = n / 16000).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import soxr

from sidecar.clock import Steer
from sidecar.frames import AudioFrame, EndFrame, Frame, InputStartedFrame, PushToTalkFrame
from sidecar.pipeline import Direction, Source, VoiceError
from sidecar.voice.audio import RATE, read_wav, resample, to_float, to_int16
from sidecar.voice.devices import find_device, portaudio
from sidecar.voice.ring import Ring
from sidecar.voice.simulated_echo import EchoPath

log = logging.getLogger(__name__)


class FileSource(Source):
    """Feeds a WAV file at real-time pace (or as fast as possible), then silence.

    After the file, it goes on delivering silence — a quiet room — so a last utterance can
    reach its end-of-speech, and ends the session (EndFrame) once nothing is left to do.
    `path=None` is a silent microphone (text-only sessions). `push_to_talk` lists (start, end)
    spans, in file time, during which the push-to-talk button is held. `fast` reads the file
    as fast as the pipeline takes it (the silence after it still comes at real-time pace).
    `echo` adds what the output played, as a microphone next to the speaker would hear it.
    """

    MAX_BACKLOG = 64  # fast mode: frames allowed to wait in the pipeline before reading on

    def __init__(self, path: Path | None, block_ms: int, *, push_to_talk: list[tuple[float, float]] = (),
                 fast: bool = False, tail_limit_s: float = 120.0, echo: EchoPath | None = None) -> None:
        super().__init__()
        self.path = path
        self.fast = fast
        self.echo = echo
        self.block = RATE * block_ms // 1000
        self.tail_limit_s = tail_limit_s
        self._buttons = sorted([(start, True) for start, _ in push_to_talk] + [(end, False) for _, end in push_to_talk])
        self._pcm = np.zeros(0, np.int16)
        if path is not None:  # read now: a bad file is reported before anything else starts
            audio, rate = read_wav(path)
            self._pcm = to_int16(resample(audio, rate, RATE))
        self._ended = False
        self._read = 0  # samples of _pcm handed out so far

    @property
    def duration(self) -> float:
        return len(self._pcm) / RATE

    def insert(self, audio: np.ndarray, at: float) -> None:
        """Add `audio` (float32, 16 kHz) to the input from `at` s on, lengthening it if need be:
        a simulated user who speaks in response to what happens (tests, benchmarks)."""
        start = round(at * RATE)
        if start < self._read:
            raise ValueError(f"cannot insert audio at {at:.3f} s: the input has been read up to "
                             f"{self._read / RATE:.3f} s")
        pcm = np.zeros(max(len(self._pcm), start + len(audio)), np.int16)
        pcm[:len(self._pcm)] = self._pcm
        pcm[start:start + len(audio)] = to_int16(to_float(pcm[start:start + len(audio)]) + audio)
        self._pcm = pcm

    @property
    def position(self) -> float:
        """How far the input has been read (s)."""
        return self._read / RATE

    @property
    def audio(self) -> np.ndarray:
        """The input as read (and to be read), float32 at 16 kHz."""
        return to_float(self._pcm)

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, EndFrame):
            self._ended = True
        await self.push(frame, direction)

    async def produce(self) -> None:
        clock = self.clock
        clock.start()
        await self.push(InputStartedFrame(device=str(self.path or "silence"), rate=RATE, t=0.0))
        silence = np.zeros(self.block, np.int16)
        n = 0
        idle_checks = 0
        while not self._ended:
            t = n / RATE
            ready = t + self.block / RATE  # a block exists once it is complete
            if self.fast and t < self.duration:
                while self.pipeline.backlog() > self.MAX_BACKLOG:
                    await asyncio.sleep(0.005)
                await clock.skip_to(ready)
            else:
                await clock.wait_until(ready)
            if t >= self.duration and not self._buttons:
                # After the file: stop once everything else has been idle for a moment.
                idle_checks = idle_checks + 1 if self.pipeline.idle(besides=self) else 0
                if idle_checks >= 5 or t > self.duration + self.tail_limit_s:
                    if idle_checks < 5:
                        log.warning("still busy %.0f s after the input ended; stopping", self.tail_limit_s)
                    await self.push(EndFrame())
                    return
            while self._buttons and self._buttons[0][0] <= t:
                at, pressed = self._buttons.pop(0)
                await self.push(PushToTalkFrame(pressed=pressed, t=at))
            pcm = self._pcm[n:n + self.block]
            self._read = n + self.block
            if len(pcm) < self.block:
                pcm = np.concatenate([pcm, silence[:self.block - len(pcm)]])
            if self.echo is not None:
                pcm = self.echo.mix(pcm, ready)
            await self.push(AudioFrame(pcm=pcm, rate=RATE, t=t))
            n += self.block


class WakeUps:
    """When the microphone's thread wakes the event loop: at every block while something is under way (the
    user speaking, Stella's voice playing), else every `idle_every` blocks. Each wake-up costs the loop a
    round of its own (the self-pipe, the event, the ring); while nobody speaks, the blocks wait a little
    and go down together, and only the start of speech is seen later (its audio is all there, and
    the end of a turn, barge-in and the echo canceller get every block at once).
    Measured (2-core VM, idle listening, `/proc` per thread): the engine's event loop 5.3-5.9 % of a core
    waking at every block, 3.2-3.4 % every third, 2.6-3.1 % every fifth (speech is then seen up to 80 ms
    after it began)."""

    def __init__(self, idle_every: int) -> None:
        self.idle_every = idle_every
        self.under_way = True  # until the pipeline says otherwise
        self._waiting = 0  # blocks written since the last wake-up

    def block(self) -> bool:
        """A block was written (the microphone's thread): wake the loop now?"""
        self._waiting += 1
        if self.under_way or self._waiting >= self.idle_every:
            self._waiting = 0
            return True
        return False


class DeviceSource(Source):
    """A sounddevice InputStream; its callback only copies into a lock-free ring.

    A stream that stops delivering (device unplugged, taken by another program) ends the
    session with a message naming the device and what to do.
    """

    def __init__(self, device: str, block_ms: int, *, stall_s: float = 2.0, first_block_s: float = 10.0,
                 idle_every: int = 5) -> None:
        super().__init__()
        self.device_spec = device
        self.wake_ups = WakeUps(idle_every)
        self.block = RATE * block_ms // 1000
        self.stall_s = stall_s
        self.first_block_s = first_block_s
        self.device_name = ""
        self._stream: Any = None
        self._rate = RATE
        self._ring = Ring(RATE * 10, np.int16)
        self._arrived: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped_by_device = False
        self._ended = False
        self.overflows = 0

    async def start(self) -> None:
        sd = portaudio()
        index, self.device_name, default_rate = find_device(self.device_spec, "input")
        self._loop = asyncio.get_running_loop()
        self._arrived = asyncio.Event()
        for rate in (RATE, default_rate):  # 16 kHz if the device (or its server) can, else resample
            try:
                self._stream = sd.InputStream(
                    device=index, samplerate=rate, channels=1, dtype="int16",
                    blocksize=self.block * rate // RATE, callback=self._callback,
                    finished_callback=self._finished,
                )
                self._rate = rate
                break
            except sd.PortAudioError as exc:
                error = exc
        else:
            raise VoiceError(f"cannot open the microphone {self.device_name!r}: {error}. Choose another "
                             "with --input-device (or voice.input_device)")
        self._ring = Ring(self._rate * 10, np.int16)
        self._stream.start()
        log.info("listening on %r at %d Hz", self.device_name, self._rate)

    def _callback(self, indata: np.ndarray, frames: int, when: Any, status: Any) -> None:
        # PortAudio's thread: copy and signal, nothing that can block.
        if status.input_overflow:
            self.overflows += 1
        self._ring.write(indata[:, 0])
        if self.wake_ups.block():
            self._wake()

    def _finished(self) -> None:
        if not self._ended:
            self._stopped_by_device = True
            self._wake()

    def _wake(self) -> None:
        """Wake the reader from PortAudio's thread; a stream that outlives the engine's event loop (closed while
        the engine exits) has nobody left to wake."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._arrived.set)

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, EndFrame):
            self._ended = True
            self._arrived.set()
        await self.push(frame, direction)

    async def produce(self) -> None:
        converter = None if self._rate == RATE else soxr.ResampleStream(self._rate, RATE, 1, dtype="float32")
        pending = np.zeros(0, np.int16)
        n = reported = delivered = 0
        steer = Steer()  # the timeline follows this device's samples, not the computer's clock
        while not self._ended:
            timeout = self.stall_s if self.clock.started else self.first_block_s
            try:
                async with asyncio.timeout(timeout):  # not wait_for: no task per block
                    await self._arrived.wait()
            except TimeoutError:
                # the timer fires only once this loop runs again: blocks waiting in the ring mean a
                # late engine (a loaded machine), not a microphone that stopped
                if not self._ring.available():
                    self._lost(f"no audio for {timeout:.0f} s")
            self._arrived.clear()
            if self._stopped_by_device:
                self._lost("the audio stream stopped")
            got = self._ring.read(self._ring.available())
            if len(got) == 0:
                continue
            if not self.clock.started:  # t = 0 is the first sample the device delivered
                self.clock.start(time.monotonic() - len(got) / self._rate)
                await self.push(InputStartedFrame(device=self.device_name, rate=self._rate, t=0.0))
            delivered += len(got)
            self.clock.slew(steer.feed(self.clock.now(), delivered / self._rate))
            if converter is not None:
                got = to_int16(converter.resample_chunk(got.astype(np.float32) / 32768.0))
            pending = np.concatenate([pending, got])
            arrived = self.clock.now()
            while len(pending) >= self.block:
                await self.push(AudioFrame(pcm=pending[:self.block], rate=RATE, t=n / RATE, arrived=arrived))
                pending = pending[self.block:]
                n += self.block
            self.wake_ups.under_way = self.pipeline.under_way()
            if self._ring.dropped + self.overflows > reported:
                log.warning("microphone audio was lost (%d samples not read in time, %d device overflows)",
                            self._ring.dropped, self.overflows)
                reported = self._ring.dropped + self.overflows

    def _lost(self, why: str) -> None:
        raise VoiceError(f"the microphone {self.device_name!r} stopped delivering audio ({why}): it was "
                         "unplugged or taken by another program. Reconnect it, or choose another with "
                         "--input-device (or voice.input_device)")

    async def stop(self) -> None:
        self._ended = True
        if self._stream is not None:
            self._stream.abort()
            self._stream.close()
