"""Echo cancellation: Stella's own voice taken out of the microphone signal.

Playback records every block it hands to the output with the timeline time it will be heard
(`PlayedLog`, filled from the output's thread or clock). On the microphone path:

* `Reference` (pure) holds what played, at 16 kHz, by timeline sample index, so the reference
  for any microphone block is a plain read (zeros where nothing played).
* `DelayTracker` (pure) finds the speaker -> microphone delay by cross-correlating the
  microphone with the reference (GCC-PHAT, which whitens both so the direct path stands out
  of a reverberant room and of speech's pitch harmonics) over the last second or two, and
  keeps it only when the peak is clear and two measurements agree: the user talking over
  her, or silence, leaves the estimate where it was.
* `SpeexCanceller` is the adaptive filter (libspeexdsp's multi-delay block frequency-domain
  filter, through ctypes), fed the reference shifted by the tracked delay minus a lead: a
  reference later than its echo cannot be cancelled at all (measured: 25 dB removed when
  aligned, 0.3 dB when 40 ms late), one a little early only costs filter taps.
* `EchoCancel` is the thin processor: microphone frames in, cleaned frames out, so the VAD,
  the echo guard, the wake word and whisper all hear the user without her echo.
"""

from __future__ import annotations

import collections
import ctypes
import logging
from dataclasses import dataclass, replace

import numpy as np
import soxr

from sidecar.config import VoiceConfig
from sidecar.frames import AudioFrame, Frame
from sidecar.pipeline import Direction, Processor, VoiceError
from sidecar.voice.audio import RATE, level_db, to_float, to_int16

log = logging.getLogger(__name__)


class PlayedLog:
    """What the output played: (timeline time of the block's first sample, block, rate).

    Appended by the output's puller (PortAudio's thread for a device: a deque append is atomic
    and never blocks), drained on the microphone side, which may lag seconds behind on a
    loaded machine (measured: 4.5 s on 2 cores at load 9): both keep 30 s.
    """

    def __init__(self, seconds: float = 30.0, block_s: float = 0.01) -> None:
        self._blocks: collections.deque[tuple[float, np.ndarray, int]] = collections.deque(
            maxlen=int(seconds / block_s))

    def played(self, t: float, block: np.ndarray, rate: int) -> None:
        self._blocks.append((t, block.copy(), rate))

    def drain(self) -> list[tuple[float, np.ndarray, int]]:
        out = []
        while self._blocks:
            out.append(self._blocks.popleft())
        return out


class Reference:
    """What played, at 16 kHz, addressed by timeline sample index (sample i is t = i / 16000).

    The last `seconds` are kept; reading older or never-written samples gives zeros. Blocks
    at another rate go through one soxr stream. The device plays one sample after the other,
    so samples are counted from the first block's time; the time each callback reports
    jitters by tens of ms on a loaded machine (re-anchoring on it moved the reference under
    the filter: false barge-ins through PulseAudio), so a jump of `jump_s` (the output
    restarted) re-anchors at once, and an offset of `late_s` that each of `settle` blocks in a
    row shows (an underrun: the output stalled, and all that follows plays that much later;
    seen under load: tens to hundreds of ms) moves the count by it.
    """

    def __init__(self, seconds: float = 4.0, jump_s: float = 0.25, late_s: float = 0.03, settle: int = 5) -> None:
        self.capacity = int(seconds * RATE)
        self._buf = np.zeros(self.capacity, np.float32)
        self._end = 0  # one past the highest index written
        self._sound_end = 0  # one past the last sample written that was not silence
        self._next: float | None = None  # timeline time the next block should start at
        self._index = 0  # where the next resampled sample goes
        self._rate = RATE
        self._converter: soxr.ResampleStream | None = None
        self.jump_s = jump_s
        self.late_s = late_s  # every one of the last `settle` blocks this much off: the output stalled
        self._off: collections.deque[float] = collections.deque(maxlen=settle)

    def add(self, t: float, block: np.ndarray, rate: int) -> None:
        """A played block: `block` (float32 at `rate`) is heard from timeline time `t` on."""
        if rate != self._rate or self._next is None:
            self._rate = rate
            self._converter = None if rate == RATE else soxr.ResampleStream(rate, RATE, 1, dtype="float32")
        if self._next is None or abs(t - self._next) > self.jump_s:
            self._index, self._next = round(t * RATE), t
            self._off.clear()
        else:
            self._off.append(t - self._next)
            lo, hi = min(self._off), max(self._off)
            moved = lo if lo > self.late_s else hi if hi < -self.late_s else 0.0
            if moved and len(self._off) == self._off.maxlen:  # an underrun: what follows plays that much later
                self._index += round(moved * RATE)
                self._next += moved
                self._off.clear()
        self._next += len(block) / rate
        audio = block if self._converter is None else self._converter.resample_chunk(block.astype(np.float32))
        self.write(self._index, audio)
        self._index += len(audio)

    def write(self, start: int, audio: np.ndarray) -> None:
        audio = audio[-self.capacity:]
        start = max(start, start + len(audio) - self.capacity)
        if start > self._end:  # nothing played in between: silence
            self._clear(self._end, min(start, self._end + self.capacity))
        idx = np.arange(start, start + len(audio)) % self.capacity
        self._buf[idx] = audio
        self._end = max(self._end, start + len(audio))
        loud = np.flatnonzero(audio)
        if len(loud):
            self._sound_end = max(self._sound_end, start + int(loud[-1]) + 1)

    def silent_from(self, start: int) -> bool:
        """Nothing but silence was written from sample `start` on: reads there give zeros (the idle
        microphone path skips them)."""
        return start >= self._sound_end

    def read(self, start: int, n: int) -> np.ndarray:
        """Samples [start, start + n); zeros outside what is kept."""
        out = np.zeros(n, np.float32)
        lo, hi = max(start, self._end - self.capacity, 0), min(start + n, self._end)
        if hi > lo:
            out[lo - start:hi - start] = self._buf[np.arange(lo, hi) % self.capacity]
        return out

    def _clear(self, lo: int, hi: int) -> None:
        self._buf[np.arange(lo, hi) % self.capacity] = 0.0


