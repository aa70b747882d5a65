"""The echo canceller and guard: Stella's own voice, heard back through the microphone, never
interrupts her; the user talking over her does, and is understood. Simulated room (50 ms to the
direct sound, 6 dB down in all, a 250 ms reverb tail), scripted replies spoken by the real
voice, real AEC, VAD and whisper."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.config import AppConfig
from sidecar.frames import PlaybackLevelsFrame
from sidecar.voice.aec import DelayTracker, Reference
from sidecar.voice.audio import RATE
from sidecar.voice.echo_guard import EchoGuard

from .simulate import errors_over_her, in_silence, simulate
from .speech import words


def test_over_twenty_replies_only_the_user_interrupts_and_what_they_say_over_her_is_understood(
        engines, piper, tmp_path):
    outcome = simulate(AppConfig(), engines, piper, tmp_path, replies=24, talk_every=6, echo=(50.0, -6.0, 250.0))
    assert outcome.in_full >= 20, "20 replies heard in full, 4 talked over (then answered)"
    assert len(outcome.onsets) == 4
    assert outcome.false == [], f"Stella's own voice interrupted her at {outcome.false}"
    lag = f"(the microphone path ran behind real time by {outcome.lag()} ms, median / p99 / max)"
    assert outcome.missed == [], f"the user talked over Stella at {outcome.missed} and was not heard {lag}"
    said = [(alone, outcome.heard.get(k, "")) for k, alone in enumerate(in_silence(engines, outcome.spoken))]
    errors = sum(errors_over_her(alone, over_her) for alone, over_her in said)
    assert errors <= 0.1 * sum(len(words(alone[0])) for alone, _ in said), f"heard alone, over her voice: {said} {lag}"


def guard() -> EchoGuard:
    return EchoGuard(threshold=0.5, margin_db=6.0, max_delay_s=0.2, prior_coupling_db=0.0, windows=2)


def test_a_loud_window_over_silence_is_speech_but_over_playback_only_if_above_the_echo():
    g, window = guard(), np.full(512, 0.1, np.float32)  # mean square 0.01 (-20 dB)
    assert g.gate(window, 1.0, 0.9) == 0.9, "nothing playing: the VAD decides alone"
    g.reference(PlaybackLevelsFrame(start=2.0, hop=0.02, rms=np.full(100, 0.3, np.float32)))  # -10 dB for 2 s
    assert [g.gate(window, 2.0 + 0.032 * k, 0.9) for k in range(4)] == [0.0] * 4, "as loud as an echo can be"
    loud = np.full(512, 0.7, np.float32)  # +7 dB over what plays
    assert [g.gate(loud, 2.2 + 0.032 * k, 0.9) for k in range(3)] == [0.0, 0.9, 0.9], "two windows in a row"
    g.reference(PlaybackLevelsFrame(start=2.5, hop=0.02, rms=np.zeros(0, np.float32), cut=True))
    assert g.gate(window, 2.75, 0.9) == 0.9, "once playback is cut (and its echo delay past), the guard is off"


@pytest.mark.parametrize("ratio_db, expected", [(-20.0, 0.0), (10.0, 0.9)])
def test_the_coupling_is_learnt_from_stella_speaking(ratio_db, expected):
    """After a second of echo at -20 dB, speech 10 dB above the playback level gets through."""
    g = guard()
    rms = np.full(200, 0.1, np.float32)
    g.reference(PlaybackLevelsFrame(start=0.0, hop=0.02, rms=rms))
    echo = np.full(512, 0.01, np.float32)  # -20 dB under what plays
    for k in range(40):
        g.gate(echo, 0.032 * k, 0.9)
    assert g.coupling_db == pytest.approx(-20, abs=0.5)
    window = np.full(512, 0.1 * 10 ** (ratio_db / 20), np.float32)
    got = [g.gate(window, 1.5 + 0.032 * k, 0.9) for k in range(2)]
    assert got[-1] == expected


def test_the_windows_in_a_row_above_her_echo_are_the_users_onset_whatever_the_vad_said():
    """What the pre-roll of a talk-over keeps: the quiet start of a syllable, not her echo."""
    g = guard()
    g.reference(PlaybackLevelsFrame(start=0.0, hop=0.02, rms=np.full(100, 0.3, np.float32)))  # -10 dB
    echo, onset, vowel = (np.full(512, a, np.float32) for a in (0.2, 0.7, 0.9))
    for k in range(3):
        g.gate(echo, 0.032 * k, 0.9)  # her echo: never the user's, however speech-like
    assert g.user_run == 0
    g.gate(onset, 0.1, 0.2)  # louder than her echo can be, the VAD not yet sure
    g.gate(onset, 0.132, 0.4)
    assert g.user_run == 2
    assert [g.gate(vowel, 0.164 + 0.032 * k, 0.9) for k in range(2)] == [0.0, 0.9]
    assert g.user_run == 4, "the pre-roll keeps the three windows before the onset's last"


def test_the_canceller_is_never_trusted_below_the_floor():
    """After a second of residue 40 dB under what plays, speech 16 dB under it is still taken for
    her echo (a path jump lets that much through), speech 10 dB under it is the user."""
    g = EchoGuard(threshold=0.5, margin_db=6.0, max_delay_s=0.2, prior_coupling_db=0.0, windows=2, floor_db=-20.0)
    g.reference(PlaybackLevelsFrame(start=0.0, hop=0.02, rms=np.full(200, 0.1, np.float32)))
    for k in range(40):
        g.gate(np.full(512, 0.001, np.float32), 0.032 * k, 0.9)  # -40 dB: a well-converged canceller
    assert g.coupling_db == -20.0
    for level_db, expected in ((-16.0, 0.0), (-10.0, 0.9)):
        window = np.full(512, 0.1 * 10 ** (level_db / 20), np.float32)
        assert [g.gate(window, 1.5 + 0.032 * k, 0.9) for k in range(2)][-1] == expected, level_db


def test_the_floor_decides_barge_in_but_the_pre_roll_keeps_what_is_above_her_usual_echo():
    g = EchoGuard(threshold=0.5, margin_db=6.0, max_delay_s=0.2, prior_coupling_db=0.0, windows=2, floor_db=-20.0)
    g.reference(PlaybackLevelsFrame(start=0.0, hop=0.02, rms=np.full(200, 0.1, np.float32)))
    for k in range(40):
        g.gate(np.full(512, 0.001, np.float32), 0.032 * k, 0.1)  # -40 dB: a well-converged canceller
    g.gate(np.full(512, 0.1 * 10 ** (-25 / 20), np.float32), 1.5, 0.2)  # a quiet onset, 25 dB under what plays
    assert g.user_run == 1, "above her usual echo: kept in the pre-roll"


def _level(db_under: float) -> np.ndarray:
    """A window `db_under` dB relative to what plays in the tests below (rms 0.1)."""
    return np.full(512, 0.1 * 10 ** (db_under / 20), np.float32)


def test_after_a_pause_the_canceller_must_show_again_that_it_cancels_before_it_is_trusted():
    """Reply 1: her echo reaches the microphone 12 dB down, the canceller leaves -40 dB. Then a
    pause; meanwhile the echo path moved, and reply 2's first windows come through uncancelled:
    her echo, not the user (without the proof they were taken for a talk-over: -12 > -20 + 6).
    The user, louder than her uncancelled echo, is heard even then; once the canceller cancels
    again, a user under her echo is heard too."""
    g = EchoGuard(threshold=0.5, margin_db=6.0, max_delay_s=0.2, prior_coupling_db=0.0, windows=2, floor_db=-20.0)
    g.reference(PlaybackLevelsFrame(start=0.0, hop=0.02, rms=np.full(100, 0.1, np.float32)))  # reply 1: 2 s
    for k in range(50):
        g.gate(_level(-40), 0.032 * k, 0.9, raw=_level(-12))
    assert g.trusted and g.allowed_db == -20.0
    for k in range(60):  # 2 s with nothing playing (its echo delay past)
        g.gate(_level(-90), 2.3 + 0.032 * k, 0.0, raw=_level(-90))
    assert not g.trusted
    start = 4.3
    g.reference(PlaybackLevelsFrame(start=start, hop=0.02, rms=np.full(300, 0.1, np.float32)))  # reply 2: 6 s
    leak = [g.gate(_level(-12), start + 0.032 * k, 0.9, raw=_level(-12)) for k in range(4)]
    assert leak == [0.0] * 4, "her uncancelled echo at a reply's start is not a talk-over"
    loud = [g.gate(_level(0), start + 0.2 + 0.032 * k, 0.9, raw=_level(0)) for k in range(2)]
    assert loud[-1] == 0.9, "a user louder than her echo as heard is heard before the canceller settles"
    for k in range(8):
        g.gate(_level(-40), start + 0.5 + 0.032 * k, 0.9, raw=_level(-12))
    assert g.trusted
    for k in range(100):  # the leak it learnt as her echo ages out of the coupling's percentile
        g.gate(_level(-40), start + 0.8 + 0.032 * k, 0.9, raw=_level(-12))
    quiet = [g.gate(_level(-10), start + 4.2 + 0.032 * k, 0.9, raw=_level(-8)) for k in range(2)]
    assert quiet[-1] == 0.9, "once it cancels, a user quieter than her echo is heard"


def test_a_canceller_that_adds_her_voice_where_there_is_none_is_not_the_user():
    """A misaligned filter subtracts an echo that has not arrived: its output is louder than the
    microphone. The user cannot be in what the canceller added."""
    g = EchoGuard(threshold=0.5, margin_db=6.0, max_delay_s=0.2, prior_coupling_db=0.0, windows=2, floor_db=-20.0)
    g.reference(PlaybackLevelsFrame(start=0.0, hop=0.02, rms=np.full(100, 0.1, np.float32)))
    for k in range(40):  # a well-converged canceller: trusted, so only 20 dB under what plays is allowed
        g.gate(_level(-40), 0.032 * k, 0.9, raw=_level(-12))
    got = [g.gate(_level(-5), 1.3 + 0.032 * k, 0.9, raw=_level(-30)) for k in range(4)]  # seen through PulseAudio
    assert got == [0.0] * 4


def test_her_echo_is_expected_when_the_output_really_played_it_not_only_when_it_was_scheduled():
    """Playback scheduled a sentence at 1.0 s; the output stalled and played it 0.4 s later.
    The canceller's record of what really played keeps her late echo from being a talk-over."""
    played = Reference()
    voice = np.full(320, 0.1, np.float32)
    for k in range(150):  # from 1.4 s: what the output really played
        played.add(1.4 + 0.02 * k, voice if k < 100 else np.zeros(320, np.float32), RATE)
    late = EchoGuard(threshold=0.5, margin_db=6.0, max_delay_s=0.2, prior_coupling_db=0.0, windows=2,
                     played=played)
    blind = EchoGuard(threshold=0.5, margin_db=6.0, max_delay_s=0.2, prior_coupling_db=0.0, windows=2)
    for g in (late, blind):
        g.reference(PlaybackLevelsFrame(start=1.0, hop=0.02, rms=np.full(100, 0.1, np.float32)))  # 1.0-3.0 s
    echo = _level(-12)
    windows = [3.25 + 0.032 * k for k in range(5)]  # her echo, after the schedule (and its echo delay) ended
    assert [late.gate(echo, t, 0.9) for t in windows] == [0.0] * 5
    assert blind.gate(echo, windows[0], 0.9) == 0.9, "without the record the window is taken for speech"


