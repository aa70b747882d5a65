"""Playback: the jitter buffer's clock, resampling quality, smooth joins, dropping on interrupt."""

from __future__ import annotations

import ctypes
import mmap

import numpy as np
import pytest

from sidecar.clock import Clock
from sidecar.frames import (
    AudioOutFrame,
    EndFrame,
    Frame,
    InterruptionFrame,
    ReplyDoneFrame,
    SpeechAudioFrame,
    SpeechStartedFrame,
    UserTurnFrame,
)
from sidecar.pipeline import VoiceError
from sidecar.voice.audio import fade_edges, read_wav, resample
from sidecar.voice.devices import portaudio
from sidecar.voice.playback import DeviceOutput, FileOutput, JitterBuffer, Playback, PlayedSentence
from sidecar.voice.ring import Ring

from .harness import run


def tone(hz: float, seconds: float, rate: int, level: float = 0.5, phase: float = 0.0) -> np.ndarray:
    return (level * np.sin(2 * np.pi * hz * np.arange(int(seconds * rate)) / rate + phase)).astype(np.float32)


def spectrum_peak(x: np.ndarray, rate: int) -> tuple[float, np.ndarray, np.ndarray]:
    mag = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    freqs = np.fft.rfftfreq(len(x), 1 / rate)
    return float(freqs[int(np.argmax(mag))]), freqs, mag


def test_ring_wraps_around_drops_when_full_and_discards_on_request():
    ring = Ring(8, np.float32)
    assert ring.write(np.arange(6, dtype=np.float32)) == 6
    assert list(ring.read(4)) == [0, 1, 2, 3]
    assert ring.write(np.arange(10, 20, dtype=np.float32)) == 6  # 2 left + 6 free of 8
    assert ring.dropped == 4
    assert list(ring.read(100)) == [4, 5, 10, 11, 12, 13, 14, 15]
    ring.write(np.ones(5, np.float32))
    ring.discard()
    out = np.full(4, 7.0, np.float32)
    assert ring.read_into(out) == 0 and ring.available() == 0


def test_the_jitter_buffer_knows_when_queued_audio_is_heard():
    buf = JitterBuffer(rate=1000)
    block = np.zeros(20, np.float32)
    buf.pull(block, plays_at=1.00)  # nothing queued: silence, the next sample plays at 1.02
    assert buf.queue(np.ones(50, np.float32)) == pytest.approx(1.02)
    assert buf.queue(np.ones(30, np.float32)) == pytest.approx(1.07)
    assert buf.pull(block, plays_at=1.02) == 20 and block.min() == 1.0
    assert buf.ends_at() == pytest.approx(1.10)
    for t in (1.04, 1.06, 1.08, 1.10, 1.12):
        buf.pull(block, plays_at=t)
    assert not block.any(), "an empty buffer plays silence"
    assert buf.ends_at() == pytest.approx(1.10), "the end of what was queued does not move with the silence"
    assert buf.queue(np.ones(10, np.float32)) == pytest.approx(1.14)


@pytest.mark.parametrize("rate_in, rate_out", [(22050, 16000), (22050, 48000), (16000, 44100)])
def test_resampling_keeps_the_pitch_and_does_not_alias(rate_in, rate_out):
    kept = resample(tone(3000, 1.0, rate_in), rate_in, rate_out)
    assert len(kept) == pytest.approx(rate_out, abs=2)
    assert spectrum_peak(kept, rate_out)[0] == pytest.approx(3000, abs=3)
    if rate_out < rate_in:  # 9 kHz is above 16 kHz's Nyquist: it must vanish, not fold back to 7 kHz
        folded = resample(tone(9000, 1.0, rate_in), rate_in, rate_out)
        assert np.sqrt(np.mean(folded ** 2)) < 0.01


def test_fades_bring_a_cut_sine_to_zero_at_both_ends():
    cut = tone(440, 0.2017, 22050)  # ends mid-cycle: a click if played as is
    assert abs(cut[-1]) > 0.1
    faded = fade_edges(cut, 22050)
    assert abs(faded[0]) < 1e-6 and abs(faded[-1]) < 1e-6
    assert np.max(np.abs(np.diff(faded[-100:]))) < np.max(np.abs(np.diff(cut))) + 1e-6


def sentence(index: int, hz: float, seconds: float = 0.5) -> SpeechAudioFrame:
    """A tone that starts at its peak and stops mid-cycle: played raw, both ends would click."""
    audio = tone(hz, seconds + 0.37 / hz, 22050, phase=np.pi / 2)
    return SpeechAudioFrame(turn=1, index=index, text=f"s{index}", audio=audio, rate=22050, tts_ms=1.0,
                            engine="test")


