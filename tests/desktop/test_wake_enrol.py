"""Teaching her the user's voice, in the real `stella` window under Xvfb: Settings → "Teach her my
voice", three takes of her name said into the PulseAudio microphone sink, and from then on another
voice's "Hey Stella" (which woke her before) no longer does while the taught voice's does; the
voice is kept in the encrypted store across a restart and can be forgotten. Real engine, whisper,
hey_stella model and verifier."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests import services
from tests.desktop.app_window import stella
from tests.desktop.gateway import Gateway
from tests.sound import play
from tests.voice.speech import Piper, concat, espeak, silence

pytestmark = [pytest.mark.llama, pytest.mark.keyring, pytest.mark.display, pytest.mark.audio]

LISTENING = "document.getElementById('wake').dataset.voice === 'ready'"
OPEN = "(() => { document.getElementById('open-settings').click(); return true; })()"
TEACH = "(() => { document.getElementById('enrol-start').click(); return true; })()"
FORGET = "(() => { document.getElementById('enrol-forget').click(); return true; })()"
ENROL_NOTE = "document.getElementById('enrol-note').textContent"
TRY_NOTE = "document.getElementById('wake-try-note').textContent"
CLEAR_TRY = "(() => { document.getElementById('wake-try-note').textContent = ''; return true; })()"
FORGET_SHOWN = "!document.getElementById('enrol-forget').hidden"
WOKE = "She heard her name"  # (the page's own tick after it: the page's automation takes ASCII only)
REFUSED = "That did not sound like the voice she was taught"


def test_a_taught_voice_wakes_her_another_no_longer_does_and_it_is_kept(
        xvfb: services.Xvfb, gateway: Gateway, engine_env: dict[str, str], pulseaudio: services.PulseAudio,
        tmp_path: Path) -> None:
    sound = {"PULSE_SERVER": pulseaudio.env["PULSE_SERVER"]}
    env = {**engine_env, **sound, "PULSE_SOURCE": f"{pulseaudio.mic}.monitor", "PULSE_SINK": pulseaudio.speaker,
           "STELLA_VOICE__WAKE_ENGINE": "phrase", "STELLA_CHAT__MAX_TOKENS": "8"}
    piper = Piper()
    someone_else = espeak("Hey Stella, what time is it?", voice="en-us+m3")

    def say(window, audio: np.ndarray, note: str) -> None:
        window.page.eval(CLEAR_TRY)
        play({**engine_env, **sound}, pulseaudio.mic, concat(silence(0.3), audio, silence(1.2)), timeout=60)
        window.page.wait(f"{TRY_NOTE}.startsWith({note!r})", 30)

    with stella(xvfb.display, gateway.url, tmp_path / "stella.db", env, voice="auto") as window:
        window.page.wait(LISTENING, 180)
        window.page.eval(OPEN)
        assert not window.page.eval(FORGET_SHOWN), "no voice taught yet"
        say(window, someone_else, WOKE)  # before: anyone's "Hey Stella" wakes her

        window.page.eval(TEACH)
        window.page.wait(f"{ENROL_NOTE}.includes('0 of 3 heard')", 10)
        takes = [concat(piper(text), silence(1.5)) for text in ("Hey Stella.", "Hey Stella!", "Hey, Stella.")]
        play({**engine_env, **sound}, pulseaudio.mic, concat(silence(0.5), *takes), timeout=60)
        window.page.wait(f"{ENROL_NOTE}.startsWith('She knows your voice')", 60)
        assert window.page.eval(FORGET_SHOWN)

        say(window, someone_else, REFUSED)
        say(window, piper("Hey Stella, what time is it?"), WOKE)
        window.close_and_check_nothing_is_left()

    with stella(xvfb.display, gateway.url, tmp_path / "stella.db", env, voice="auto") as window:
        window.page.wait(LISTENING, 180)
        window.page.wait(FORGET_SHOWN, 10)  # kept in the encrypted store
        window.page.eval(OPEN)
        say(window, someone_else, REFUSED)
        window.page.eval(FORGET)
        window.page.wait(f"!({FORGET_SHOWN})", 10)
        window.page.wait(LISTENING, 60)  # the pipeline rebuilt without the voice
        say(window, someone_else, WOKE)
        window.close_and_check_nothing_is_left()