def test_her_echo_is_expected_as_late_as_the_canceller_measured_the_path_not_only_as_configured():
    """The sound server's path grew to 280 ms (seen under load), past the guard's 200 ms. Once
    the canceller's tracker has measured it, the end of her words, heard 280 ms late, is hers."""
    rng = np.random.default_rng(7)
    voice = rng.normal(0, 0.1, 3 * RATE).astype(np.float32)
    heard = np.concatenate([np.zeros(round(0.28 * RATE), np.float32), voice])[:len(voice)] * 0.25
    tracker = DelayTracker()
    for k in range(0, len(voice), 320):
        tracker.feed(heard[k:k + 320], voice[k:k + 320])
    assert tracker.delay_s == pytest.approx(0.28, abs=0.002)
    measured = EchoGuard(threshold=0.5, margin_db=6.0, max_delay_s=0.2, prior_coupling_db=0.0, windows=2,
                         tracker=tracker)
    blind = guard()
    for g in (measured, blind):
        g.reference(PlaybackLevelsFrame(start=0.0, hop=0.02, rms=np.full(150, 0.1, np.float32)))  # 0-3 s
    windows = [3.0 + 0.032 * k for k in range(9)]  # to 3.29 s: her last 0.28 s, arriving now
    echo = _level(-12)
    assert [measured.gate(echo, t, 0.9) for t in windows] == [0.0] * 9
    assert [blind.gate(echo, t, 0.9) for t in windows][-1] == 0.9, "looking back 200 ms: taken for speech"
    assert measured.gate(echo, 3.45, 0.9) == 0.9, "past the measured path (and its slack) the VAD decides"


def test_a_quiet_onset_louder_than_her_echo_just_before_it_is_kept_though_the_coupling_remembers_worse():
    """A reply's first windows, before the filter converged, leave her echo 6 dB down; then the
    canceller leaves -30 dB. The learnt coupling still says -6 dB, but the "T" of "Tell" at -13 dB
    is 17 dB louder than anything of her echo in the last half second: the user's, kept."""
    g = guard()
    g.reference(PlaybackLevelsFrame(start=0.0, hop=0.02, rms=np.full(200, 0.1, np.float32)))
    for k in range(40):
        g.gate(_level(-6 if k < 10 else -30), 0.032 * k, 0.9, raw=_level(-6))
    assert g.residue_db > -10, "the unconverged start is in the learnt coupling"
    g.gate(_level(-13), 1.3, 0.3, raw=_level(-6))
    assert [g.gate(_level(3), 1.332 + 0.032 * k, 0.9, raw=_level(3)) for k in range(2)] == [0.0, 0.9]
    assert g.user_run == 3, "the quiet onset and the two windows that decided"