EDGE = RATE // 1000  # lags this close to the longest searched are the search's edge, not a path


@dataclass
class DelayMeasure:
    delay_s: float
    clarity: float  # the correlation peak over the spread of the rest (about 3-5 for no echo)


class DelayTracker:
    """The speaker -> microphone delay, from the microphone and the reference at lag 0.

    Every `hop_s` of audio it correlates the last `window_s` of microphone with the reference
    over lags 0..`max_delay_s` (the reference is kept that much longer). A measurement counts
    if the reference was playing in two quarters of the window at least (her first words are
    measured as soon as they fill half of it), the peak is `clarity` times
    the spread of the others and not at the edge of the lags searched, and the previous clear
    measurement agrees within `agree_s`; `delay_s` is None until then. A delay other than the
    one held is taken only if both measurements are `move_clarity` clear: two windows half
    the same audio agree on a chance peak as readily as on a path, and a wrong path costs the
    next words' cancelling. In the device test, paths were measured 43-525 clear and chance
    peaks 9-21; a path no clearer than that is an echo near the room's noise, whose path
    matters little.

    Through PulseAudio, a window that held only the fading end of a reply (a quarter of it her
    voice, the rest digital silence) peaked at random lags, twice in a row at the search's edge:
    "echo delay 500.0 ms" (and 394 ms after another reply, 475 ms across a pause between two
    sentences) was taken, the filter was reset onto that path, and the next words went through
    uncancelled for a second or more: a user talking over them is heard through her voice (the
    likely cause of one CI run's device test hearing "Where do penguins live?" as "Where do you
    ping one slide?").
    """

    def __init__(self, *, max_delay_s: float = 0.5, window_s: float = 1.0, hop_s: float = 0.5,
                 clarity: float = 8.0, move_clarity: float = 30.0, agree_s: float = 0.002,
                 floor: float = 1e-6) -> None:
        self.max_lag = int(max_delay_s * RATE)
        self.window = 4 * int(window_s * RATE / 4)  # in quarters, two of which her voice must fill
        self.hop = int(hop_s * RATE)
        self.clarity = clarity
        self.move_clarity = move_clarity
        self.agree = int(agree_s * RATE)
        self.floor = floor
        self.reach = self.window + self.max_lag  # reference samples a measurement looks back over
        self._mic = np.zeros(self.window, np.float32)
        self._ref = np.zeros(self.reach, np.float32)
        self._since = 0
        self._last: DelayMeasure | None = None  # the previous clear measurement
        self.delay_s: float | None = None
        self.measures: list[DelayMeasure] = []  # the clear ones, newest last (for the log and tests)

    def feed(self, mic: np.ndarray, ref: np.ndarray) -> float | None:
        """Equal-length microphone and reference blocks of the same timeline span."""
        n = len(mic)
        self._mic = np.concatenate([self._mic[n:], mic.astype(np.float32)])
        self._ref = np.concatenate([self._ref[n:], ref.astype(np.float32)])
        self._since += n
        if self._since >= self.hop:
            self._since = 0
            self._measure()
        return self.delay_s

    def skip(self, n: int) -> None:
        """`n` samples went by unfed while nothing played: the measurements keep their rhythm, and
        what the microphone heard meanwhile counts as silence (it correlates with nothing played;
        kept stale, it would blur the next measurement)."""
        self._mic[:] = 0.0
        self._since += n
        if self._since >= self.hop:
            self._since = 0

    def _measure(self) -> None:
        ref = self._ref
        playing = np.mean(np.square(ref[-self.window:].reshape(4, -1)), axis=1) >= self.floor
        if playing.sum() < 2 or np.mean(np.square(self._mic)) < self.floor:
            return
        size = 2048 * int(np.ceil((len(ref) + self.window) / 2048))  # 2^11 * small factors: a fast FFT
        spectrum = np.fft.rfft(self._mic, size) * np.conj(np.fft.rfft(ref, size))
        spectrum /= np.abs(spectrum) + 1e-12
        corr = np.fft.irfft(spectrum, size)
        # corr[k] = sum mic[j] ref[j - k]; mic[j] is timeline ref[j + max_lag], its echo d late ref[j + max_lag - d]
        lags = corr[(np.arange(self.max_lag + 1) - self.max_lag) % size]
        lag = int(np.argmax(lags))
        rest = np.delete(lags, np.arange(max(0, lag - 8), min(len(lags), lag + 9)))
        clarity = float((lags[lag] - np.mean(rest)) / (np.std(rest) + 1e-12))
        if clarity < self.clarity or lag >= self.max_lag - EDGE:
            return  # a peak at the edge may be the flank of one beyond it
        measure = DelayMeasure(lag / RATE, clarity)
        self.measures.append(measure)
        del self.measures[:-20]
        last, self._last = self._last, measure
        if last is None or abs(lag - round(last.delay_s * RATE)) > self.agree:
            return
        if self.delay_s is not None and abs(lag - round(self.delay_s * RATE)) <= self.agree:
            self.delay_s = measure.delay_s  # the path held, refined
        elif min(clarity, last.clarity) >= self.move_clarity:
            log.info("echo delay %.1f ms (clarity %.0f)", measure.delay_s * 1000, clarity)
            self.delay_s = measure.delay_s


