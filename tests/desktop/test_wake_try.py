"""Settings' "try it" meter for the wake word, in the real `stella` window under Xvfb: her name said
into the PulseAudio microphone sink fills it over the floor's mark and says she heard it; other words
stay under the mark and say so. The phrase engine ("hey stella", the default: the meter shows the
hey_stella model's score), real whisper, real engine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sidecar.config import VoiceConfig
from tests import services
from tests.desktop.app_window import stella
from tests.desktop.gateway import Gateway
from tests.sound import play
from tests.voice.speech import Piper, concat, silence

pytestmark = [pytest.mark.llama, pytest.mark.keyring, pytest.mark.display, pytest.mark.audio]

LISTENING = "document.getElementById('wake').dataset.voice === 'ready'"
OPEN = "(() => { document.getElementById('open-settings').click(); return true; })()"
NOTE = "document.getElementById('wake-try-note').textContent"
METER = "document.getElementById('wake-meter').value"
FLOOR = VoiceConfig().wake_acoustic_floor  # the mark a name whisper wrote must reach
TRY_SHOWN = "!document.getElementById('wake-try').hidden && getComputedStyle(document.getElementById('wake-try'))" \
            ".display !== 'none'"


def test_the_wake_meter_shows_how_surely_she_heard_her_name(
        xvfb: services.Xvfb, gateway: Gateway, engine_env: dict[str, str], pulseaudio: services.PulseAudio,
        tmp_path: Path) -> None:
    sound = {"PULSE_SERVER": pulseaudio.env["PULSE_SERVER"]}
    env = {**engine_env, **sound, "PULSE_SOURCE": f"{pulseaudio.mic}.monitor", "PULSE_SINK": pulseaudio.speaker,
           "STELLA_VOICE__WAKE_ENGINE": "phrase", "STELLA_CHAT__MAX_TOKENS": "8"}
    piper = Piper()
    with stella(xvfb.display, gateway.url, tmp_path / "stella.db", env, voice="auto") as window:
        window.page.wait(LISTENING, 180)
        window.page.eval(OPEN)
        window.page.wait(TRY_SHOWN, 10)
        assert window.page.eval(METER) == 0

        play({**engine_env, **sound}, pulseaudio.mic, concat(silence(0.3), piper("The bus was late again."),
                                                             silence(1.0)), timeout=60)
        window.page.wait(f"{NOTE} === 'She did not hear her name in that.'", 30)
        assert window.page.eval(METER) < FLOOR, "other words stay under the floor's mark"

        play({**engine_env, **sound}, pulseaudio.mic, concat(silence(0.3), piper("Hey Stella."), silence(1.0)),
             timeout=60)
        window.page.wait(f"{NOTE}.startsWith('She heard her name')", 30)  # (the page's own ✓ after it)
        assert window.page.eval(METER) > FLOOR, "her own name, clearly said, is over the floor's mark"
        assert re.fullmatch(r"Her name’s model: (0\.\d\d|1\.00) \(counts from " + re.escape(f"{FLOOR})"),
                            window.page.eval("document.getElementById('wake-meter').title")), "the figures, on hover"
        window.close_and_check_nothing_is_left()
