"""Speech to text: whisper's window, its noise tags, and starting early at a pause."""

from __future__ import annotations

import time

import numpy as np
import pytest

from sidecar.frames import EarlyTranscriptFrame, EndFrame, SpeechResumedFrame, TranscriptFrame, UtteranceFrame
from sidecar.voice.asr import ASR, FULL_CTX, MIN_CTX, audio_ctx, clean

from .harness import run


@pytest.mark.parametrize("raw, text", [
    ("[BLANK_AUDIO]", ""),
    (" (upbeat music) Hello there.", "Hello there."),
    ("*cough* yes", "yes"),
    ("(Bake me a cake)", "Bake me a cake"),
])
def test_noise_tags_go_and_words_stay(raw, text):
    assert clean(raw) == text


def test_the_encoder_window_covers_the_utterance_with_room_to_spare():
    assert audio_ctx(1.0) == MIN_CTX
    assert audio_ctx(10.0) >= (2 * 10 + 1) * 50
    assert audio_ctx(60.0) == FULL_CTX


class FakeWhisper:
    """Takes 0.3 s per run (stoppable), says how many samples it heard, records overlaps."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.running = 0
        self.overlapped = False
        self.prepared: list[str] = []

    def prepare(self, prompt: str) -> None:
        self.prepared.append(prompt)

    def __call__(self, audio: np.ndarray, abort=None, prompt: str = "") -> str:
        self.running += 1
        self.overlapped |= self.running > 1
        self.calls.append(len(audio))
        for _ in range(30):
            if abort is not None and abort.is_set():
                self.running -= 1
                return ""
            time.sleep(0.01)
        self.running -= 1
        return f"{len(audio)} samples"


def transcribe(frames: list[UtteranceFrame]) -> tuple[FakeWhisper, list[TranscriptFrame]]:
    whisper = FakeWhisper()
    script = [step for frame in frames for step in (frame, 0.1)] + [EndFrame()]
    return whisper, [f for f in run(script, [ASR(whisper)], timeout=10) if isinstance(f, TranscriptFrame)]


def utt(samples: int, end: float, final: bool) -> UtteranceFrame:
    return UtteranceFrame(audio=np.zeros(samples, np.float32), start=0.0, end=end, final=final)


def test_whisper_starts_at_the_pause_and_its_result_is_used_when_the_pause_was_the_end():
    whisper, heard = transcribe([utt(16000, 1.0, final=False), utt(16000, 1.0, final=True)])
    assert whisper.calls == [16000], "one run, started at the pause"
    assert [t.text for t in heard] == ["16000 samples"]


def test_the_prompt_is_readied_as_the_asr_starts_not_at_the_first_words():
    whisper = FakeWhisper()
    run([0.05, EndFrame()], [ASR(whisper, "Hey Stella.")], timeout=10)
    assert whisper.prepared == ["Hey Stella."] and whisper.calls == []


def test_when_the_user_goes_on_the_early_run_is_dropped():
    whisper, heard = transcribe([utt(16000, 1.0, final=False), utt(32000, 2.0, final=False),
                                 utt(32000, 2.0, final=True)])
    assert whisper.calls == [16000, 32000] and not whisper.overlapped
    assert [t.text for t in heard] == ["32000 samples"]


def transcripts(frames: list[UtteranceFrame], pause: float) -> list[tuple[str, str]]:
    script = [step for frame in frames for step in (frame, pause)] + [EndFrame()]
    return [(type(f).__name__, f.text) for f in run(script, [ASR(FakeWhisper())], timeout=10)
            if isinstance(f, TranscriptFrame | EarlyTranscriptFrame)]


def test_the_transcript_at_the_pause_goes_on_before_the_pause_is_known_to_end_the_turn():
    pause_ends_turn = transcripts([utt(16000, 1.0, final=False), utt(16000, 1.0, final=True)], 0.5)
    assert pause_ends_turn == [("EarlyTranscriptFrame", "16000 samples"), ("TranscriptFrame", "16000 samples")]
    user_went_on = transcripts([utt(16000, 1.0, final=False), utt(32000, 2.0, final=True)], 0.1)
    assert user_went_on == [("TranscriptFrame", "32000 samples")], "a run stopped half way is no guess"


def interim(samples: int, end: float) -> UtteranceFrame:
    return UtteranceFrame(audio=np.zeros(samples, np.float32), start=0.0, end=end, final=False, interim=True)


def test_the_words_so_far_are_transcribed_when_whisper_is_idle_and_give_way_to_the_pause():
    whisper = FakeWhisper()
    script = [interim(12800, 0.8), 0.05, interim(14400, 0.9), 0.5,  # the second comes while the first runs
              interim(25600, 1.6), 0.1, utt(30000, 1.9, final=False), 0.5, utt(30000, 1.9, final=True), 0.5,
              EndFrame()]
    out = [(type(f).__name__, f.text) for f in run(script, [ASR(whisper)], timeout=10)
           if isinstance(f, TranscriptFrame | EarlyTranscriptFrame)]
    assert whisper.calls == [12800, 25600, 30000], "one run at a time: the interim during a run is skipped"
    assert not whisper.overlapped
    assert out == [("EarlyTranscriptFrame", "12800 samples"), ("EarlyTranscriptFrame", "30000 samples"),
                   ("TranscriptFrame", "30000 samples")], "the interim run cut short by the pause says nothing"


def test_after_a_pause_the_user_went_on_from_the_words_so_far_are_transcribed_again():
    whisper = FakeWhisper()
    script = [utt(9600, 0.6, final=False), 0.05, SpeechResumedFrame(t=0.7), 0.1, interim(12800, 0.8), 0.5,
              utt(30000, 1.9, final=False), 0.5, utt(30000, 1.9, final=True), 0.5, EndFrame()]
    out = [(type(f).__name__, f.text) for f in run(script, [ASR(whisper)], timeout=10)
           if isinstance(f, TranscriptFrame | EarlyTranscriptFrame)]
    assert whisper.calls == [9600, 12800, 30000] and not whisper.overlapped
    assert out[0] == ("EarlyTranscriptFrame", "12800 samples"), "the stale pause's run said nothing; the interim did"