class SpeexCanceller:
    """libspeexdsp's echo canceller on int16 frames of `frame` samples (ctypes, no build).

    `filter_ms` is the echo tail it can model after the aligned delay: the room's reverb plus
    the lead the reference is read with.
    """

    def __init__(self, frame: int, filter_ms: int) -> None:
        try:
            lib = ctypes.CDLL("libspeexdsp.so.1")
        except OSError:
            raise VoiceError("echo cancellation needs libspeexdsp (apt install libspeexdsp1); or turn it off "
                             "with voice.aec = false (STELLA_VOICE__AEC=false)") from None
        ptr = ctypes.POINTER(ctypes.c_int16)
        lib.speex_echo_state_init.restype = ctypes.c_void_p
        lib.speex_echo_state_init.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.speex_echo_cancellation.restype = None
        lib.speex_echo_cancellation.argtypes = [ctypes.c_void_p, ptr, ptr, ptr]
        lib.speex_echo_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        lib.speex_echo_state_reset.argtypes = [ctypes.c_void_p]
        lib.speex_echo_state_destroy.argtypes = [ctypes.c_void_p]
        self._lib, self._ptr = lib, ptr
        self.frame = frame
        # a whole number of frames: measured, a filter of 12.5 frames settles 20 dB lower than one of 12
        self.frames = max(1, round(RATE * filter_ms / 1000 / frame))
        self._state = lib.speex_echo_state_init(frame, frame * self.frames)
        rate = ctypes.c_int(RATE)
        lib.speex_echo_ctl(self._state, 24, ctypes.byref(rate))  # SPEEX_ECHO_SET_SAMPLING_RATE
        self._out = np.empty(frame, np.int16)

    def process(self, mic: np.ndarray, ref: np.ndarray) -> np.ndarray:
        """One frame: microphone and reference (int16) -> the microphone without the echo."""
        mic, ref = np.ascontiguousarray(mic, np.int16), np.ascontiguousarray(ref, np.int16)
        self._lib.speex_echo_cancellation(self._state, mic.ctypes.data_as(self._ptr), ref.ctypes.data_as(self._ptr),
                                          self._out.ctypes.data_as(self._ptr))
        return self._out.copy()

    def reset(self) -> None:
        self._lib.speex_echo_state_reset(self._state)

    def __del__(self) -> None:
        if getattr(self, "_state", None):
            self._lib.speex_echo_state_destroy(self._state)
            self._state = None


