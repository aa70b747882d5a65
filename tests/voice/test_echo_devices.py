"""The echo guard through real sound devices: Stella's voice goes out of the "speaker" sink and
comes back into the "mic" sink through PulseAudio's loopback (12 dB down, as a laptop's own
speaker heard by its microphone), so every reply is heard by the microphone it listens on.

Twenty spoken questions, each asked once the previous reply is over: none of the replies may
interrupt itself. Then the user talks over a reply: that must stop it and be answered.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sidecar.voice.audio import RATE, resample, to_int16
from tests.desktop.polling import wait_for

from .conftest import ROOT
from .speech import QUESTIONS, concat, heard_fraction, silence
from .test_devices import PULSE_RATE, read_events, wait_for_event

pytestmark = [pytest.mark.audio, pytest.mark.llama]

ECHO_DB = -12
REPLIES = 20


@contextmanager
def loopback(env: dict[str, str], source: str, sink: str, gain_db: float) -> Iterator[None]:
    """PulseAudio plays what `source` hears into `sink`, `gain_db` quieter, while the block runs."""
    module = subprocess.run(["pactl", "load-module", "module-loopback", f"source={source}", f"sink={sink}",
                             "latency_msec=30", "source_dont_move=true", "sink_dont_move=true"],
                            env=env, capture_output=True, text=True, check=True).stdout.strip()
    try:
        listing = subprocess.run(["pactl", "list", "sink-inputs"], env=env, capture_output=True, text=True,
                                 check=True).stdout
        inputs = [block for block in listing.split("Sink Input #")[1:]
                  if re.search(rf"Owner Module: {module}\b", block)]
        assert inputs, f"the loopback module {module} has no sink input:\n{listing}"
        subprocess.run(["pactl", "set-sink-input-volume", inputs[0].split()[0], f"{10 ** (gain_db / 20):.4f}"],
                       env=env, check=True)  # a linear amplitude factor
        yield
    finally:
        subprocess.run(["pactl", "unload-module", module], env=env, capture_output=True)


def wait_until(log: Path, proc: subprocess.Popen, what: str, test, timeout: float) -> list[dict]:  # noqa: ANN001
    """The events once `test(events)` holds; fails at once if the sidecar exits."""
    def seen() -> list[dict] | None:
        assert proc.poll() is None, f"the sidecar exited ({proc.returncode}), see {log.with_suffix('.log')}"
        found = read_events(log)
        return found if test(found) else None

    return wait_for(seen, timeout, what)


def say(env: dict[str, str], mic: str, audio) -> None:  # noqa: ANN001
    subprocess.run(["pacat", f"--device={mic}", "--format=s16le", f"--rate={PULSE_RATE}", "--channels=1"],
                   input=to_int16(resample(audio, RATE, PULSE_RATE)).tobytes(), env=env, check=True, timeout=30)


# twenty spoken turns in real time, each with whisper, the model and piper: 400 s at load 8 on the
# shared 2-core machine, past the suite's 600 s limit at load 13 (the turns are slower, not wrong)
@pytest.mark.timeout(1800)
def test_stellas_own_voice_through_the_microphone_never_interrupts_her_and_the_user_still_does(
        pulseaudio, gateway, piper, subprocess_env, tmp_path):
    env = {**subprocess_env, "PULSE_SERVER": pulseaudio.env["PULSE_SERVER"]}
    log = tmp_path / "events.jsonl"
    # No history in the prompts: after a few "I don't know." replies the small model answers every
    # question so, the story request too, and a three-word reply is over before the user can talk
    # over it (a run failed so: 15 replies in a row). What is tested here is the echo path.
    run_env = {**env, "STELLA_CHAT__MAX_TOKENS": "40", "STELLA_CHAT__HISTORY_TOKENS": "0"}
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(REPLIES)]
    with loopback(env, f"{pulseaudio.speaker}.monitor", pulseaudio.mic, ECHO_DB):
        # its log goes to a file: a pipe nobody reads fills up over twenty turns and blocks it
        proc = subprocess.Popen([sys.executable, "-m", "sidecar", "run", "--events", str(log), "--server", gateway.url,
                                 "--wake", "hey_jarvis"], cwd=ROOT, env=run_env, stdout=subprocess.DEVNULL,
                                stderr=log.with_suffix(".log").open("w"))
        try:
            wait_for_event(log, "input_start", proc, 60)
            heard_in_full = 0
            for i, question in enumerate(questions, start=1):
                say(env, pulseaudio.mic, concat(silence(0.3), piper("Hey Jarvis."), silence(0.2), piper(question),
                                                silence(0.3)))
                seen = wait_until(log, proc, f"reply {i} over", lambda s, n=i: sum(
                    e["type"] == "turn_end" for e in s) >= n, 90)
                heard_in_full += any(e["type"] == "audio_out" and e["turn"] == i for e in seen)
            false = [e["t"] for e in read_events(log) if e["type"] == "interruption"]

            # the user talks over the next reply, without the wake word. The small model sometimes
            # answers in a second and is done before the user has started: the remark is then
            # said after her reply (a turn of its own inside the wake word's window, or ignored).
            # Then ask again.
            for _ in range(3):
                turn = sum(e["type"] == "user_turn" for e in read_events(log)) + 1
                say(env, pulseaudio.mic, concat(silence(0.3), piper("Hey Jarvis."), silence(0.2),
                                                piper("Tell me a long story about a dragon.")))
                wait_until(log, proc, "Stella speaking", lambda s, n=turn: any(
                    e["type"] == "speaking" and e["speaking"] and e["turn"] == n for e in s), 60)
                time.sleep(0.4)
                transcripts = sum(e["type"] == "transcript" for e in read_events(log))
                say(env, pulseaudio.mic, piper("Where do penguins live?"))
                seen = wait_until(log, proc, "the talk-over transcribed", lambda s, k=transcripts: sum(
                    e["type"] == "transcript" for e in s) > k, 60)
                if any(e["type"] == "heard" and e["turn"] == turn and e["interrupted"] for e in seen):
                    seen = wait_until(log, proc, "the talk-over answered", lambda s, n=turn: any(
                        e["type"] == "user_turn" and e["turn"] == n + 1 for e in s), 60)
                    break
                wait_until(log, proc, "every turn so far answered", lambda s: {
                    e["turn"] for e in s if e["type"] == "user_turn"} <= {
                    e["turn"] for e in s if e["type"] == "turn_end"}, 60)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(30) == 0, log.with_suffix(".log").read_text()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    print(f"echo through the devices at {ECHO_DB} dB: {heard_in_full} replies, {len(false)} false barge-ins")
    assert heard_in_full == REPLIES
    assert false == [], f"Stella's own voice interrupted her at {false}"
    assert [e["reason"] for e in seen if e["type"] == "interruption"] == ["barge_in"], "the user was not heard"
    talk_over = next(e for e in seen if e["type"] == "user_turn" and e["turn"] == turn + 1)
    # transcribed from the echo-cancelled microphone: none of Stella's words in it
    print(f"the talk-over was heard as {talk_over['text']!r}")
    assert heard_fraction("where do penguins live", talk_over["text"]) >= 0.75, talk_over