def play(tmp_path, script: list[Frame | float], rate: int = 48000) -> tuple[np.ndarray, list[Frame]]:
    frames = run(script, [Playback(FileOutput(tmp_path / "out.wav", rate), pause_ms=100)])
    audio, file_rate = read_wav(tmp_path / "out.wav")
    assert file_rate == rate
    return audio, frames


def test_sentences_land_in_the_file_when_the_events_say_and_join_without_clicks(tmp_path):
    audio, frames = play(tmp_path, [0.1, sentence(0, 440), sentence(1, 660),
                                    ReplyDoneFrame(turn=1, reason="stop", text=""), EndFrame()])
    starts = [f for f in frames if isinstance(f, AudioOutFrame)]
    assert [f.index for f in starts] == [0, 1]
    assert starts[1].t == pytest.approx(starts[0].t + starts[0].duration + 0.1, abs=0.001), "sentence, pause, next"
    for f, hz in zip(starts, (440, 660), strict=True):
        i = round(f.t * 48000)
        assert not audio[max(0, i - 480):i].any(), "silence right before a sentence is heard"
        assert spectrum_peak(audio[i:i + 19200], 48000)[0] == pytest.approx(hz, abs=3)
        slope = 2 * np.pi * hz * 0.5 / 48000  # the steepest step of the tone itself
        for edge in (i, i + round(f.duration * 48000)):
            step = np.max(np.abs(np.diff(audio[edge - 240:edge + 240])))
            assert step <= slope * 1.1, f"click at a sentence join: step {step:.3f} > tone slope {slope:.3f}"


def test_an_interruption_drops_the_audio_not_yet_heard(tmp_path):
    audio, frames = play(tmp_path, [0.1, sentence(0, 440, seconds=3.0), 0.5, InterruptionFrame(reason="stop"),
                                    0.5, EndFrame()], rate=16000)
    start = next(f for f in frames if isinstance(f, AudioOutFrame)).t
    heard = np.flatnonzero(np.abs(audio) > 0.01)
    assert heard[-1] / 16000 < start + 0.8, "playback must stop soon after the interruption"


@pytest.mark.parametrize("share, heard", [
    (0.0, ""), (0.3, ""), (0.45, "Yes,"), (0.9, "Yes,"), (1.0, "Yes, Stella."),
])
def test_what_was_heard_of_a_cut_sentence_goes_by_its_letters(share, heard):
    """'Yes, Stella.' cut a little before half its 1.14 s: the user heard 'Yes,' (by word count,
    half of two words rounded down, the history kept nothing of the reply)."""
    assert PlayedSentence("Yes, Stella.", 5.0, 1.14).heard_by(5.0 + share * 1.14) == heard


class Resting(FileOutput):
    """A file output that notes when playback hushes it, lets it rest and wakes it (a device's callback
    stops pulling, its stream stops, and both start again then)."""

    def __init__(self, path, rate: int) -> None:  # noqa: ANN001
        super().__init__(path, rate)
        self.changes: list[tuple[str, float]] = []
        self._clock = None

    async def open(self, clock) -> None:  # noqa: ANN001
        self._clock = clock
        await super().open(clock)

    def _note(self, what: str) -> None:
        if not self.changes or self.changes[-1][0] != what:
            self.changes.append((what, self._clock.now()))

    def hush(self) -> None:
        self._note("hush")

    def rest(self) -> None:
        self._note("rest")

    def wake(self) -> None:
        if self.changes and self.changes[-1][0] != "wake":
            self._note("wake")


def test_between_turns_the_output_is_hushed_once_quiet_it_rests_and_the_user_speaking_wakes_it(tmp_path):
    output = Resting(tmp_path / "out.wav", 16000)
    speaks = SpeechStartedFrame(t=0.0)
    typed = UserTurnFrame(turn=2, text="And then?", source="text")
    frames = run([0.1, sentence(0, 440), ReplyDoneFrame(turn=1, reason="stop", text=""), 0.4, typed,
                  ReplyDoneFrame(turn=2, reason="stop", text=""), 3.0, speaks, 0.05, EndFrame()],
                 [Playback(output, pause_ms=100, rest_after_s=2.0)])
    said = next(f for f in frames if isinstance(f, AudioOutFrame))
    assert [what for what, _ in output.changes] == ["hush", "rest", "wake"]
    (_, hushed), (_, rested), (_, woken) = output.changes
    last = max(said.t + said.duration, typed.t)
    assert hushed >= last + Playback.HUSH_AFTER_S, "not while her words may still be playing"
    assert rested >= last + 2.0, "not between the turns of a conversation"
    assert woken >= rested and any(f is speaks for f in frames), "woken as the user starts to speak, before any turn"


