"""The whole app as a user meets it: the real `stella` window under Xvfb, a PulseAudio sound card
(null sinks `stella_mic` and `stella_speaker`), the local gateway and llama-server.

"Hey Jarvis, what is your name?" is spoken (piper) into the microphone sink; Stella's answer is
recorded from the speaker sink's monitor and transcribed by whisper, and the screen must show the
conversation. Prints how long after the end of the question her voice started.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from remote_api.shared.models.provision import Models
from sidecar.voice.asr import Transcriber
from sidecar.voice.audio import RATE, resample
from tests import services
from tests.desktop import screen
from tests.desktop.app_window import stella
from tests.desktop.gateway import Gateway
from tests.desktop.polling import wait_for
from tests.sound import PULSE_RATE, Recorder, play
from tests.voice.speech import Piper, concat, hear_her, heard_fraction, silence

pytestmark = [pytest.mark.llama, pytest.mark.keyring, pytest.mark.display, pytest.mark.audio]

QUESTION = "What is your name?"
LISTENING = "document.getElementById('wake').dataset.voice === 'ready'"
WATCH = """(() => {
  window.e2e = {states: []};
  const state = document.getElementById('state');
  new MutationObserver(() => e2e.states.push(state.dataset.state)).observe(state, {attributes: true});
  return true;
})()"""
# Stella's reply once she has said all of it: the final bubble, and the state back to idle.
REPLY = """(() => {
  const b = document.querySelector('.bubble.assistant:last-child');
  return b && !b.classList.contains('partial') && e2e.states.includes('speaking')
    && e2e.states.at(-1) === 'idle' && b.textContent;
})()"""
ASKED = "[...document.querySelectorAll('.bubble.user')].at(-1)?.textContent"


def changed_share(before: np.ndarray, after: np.ndarray) -> float:
    """The share of pixels that visibly changed."""
    return float((np.abs(after.astype(np.int16) - before.astype(np.int16)).max(axis=2) > 40).mean())


def test_a_spoken_question_is_answered_aloud_and_shown_in_the_window(
        xvfb: services.Xvfb, gateway: Gateway, engine_env: dict[str, str], pulseaudio: services.PulseAudio,
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    sound = {"PULSE_SERVER": pulseaudio.env["PULSE_SERVER"]}
    env = {**engine_env, **sound, "PULSE_SOURCE": f"{pulseaudio.mic}.monitor", "PULSE_SINK": pulseaudio.speaker,
           "STELLA_VOICE__WAKE_ENGINE": "openwakeword", "STELLA_VOICE__WAKE_MODEL": "hey_jarvis",
           "STELLA_CHAT__MAX_TOKENS": "24"}
    piper = Piper()
    speech = concat(silence(0.5), piper("Hey Jarvis."), silence(0.3), piper(QUESTION))
    speaker = Recorder({**engine_env, **sound}, f"{pulseaudio.speaker}.monitor", latency_ms=10)
    try:
        with stella(xvfb.display, gateway.url, tmp_path / "stella.db", env, voice="auto") as window:
            window.page.wait(LISTENING, 180)  # the models loaded and the microphone delivers
            wait_for(lambda: speaker.blocks, 10, "the speaker's monitor delivering")
            window.page.eval(WATCH)
            before = window.look("#transcript")

            play({**engine_env, **sound}, pulseaudio.mic, speech, timeout=60)
            asked_at = time.monotonic()  # pacat returns once the sink has played it all
            reply = window.page.wait(REPLY, 120)
            voice_at = speaker.first_sound_after(asked_at)
            wait_for(lambda: speaker.blocks[-1][0] > time.monotonic() - 0.05 and speaker.first_sound_after(
                time.monotonic() - 0.5) is None, 10, "the speaker falling silent")

            shot = screen.grab(xvfb.display)
            x, y, w, h = window.geometry()
            Image.fromarray(shot[y:y + h, x:x + w]).save(tmp_path / "end_to_end.png")
            print(f"screenshot: {tmp_path / 'end_to_end.png'}")
            after = window.look("#transcript", shot)
            asked = window.page.eval(ASKED)
            window.close_and_check_nothing_is_left()
    finally:
        recorded = speaker.stop()

    assert heard_fraction(QUESTION, asked) >= 0.75, f"the window shows the question as {asked!r}"
    assert voice_at is not None, "no reply came out of the speaker"
    print(f"end of the question -> first reply audio on the speaker: {voice_at - asked_at:.2f} s")
    assert changed_share(before, after) > 0.01, "the conversation does not show in the window"

    audio = resample(recorded, PULSE_RATE, RATE)
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    whisper = Transcriber(Models().path("whisper-tiny.en"), threads=1)
    heard = hear_her(whisper, audio[max(0, loud[0] - RATE // 5):loud[-1] + RATE // 5])
    print(f"Stella wrote {reply!r} and said {heard!r}")
    assert heard_fraction(reply, heard) >= 0.6, (reply, heard)

    # The app's log (its stderr, with a window) holds the spoken turn's timeline: times and counts only.
    logged = [json.loads(m[1]) for m in re.finditer(r"turn timeline (\{.*\})$", capfd.readouterr().err, re.M)]
    assert logged, "the app's log has no turn timeline"
    stages = logged[-1]["latency_ms"]
    assert {"hangover", "asr", "llm_first_token", "first_sentence", "capture_lag", "tts", "prebuffer",
            "device_latency", "total"} <= stages.keys(), stages
    assert logged[-1]["prompt"]["cached"] > 0, "the spoken turn's prompt was not served from the warm cache"
    print(f"the app's timeline: {stages}, prompt {logged[-1]['prompt']}")
