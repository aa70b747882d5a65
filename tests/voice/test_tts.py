"""Speaking each sentence: piper, and espeak-ng when piper cannot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from remote_api.shared.models.provision import Models
from sidecar.config import VoiceConfig
from sidecar.frames import EndFrame, Frame, ReplyDoneFrame, SentenceFrame, SpeechAudioFrame, TurnEndedFrame
from sidecar.pipeline import Direction, Processor
from sidecar.voice.audio import RATE, resample
from sidecar.voice.tts import TTS, EspeakSynth, PiperSynth
from sidecar.voice_loop import load_voices

from .harness import run
from .speech import heard_fraction

TEXT = "Please put the kettle on."


class Broken:
    name = "broken"

    def __call__(self, text: str) -> tuple[np.ndarray, int]:
        raise RuntimeError("the voice model crashed")

    def release(self) -> None:
        raise RuntimeError("the voice model crashed")


class Counting:
    """A voice that says silence and counts how often it was asked to give its memory back."""

    name = "counting"

    def __init__(self) -> None:
        self.released = 0

    def __call__(self, text: str) -> tuple[np.ndarray, int]:
        return np.zeros(2205, np.float32), 22050

    def release(self) -> None:
        self.released += 1


def spoken(engines, frame: SpeechAudioFrame) -> str:
    return engines.transcriber(resample(frame.audio, frame.rate, RATE))


def test_each_sentence_becomes_audio_that_says_it(engines):
    (audio,) = [f for f in run([SentenceFrame(turn=1, index=0, text=TEXT), EndFrame()], [TTS(engines.voice)])
                if isinstance(f, SpeechAudioFrame)]
    assert audio.engine == "piper" and audio.rate == 22050 and audio.tts_ms > 0
    assert heard_fraction(TEXT, spoken(engines, audio)) >= 0.8


def test_espeak_speaks_when_piper_fails_on_a_sentence(engines):
    (audio,) = [f for f in run([SentenceFrame(turn=1, index=0, text=TEXT), EndFrame()],
                               [TTS(Broken(), EspeakSynth("en-us"))]) if isinstance(f, SpeechAudioFrame)]
    assert audio.engine == "espeak-ng"
    assert heard_fraction(TEXT, spoken(engines, audio)) >= 0.6


def test_a_missing_piper_voice_falls_back_to_espeak(tmp_path: Path):
    voice, fallback = load_voices(VoiceConfig(), Models(tmp_path))  # an empty model cache
    assert voice.name == "espeak-ng" and fallback is None
    voice, fallback = load_voices(VoiceConfig(), Models())
    assert isinstance(voice, PiperSynth) and fallback is not None and fallback.name == "espeak-ng"


def test_piper_runs_on_the_threads_the_settings_give_it(engines):
    """One thread by default (it speaks while the model writes the rest of the reply on a core)."""
    voice, _ = load_voices(VoiceConfig(), Models())
    assert voice._voice.session.get_session_options().intra_op_num_threads == 1
    two, _ = load_voices(VoiceConfig(tts_threads=2), Models())
    assert two._voice.session.get_session_options().intra_op_num_threads == 2
    audio, rate = two(TEXT)
    assert heard_fraction(TEXT, engines.transcriber(resample(audio, rate, RATE))) >= 0.8


def test_a_negative_thread_count_is_a_clear_error():
    with pytest.raises(ValueError, match=r"'tts_threads' must be 0 \(one per core\) or more, got -1"):
        VoiceConfig(tts_threads=-1)


def test_the_voice_gives_its_memory_back_after_each_reply():
    voice, broken = Counting(), Broken()
    reply = [SentenceFrame(turn=1, index=0, text=TEXT), ReplyDoneFrame(turn=1, reason="stop", text=TEXT)]
    next_turn = [SentenceFrame(turn=2, index=0, text=TEXT), ReplyDoneFrame(turn=2, reason="stop", text=TEXT)]
    frames = run([*reply, 0.1, *next_turn, 0.1, EndFrame()], [TTS(voice, broken)])
    assert len([f for f in frames if isinstance(f, SpeechAudioFrame)]) == 2
    assert voice.released == 2, "not given back after each reply"
    # a fallback that fails to give back costs nothing but a log line
    assert len([f for f in run([*reply, 0.1, EndFrame()], [TTS(voice, broken)])
                if isinstance(f, SpeechAudioFrame)]) == 1
    assert voice.released == 3


class Played(Processor):
    """Playback that is over as soon as a sentence comes: says the turn ended, upstream."""

    async def process(self, frame: Frame, direction: Direction) -> None:
        await self.push(frame, direction)
        if isinstance(frame, SentenceFrame):
            await self.push(TurnEndedFrame(turn=frame.turn), Direction.UP)


def test_the_heap_is_trimmed_once_she_has_said_it_all(monkeypatch):
    trims = []
    monkeypatch.setattr("sidecar.voice.tts.give_back", lambda: trims.append(1))
    voice = Counting()
    run([SentenceFrame(turn=1, index=0, text=TEXT), 0.1, EndFrame()], [TTS(voice, Broken()), Played()])
    assert trims == [1] and voice.released == 0


def test_a_trim_under_way_does_not_stand_in_for_the_replys_release(monkeypatch):
    import time

    monkeypatch.setattr("sidecar.voice.tts.give_back", lambda: time.sleep(0.3))  # a slow trim, still running
    voice = Counting()
    # the turn's end is seen first (its trim starts), then the reply's end, while the trim still runs
    run([SentenceFrame(turn=1, index=0, text=TEXT), 0.1, ReplyDoneFrame(turn=1, reason="stop", text=TEXT), 0.5,
         EndFrame()], [TTS(voice, Broken()), Played()])
    assert voice.released == 1, "the reply's working memory was not given back"


def test_piper_given_back_still_speaks(engines):
    """After a release the arena is small again; the next sentence builds what it needs."""
    voice = engines.voice
    voice("I like reading, walking in the park and trying new recipes when I have a free evening.")
    voice.release()
    audio, rate = voice(TEXT)
    assert heard_fraction(TEXT, engines.transcriber(resample(audio, rate, RATE))) >= 0.8