def test_the_output_is_woken_by_a_typed_turn_too(tmp_path):
    output = Resting(tmp_path / "out.wav", 16000)
    turn = UserTurnFrame(turn=1, text="Hello?", source="text")
    run([1.5, turn, 0.05, EndFrame()], [Playback(output, pause_ms=100, rest_after_s=1.2)])
    assert [what for what, _ in output.changes] == ["hush", "rest", "wake"]


def test_after_a_rest_queued_audio_is_heard_from_when_the_output_starts_again():
    buf = JitterBuffer(rate=1000)
    buf.pull(np.zeros(20, np.float32), plays_at=1.00)
    buf.resume(5.0)  # stopped at 1.02, started again: its first sample plays at 5.0
    assert buf.queue(np.ones(10, np.float32)) == pytest.approx(5.0)


def test_a_speaker_gone_while_it_rested_says_so_when_the_next_reply_wakes_it():
    sd = portaudio()

    class Gone:
        active = False

        def start(self) -> None:
            raise sd.PortAudioError("Device unavailable")

    output = DeviceOutput("USB speaker", 48000)
    output._stream, output._clock = Gone(), Clock()
    with pytest.raises(VoiceError, match=r"cannot open the speaker 'USB speaker'.*--output-device"):
        output.wake()


def test_a_hushed_speaker_hands_the_device_silence_and_keeps_what_is_queued_for_when_it_wakes():
    class When:
        outputBufferDacTime, currentTime = 0.05, 0.0

    output = DeviceOutput("speaker", 1000)
    output._clock, output.buffer = Clock(), JitterBuffer(1000)
    output.hush()
    output.buffer.queue(np.ones(10, np.float32))
    out = np.full((20, 1), 0.5, np.float32)
    output._callback(out, 20, When(), None)
    assert not out.any() and output.buffer.ring.available() == 10, "hushed: silence, nothing taken"
    output.wake()  # the stream never stopped (none here): only the pulls resume
    output._callback(out, 20, When(), None)
    assert out[:10, 0].tolist() == [1.0] * 10 and not out[10:].any()


def resident(array: np.ndarray) -> int:
    """Bytes of `array`'s whole pages the system holds in memory (mincore)."""
    libc = ctypes.CDLL(None, use_errno=True)
    page = mmap.PAGESIZE
    start = -(-array.ctypes.data // page) * page
    end = (array.ctypes.data + array.nbytes) // page * page
    pages = (ctypes.c_ubyte * ((end - start) // page))()
    assert libc.mincore(ctypes.c_void_p(start), ctypes.c_size_t(end - start), pages) == 0, ctypes.get_errno()
    return sum(p & 1 for p in pages) * page


def test_a_hushed_speaker_gives_back_the_memory_her_replies_went_round_the_buffer_in():
    """Two minutes of her voice at 44.1 kHz fill the whole playback buffer (20 MiB) once: it stayed resident
    for good. Once everything queued has played and the speaker hushes, it goes back; she still speaks after."""
    class When:
        outputBufferDacTime, currentTime = 0.05, 0.0

    rate = 44100
    output = DeviceOutput("speaker", rate)
    output._clock, output.buffer = Clock(), JitterBuffer(rate)
    ring, out = output.buffer.ring, np.zeros((rate // 10, 1), np.float32)
    for _ in range(ring.capacity // len(out) + 5):  # a little over one time round
        output.buffer.queue(np.full(len(out), 0.25, np.float32))
        output._callback(out, len(out), When(), None)
    size = ring.capacity * 4
    assert resident(ring._buf) > 0.95 * size
    output.buffer.queue(np.ones(10, np.float32))
    output.hush()
    assert resident(ring._buf) > 0.95 * size, "audio still queued: the buffer is kept"
    output.wake()
    output._callback(out, len(out), When(), None)
    output.hush()
    assert resident(ring._buf) < 0.01 * size
    output.wake()
    output.buffer.queue(np.full(len(out), 0.5, np.float32))
    output._callback(out, len(out), When(), None)
    assert np.all(out == 0.5), "the buffer works as before"