class EchoCanceller:
    """Reference + delay tracker + adaptive filter: microphone blocks in, cleaned blocks out.

    The reference is read `lead_ms` ahead of the tracked delay, and stays put while the delay
    wanders within a quarter to twice that lead (a sound server's latency drifts by tens of ms:
    measured 31-60 ms through PulseAudio's loopback); the adaptive filter follows such small
    moves itself, and a reset would throw away what it has learnt. Pure apart from the
    filter's C state, so tests can drive it with synthetic signals.

    While nothing has played for the filter's whole length there is no echo to take out, and the
    microphone passes through as it came: the filter (a third of the engine's idle listening)
    rests, keeping what it learnt for her next words.
    """

    def __init__(self, *, filter_ms: int, max_delay_ms: int, frame: int, lead_ms: int = 30) -> None:
        # long enough for a microphone side that lags seconds behind playback (a loaded machine)
        self.reference = Reference(seconds=30.0)
        self.tracker = DelayTracker(max_delay_s=max_delay_ms / 1000)
        self.filter = SpeexCanceller(frame, filter_ms)
        self.lead = int(lead_ms * RATE / 1000)
        self.frame = frame
        self.shift = 0  # samples the reference is read earlier than the microphone
        self._quiet = 0  # frames in a row the filter's input reference was silent
        self._silence = np.zeros(frame, np.int16)
        self._mic = np.zeros(0, np.int16)
        self._start = 0  # timeline index of _mic[0]
        self._out: list[np.ndarray] = []

    def process(self, start: int, pcm: np.ndarray) -> np.ndarray:
        """Microphone samples from timeline index `start` (int16) -> as many cleaned samples.

        The filter works in whole frames (the capture block, so normally no lag); the output
        has the input's length, with leading zeros while a first frame fills.
        """
        if len(self._mic) == 0:
            self._start = start
        self._mic = np.concatenate([self._mic, pcm])
        while len(self._mic) >= self.frame:
            mic = self._mic[:self.frame]
            if self._resting():
                self._out.append(mic.copy())
                self._mic, self._start = self._mic[self.frame:], self._start + self.frame
                self.tracker.skip(self.frame)
                continue
            ref = self.reference.read(self._start, self.frame)
            delay = self.tracker.feed(to_float(mic), ref)
            if delay is not None and not self.lead // 4 <= round(delay * RATE) - self.shift <= 2 * self.lead:
                # A new path: the old filter models the wrong one. A path shorter than a quarter of the
                # lead leaves the reference at 0: nothing moved, and a reset every block would cancel nothing.
                shift = max(0, round(delay * RATE) - self.lead)
                if shift != self.shift:
                    self.shift = shift
                    self.filter.reset()
            begin = self._start - self.shift
            aligned = self._silence if self.reference.silent_from(begin) else to_int16(
                self.reference.read(begin, self.frame))
            self._quiet = 0 if aligned.any() else self._quiet + 1
            # the filter has taken in `frames` silent frames: its echo estimate is 0 until she plays again
            self._out.append(mic.copy() if self._quiet > self.filter.frames else self.filter.process(mic, aligned))
            self._mic, self._start = self._mic[self.frame:], self._start + self.frame
        done = np.concatenate(self._out) if self._out else np.zeros(0, np.int16)
        if len(done) < len(pcm):
            done = np.concatenate([np.zeros(len(pcm) - len(done), np.int16), done])
        self._out = [done[len(pcm):]] if len(done) > len(pcm) else []
        return done[:len(pcm)]

    def _resting(self) -> bool:
        """Nothing has played within the tracker's reach (so within the filter's, which is shorter):
        no echo to measure or take out, and the tracker's reference holds only silence: it is not
        fed meanwhile (a quarter of the idle microphone path)."""
        return self._quiet > self.filter.frames and self.reference.silent_from(self._start - self.tracker.reach)


class EchoCancel(Processor):
    """The canceller on the microphone path: AudioFrames in, the same frames cleaned out."""

    def __init__(self, config: VoiceConfig, played: PlayedLog) -> None:
        super().__init__()
        self.played = played
        self.canceller = EchoCanceller(filter_ms=config.aec_filter_ms, max_delay_ms=config.aec_max_delay_ms,
                                       frame=RATE * config.block_ms // 1000)

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, AudioFrame) and direction is Direction.DOWN:
            for t, block, rate in self.played.drain():
                self.canceller.reference.add(t, block, rate)
            frame = replace(frame, pcm=self.canceller.process(round(frame.t * RATE), frame.pcm), raw=frame.pcm)
            if log.isEnabledFor(logging.DEBUG):  # the canceller's figures, block by block
                c = self.canceller
                ref = c.reference.read(round(frame.t * RATE) - c.shift, len(frame.pcm))
                log.debug("aec t=%.3f mic=%.1f out=%.1f ref=%.1f shift=%.1fms delay=%s", frame.t,
                          level_db(to_float(frame.raw)), level_db(to_float(frame.pcm)), level_db(ref),
                          c.shift * 1000 / RATE, c.tracker.delay_s)
        await self.push(frame, direction)
