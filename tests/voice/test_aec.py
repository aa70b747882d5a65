"""The echo canceller's parts on synthetic signals: the reference timeline, the delay tracker,
libspeexdsp's filter behind the tracked delay, and the simulated room it is tested against."""

from __future__ import annotations

import numpy as np
import pytest
import soxr

from sidecar.clock import Steer
from sidecar.voice.aec import DelayTracker, EchoCanceller, PlayedLog, Reference
from sidecar.voice.audio import RATE, to_float, to_int16
from sidecar.voice.ring import Ring
from sidecar.voice.simulated_echo import EchoPath, room_impulse

BLOCK = 320


def talk(seconds: float, seed: int, level: float = 0.1) -> np.ndarray:
    """Speech-like: coloured noise in 100 ms syllables with gaps (never a steady tone)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    x = np.convolve(rng.standard_normal(n), np.ones(4) / 4, "same")
    voiced = np.repeat(rng.uniform(0, 1, n // 1600 + 1) > 0.3, 1600)[:n]
    return (x * voiced * level).astype(np.float32)


def db(x: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(np.square(x, dtype=np.float64)) + 1e-12))


def through(room: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.convolve(x, room)[:len(x)].astype(np.float32)


def track(mic: np.ndarray, ref: np.ndarray, tracker: DelayTracker | None = None) -> DelayTracker:
    tracker = tracker or DelayTracker()
    for k in range(0, len(mic) - BLOCK + 1, BLOCK):
        tracker.feed(mic[k:k + BLOCK], ref[k:k + BLOCK])
    return tracker


def test_the_reference_is_read_by_timeline_sample_with_silence_where_nothing_played():
    ref = Reference(seconds=1.0)
    ref.add(0.5, np.full(800, 0.25, np.float32), RATE)  # 50 ms from t = 0.5 s
    got = ref.read(8000 - 100, 1000)
    assert np.all(got[:100] == 0) and np.all(got[100:900] == 0.25) and np.all(got[900:] == 0)
    ref.add(1.2, np.full(160, 0.5, np.float32), RATE)  # a later block: the gap in between is silence
    assert np.all(ref.read(8800, 10400 - 8800) == 0)
    assert np.all(ref.read(19200, 160) == 0.5)
    ref.add(1.6, np.full(160, 0.5, np.float32), RATE)
    assert np.all(ref.read(8000, 800) == 0), "older than the second it keeps: forgotten"
    assert np.all(ref.read(19200, 160) == 0.5)


def test_the_reference_knows_from_where_only_silence_played():
    ref = Reference(seconds=1.0)
    assert ref.silent_from(0)
    sound = np.zeros(800, np.float32)
    sound[:400] = 0.25
    ref.add(0.5, sound, RATE)  # 25 ms of sound, 25 ms of silence, from t = 0.5 s
    ref.add(0.55, np.zeros(800, np.float32), RATE)
    assert not ref.silent_from(8000) and not ref.silent_from(8399)
    assert ref.silent_from(8400) and np.all(ref.read(8400, 1200) == 0)


def test_the_reference_resamples_the_output_rate_onto_the_timeline():
    ref = Reference()
    tone = np.sin(2 * np.pi * 440 * np.arange(48000) / 48000).astype(np.float32) * 0.5
    for k in range(0, 48000, 960):  # 20 ms device blocks at 48 kHz, from t = 1 s
        ref.add(1.0 + k / 48000, tone[k:k + 960], 48000)
    got = ref.read(RATE + 4000, 8000)
    want = np.sin(2 * np.pi * 440 * (np.arange(4000, 12000) / RATE)).astype(np.float32) * 0.5
    assert np.corrcoef(got, want)[0, 1] > 0.95


@pytest.mark.parametrize("rate", [44100, 48000, RATE])
def test_between_replies_the_reference_holds_exactly_what_the_resampler_gives_for_what_played(rate):
    """The output plays silence between replies; skipping the resampler for it must not move her next
    words by a single sample, nor let the ring's wrap show through (2 s kept, 5 s played)."""
    rng, block = np.random.default_rng(5), rate // 50
    speech = (rng.standard_normal(rate) * 0.1).astype(np.float32)
    played = np.concatenate([speech, np.zeros(3 * rate, np.float32), speech[::-1]])
    ref = Reference(seconds=2.0)
    for k in range(0, len(played), block):
        ref.add(1.0 + k / rate, played[k:k + block], rate)
    whole = played if rate == RATE else soxr.ResampleStream(rate, RATE, 1, dtype="float32").resample_chunk(
        played, last=True)
    start = RATE + len(whole) - 2 * RATE  # the last 2 s, where her second reply plays
    got = ref.read(start, RATE + RATE // 2)
    assert np.abs(got - whole[start - RATE:start - RATE + len(got)]).max() < 1e-6
    assert np.all(ref.read(start - RATE, RATE) == 0), "older than what it keeps: zeros"


def test_the_reference_counts_samples_through_a_callbacks_jittery_times_and_follows_a_restart():
    ref, rng = Reference(), np.random.default_rng(3)
    blocks = np.arange(100, dtype=np.float32).repeat(320).reshape(100, 320)  # block k holds the value k
    for k, block in enumerate(blocks[:50]):
        ref.add(1.0 + k * 0.02 + (k > 0) * rng.uniform(-0.03, 0.03), block, RATE)  # a loaded callback's times
    got = ref.read(RATE, 50 * 320).reshape(50, 320)
    assert np.array_equal(got, blocks[:50]), "block k at sample k * 320 from the first"
    for k, block in enumerate(blocks[50:]):
        ref.add(3.0 + k * 0.02, block, RATE)  # the output restarted half a second later
    assert np.array_equal(ref.read(3 * RATE, 320), np.full(320, 50, np.float32))


def test_the_reference_follows_an_output_that_stalled_and_plays_everything_later():
    """An underrun: from block 50 on, every block is heard 80 ms later than counted (the times
    jitter by 10 ms). After five such blocks the count moves, so the echo stays on its reference."""
    ref, rng = Reference(), np.random.default_rng(4)
    blocks = np.arange(100, dtype=np.float32).repeat(320).reshape(100, 320)
    for k, block in enumerate(blocks):
        ref.add(1.0 + k * 0.02 + (k >= 50) * 0.08 + rng.uniform(-0.01, 0.01), block, RATE)
    heard_at = round((1.0 + 70 * 0.02 + 0.08) * RATE)  # block 70, where it was really heard
    got = ref.read(heard_at - 320, 3 * 320)
    assert np.count_nonzero(got == 70) >= 160, "within 10 ms of where it was heard"


def test_played_blocks_are_copied_as_the_output_pulls_them():
    log = PlayedLog()
    block = np.ones(160, np.float32)
    log.played(2.0, block, 8000)
    block[:] = 0  # the output reuses its buffer
    [(t, got, rate)] = log.drain()
    assert (t, rate, float(got.sum())) == (2.0, 8000, 160.0)
    assert log.drain() == []


@pytest.mark.parametrize("delay_ms, rt60_ms", [(30, 0), (60, 300), (180, 250)])
def test_the_delay_is_found_in_a_reverberant_room(delay_ms, rt60_ms):
    ref = talk(4.0, seed=1)
    tracker = track(through(room_impulse(delay_ms, -6, rt60_ms), ref), ref)
    assert tracker.delay_s == pytest.approx(delay_ms / 1000, abs=0.001)


def test_the_delay_follows_a_new_path_and_ignores_silence_and_other_voices():
    ref = talk(8.0, seed=2)
    tracker = track(through(room_impulse(60, -6, 200), ref[:4 * RATE]), ref[:4 * RATE])
    assert tracker.delay_s == pytest.approx(0.060, abs=0.001)
    silent = np.zeros(2 * RATE, np.float32)
    track(talk(2.0, seed=3), silent, tracker)  # nothing playing: the user alone
    track(silent, silent, tracker)
    assert tracker.delay_s == pytest.approx(0.060, abs=0.001), "no measurement without her voice"
    track(talk(2.0, seed=4), ref[4 * RATE:6 * RATE], tracker)  # another voice, not an echo of hers
    assert tracker.delay_s == pytest.approx(0.060, abs=0.001)
    track(through(room_impulse(120, -6, 200), ref[6 * RATE:]), ref[6 * RATE:], tracker)
    assert tracker.delay_s == pytest.approx(0.120, abs=0.001), "the device was changed: a new delay"


def cancel(mic: np.ndarray, ref: np.ndarray, **kwargs) -> tuple[np.ndarray, EchoCanceller]:
    canceller = EchoCanceller(filter_ms=200, max_delay_ms=500, frame=BLOCK, **kwargs)
    pcm, out = to_int16(mic), []
    for k in range(0, len(pcm) - BLOCK + 1, BLOCK):
        canceller.reference.add(k / RATE, ref[k:k + BLOCK], RATE)  # played before the microphone hears it
        out.append(canceller.process(k, pcm[k:k + BLOCK]))
    return to_float(np.concatenate(out)), canceller


@pytest.mark.parametrize("gain_db", [-12, -6, 0])
def test_the_echo_is_removed_and_the_user_talking_over_it_is_kept(gain_db):
    ref = talk(7.0, seed=5)
    echo = through(room_impulse(80, gain_db, 250), ref)
    user = talk(1.5, seed=6, level=0.1)  # as loud as what plays: louder than the echo, or as loud at 0 dB
    at = 5 * RATE
    said = np.zeros_like(ref)
    said[at:at + len(user)] = user
    out, canceller = cancel(echo + said, ref)
    assert canceller.shift == round(0.080 * RATE) - canceller.lead, "aligned on the tracked delay"
    echo_only = slice(3 * RATE, at)  # once the filter has converged
    removed = db(echo[echo_only]) - db(out[echo_only])
    over = slice(at, at + len(user))
    before = db(user) - db(echo[over])
    after = db(user) - db(out[over] - said[over])
    print(f"echo {gain_db} dB: removed {removed:.1f} dB; user over what is left {before:.1f} -> {after:.1f} dB")
    assert removed >= 15
    assert after >= 8, "the user stands out of what is left of the echo (and of the filter's own damage)"
    assert np.corrcoef(out[over], user)[0, 1] >= 0.9, "the user's voice is not cancelled with the echo"


def test_an_echo_later_than_the_filter_is_long_is_cancelled_behind_the_tracked_delay():
    """The filter models 200 ms; the tracker shifts the reference so a 350 ms path fits in it."""
    ref = talk(5.0, seed=7)
    echo = through(room_impulse(350, -6, 150), ref)
    out, canceller = cancel(echo, ref)
    assert canceller.shift == round(0.350 * RATE) - canceller.lead
    tail = slice(3 * RATE, 5 * RATE - BLOCK)
    assert db(echo[tail]) - db(out[tail]) >= 15


@pytest.mark.parametrize("delay_ms", [2, 5])
def test_an_echo_path_shorter_than_the_lead_is_cancelled_too(delay_ms):
    """A fast sound server (PulseAudio's loopback measured 4.5 ms): the reference cannot be read
    earlier than the microphone, so it stays at 0 and the filter keeps what it learnt (it was reset
    at every block once the delay was known, and the echo went through whole)."""
    ref = talk(5.0, seed=8)
    echo = through(room_impulse(delay_ms, -6, 150), ref)
    out, canceller = cancel(echo, ref)
    assert canceller.tracker.delay_s == pytest.approx(delay_ms / 1000, abs=0.001) and canceller.shift == 0
    tail = slice(3 * RATE, 5 * RATE - BLOCK)
    assert db(echo[tail]) - db(out[tail]) >= 15


def test_while_nothing_plays_the_microphone_passes_untouched_and_her_next_words_are_cancelled_at_once():
    """Between replies the filter rests (nothing to cancel); what it learnt cancels the next reply
    from its first words."""
    first, second = talk(4.0, seed=9), talk(2.0, seed=10)
    ref = np.concatenate([first, np.zeros(3 * RATE, np.float32), second])
    user = np.zeros_like(ref)
    user[5 * RATE:6 * RATE] = talk(1.0, seed=11)  # the user, while she is silent
    echo = through(room_impulse(60, -6, 150), ref)
    out, _ = cancel(echo + user, ref)
    quiet = slice(int(4.5 * RATE), 7 * RATE)
    assert np.array_equal(to_int16(out[quiet]), to_int16((echo + user)[quiet])), "the user's words as they came"
    again = slice(7 * RATE, int(7.5 * RATE))  # her next reply's first half second
    assert db(echo[again]) - db(out[again]) >= 15


def test_the_room_impulse_has_the_coupling_as_its_energy_and_decays_by_its_rt60():
    h = room_impulse(50, -6, 300)
    assert 10 * np.log10(np.sum(h.astype(np.float64) ** 2)) == pytest.approx(-6, abs=0.01)
    assert np.flatnonzero(h)[0] == 800, "the direct sound, 50 ms late"
    early, late = h[850:850 + 800], h[800 + 4000:800 + 4800]  # 3-53 ms and 250-300 ms after it
    assert db(early) - db(late) == pytest.approx(60 * (0.275 - 0.028) / 0.3, abs=4)
    assert np.array_equal(h, room_impulse(50, -6, 300)), "the same room every run"


class _Output:
    """What EchoPath needs of a FileOutput: a rate, a tap, catch_up."""

    def __init__(self) -> None:
        self.rate = RATE
        self.tap: Ring | None = None
        self.pending: list[np.ndarray] = []

    def catch_up(self, now: float) -> None:
        while self.pending:
            self.tap.write(self.pending.pop(0))


def test_the_echo_path_plays_through_the_room_block_by_block():
    played = talk(1.0, seed=8)
    path, output = EchoPath(40, -6, 200), _Output()
    path.connect(output)
    heard = []
    for k in range(0, len(played), BLOCK):
        output.pending.append(played[k:k + BLOCK])
        heard.append(to_float(path.mix(np.zeros(BLOCK, np.int16), (k + BLOCK) / RATE)))
    want = through(path.impulse, played)
    assert np.max(np.abs(np.concatenate(heard) - want)) < 2e-4


@pytest.mark.parametrize("text, echo", [("50:-12", (50.0, -12.0, 0.0)), ("50:-6:250", (50.0, -6.0, 250.0))])
def test_the_echo_option_takes_a_delay_a_gain_and_optionally_a_reverb_time(text, echo):
    from sidecar.__main__ import parser

    assert parser().parse_args(["run", "--echo", text]).echo == echo


@pytest.mark.parametrize("text, says", [("50", "expected DELAY_MS:GAIN_DB or DELAY_MS:GAIN_DB:RT60_MS"),
                                        ("50:-6:room", "expected DELAY_MS:GAIN_DB"),
                                        ("5:-6", "echo delay 5 ms must be 20-1000"),
                                        ("50:-6:5000", "echo reverb time 5000 ms must be 0-2000")])
def test_a_bad_echo_option_says_what_is_expected(text, says, capsys):
    from sidecar.__main__ import parser

    with pytest.raises(SystemExit):
        parser().parse_args(["run", "--echo", text])
    assert says in capsys.readouterr().err


def test_a_delay_that_wanders_a_little_keeps_the_filter_and_a_new_path_moves_it():
    ref = talk(12.0, seed=11)
    part = 4 * RATE
    echo = np.concatenate([through(room_impulse(d, -6, 150), ref)[k * part:(k + 1) * part]
                           for k, d in enumerate((40, 55, 200))])  # a sound server's drift, then a new device
    canceller = EchoCanceller(filter_ms=240, max_delay_ms=500, frame=BLOCK)
    pcm, out, shifts = to_int16(echo), [], []
    for k in range(0, len(pcm) - BLOCK + 1, BLOCK):
        canceller.reference.add(k / RATE, ref[k:k + BLOCK], RATE)
        out.append(canceller.process(k, pcm[k:k + BLOCK]))
        shifts.append(canceller.shift)
    out = to_float(np.concatenate(out))
    per_part = part // BLOCK
    assert len(set(shifts[per_part // 2:2 * per_part])) == 1, "the reference stays put through the drift"
    assert shifts[-1] == round(0.200 * RATE) - canceller.lead
    for k in range(3):
        last = slice((k + 1) * part - RATE, (k + 1) * part - BLOCK)
        assert db(echo[last]) - db(out[last]) >= 15, f"part {k}: the echo is cancelled again within 3 s"


def test_a_file_output_has_played_up_to_each_microphone_blocks_end_when_it_is_mixed(tmp_path):
    """The simulated echo path and the canceller both ask the output to catch up to the end of
    a microphone block; a block missing from the reference is echo that can never be cancelled
    (float rounding once skipped 13 % of them: 4.02 + 0.02 < 64640 / 16000)."""
    import asyncio

    from sidecar.clock import Clock
    from sidecar.voice.playback import FileOutput

    async def play() -> list[float]:
        output = FileOutput(tmp_path / "out.wav", RATE)
        output.buffer.played = log = PlayedLog()
        await output.open(Clock())
        ends = []
        for n in range(0, 2000 * BLOCK, BLOCK):
            ready = n / RATE + BLOCK / RATE
            output.catch_up(ready)
            ends.append(max(t + len(b) / rate for t, b, rate in log.drain()) - ready if n else 0.0)
        await output.close()
        return ends

    assert max(abs(e) for e in asyncio.run(play())) < 1e-9


@pytest.mark.parametrize("ppm", [120.0, -120.0])
def test_the_timeline_follows_a_microphone_whose_clock_drifts_from_the_computers(ppm):
    """An hour of 20 ms blocks arriving 5-15 ms after capture, the sample clock `ppm` off the
    computer's: steered, the timeline stays within 3 ms of the samples (unsteered: 0.43 s)."""
    steer, rng = Steer(), np.random.default_rng(1)
    slewed, worst = 0.0, 0.0
    for k in range(1, 180_000):
        sample_t = k * 0.02
        now = sample_t * (1 + ppm * 1e-6) + 0.005 + 0.01 * rng.random() - slewed
        slewed += steer.feed(now, sample_t)
        if k > 1000:
            worst = max(worst, abs(now - sample_t - 0.005))
    assert worst < 0.013, f"the timeline drifted {worst * 1000:.0f} ms from the microphone's samples"


def test_a_long_silence_rests_the_tracker_and_her_next_words_find_a_path_that_moved_meanwhile():
    """Between replies nothing is measured (the idle microphone path's biggest cost); the path
    the sound server took meanwhile is found from her next words."""
    first, second = talk(4.0, seed=12), talk(4.0, seed=13)
    gap = np.zeros(4 * RATE, np.float32)
    ref = np.concatenate([first, gap, second])
    echo = np.concatenate([through(room_impulse(60, -6, 150), first), gap, through(room_impulse(200, -6, 150), second)])
    canceller = EchoCanceller(filter_ms=200, max_delay_ms=500, frame=BLOCK)
    fed = []
    feed = canceller.tracker.feed
    canceller.tracker.feed = lambda mic, r: fed.append(len(mic)) or feed(mic, r)
    pcm = to_int16(echo)
    out = []
    for k in range(0, len(pcm) - BLOCK + 1, BLOCK):
        canceller.reference.add(k / RATE, ref[k:k + BLOCK], RATE)
        out.append(canceller.process(k, pcm[k:k + BLOCK]))
    resting = len(gap) - canceller.tracker.reach - round(0.2 * RATE)  # the gap, less the reach and the filter
    assert sum(fed) <= len(pcm) - resting, "the tracker was fed through the silence"
    assert canceller.tracker.delay_s == pytest.approx(0.200, abs=0.002)
    tail = slice(len(pcm) - 2 * RATE, len(pcm) - BLOCK)
    assert db(echo[tail]) - db(to_float(np.concatenate(out))[tail]) >= 15


def test_a_window_with_only_the_end_of_her_reply_in_it_is_not_measured():
    """Through PulseAudio such windows (a quarter her fading voice, then digital silence) peaked at
    random lags, twice in a row at the search's edge: a 500 ms path was taken after a reply and the
    next reply's start went through uncancelled. Whatever such a window shows, it is not measured;
    her first words filling half a window are."""
    reply = talk(2.25, seed=14)  # measured every 0.5 s: the window ending at 3 s holds its last quarter second
    reply[-RATE // 4:] = np.convolve(np.random.default_rng(14).standard_normal(RATE // 4), np.ones(4) / 4, "same") / 10
    ref = np.concatenate([reply, np.zeros(2 * RATE, np.float32)])
    tracker = DelayTracker()
    heard = through(room_impulse(20, -12, 150), ref)
    cut = int(2.75 * RATE)
    track(heard[:cut], ref[:cut], tracker)
    assert tracker.delay_s == pytest.approx(0.020, abs=0.001)
    measured = len(tracker.measures)
    track(heard[cut:], ref[cut:], tracker)
    assert len(tracker.measures) == measured, "a window three quarters silent was measured"
    started = DelayTracker()
    ref = np.concatenate([np.zeros(RATE // 2, np.float32), talk(1.0, seed=15)])
    track(through(room_impulse(20, -12, 150), ref), ref, started)
    assert [m.delay_s for m in started.measures] == pytest.approx([0.020, 0.020], abs=0.001)


def test_a_peak_at_the_edge_of_the_lags_searched_is_not_a_path():
    ref = talk(4.0, seed=16)
    tracker = track(through(room_impulse(500, -6, 0), ref), ref, DelayTracker(max_delay_s=0.5))
    assert tracker.delay_s is None and tracker.measures == []
    tracker = track(through(room_impulse(480, -6, 0), ref), ref, DelayTracker(max_delay_s=0.5))
    assert tracker.delay_s == pytest.approx(0.480, abs=0.001)


def test_a_new_path_is_taken_only_when_clearly_measured_and_a_faint_one_leaves_the_held_path():
    """Two windows half the same audio agree on a chance peak as readily as on a path: a peak
    barely clear of the rest does not move the filter (an echo that faint, near the room's noise,
    matters little); a clear one does."""
    ref = talk(9.0, seed=17)
    noise = np.random.default_rng(99).standard_normal(len(ref)).astype(np.float32) * 3e-3
    tracker = track(through(room_impulse(40, -6, 150), ref[:3 * RATE]), ref[:3 * RATE])
    assert tracker.delay_s == pytest.approx(0.040, abs=0.001)
    faint = slice(3 * RATE, 6 * RATE)
    track(through(room_impulse(120, -33, 150), ref[faint]) + noise[faint], ref[faint], tracker)
    assert {round(m.delay_s, 3) for m in tracker.measures[-4:]} == {0.120}, "the faint path was measured"
    assert max(m.clarity for m in tracker.measures[-4:]) < tracker.move_clarity
    assert tracker.delay_s == pytest.approx(0.040, abs=0.001), "a faint path moved the filter"
    clear = slice(6 * RATE, 9 * RATE)
    track(through(room_impulse(120, -6, 150), ref[clear]), ref[clear], tracker)
    assert tracker.delay_s == pytest.approx(0.120, abs=0.001)
