"""Models loaded after listening starts: the models the engine loads before "ready to listen" leave
her voice out, and the first reply is still spoken in it (not espeak-ng's fallback); the n-best
check's own model waits for the first check and then reads as the model loaded at once."""

from __future__ import annotations

import asyncio
import threading

from remote_api.shared.models.provision import Models
from sidecar.config import VoiceConfig
from sidecar.frames import SentenceFrame, SpeechAudioFrame
from sidecar.pipeline import Direction
from sidecar.voice.asr_ct2 import CT2Transcriber
from sidecar.voice.deferred import DeferredReadings, DeferredVoice
from sidecar.voice.tts import TTS, PiperSynth
from sidecar.voice.wake_nbest import NameHypotheses
from sidecar.voice_loop import LoadedModels

from .speech import espeak


def test_listening_models_leave_piper_for_later_and_the_first_reply_is_still_hers():
    loaded = LoadedModels.load(VoiceConfig(wake_engine="off"), defer_voice=True)
    assert isinstance(loaded.voice, DeferredVoice) and not loaded.voice.loaded, "piper waits until after ready"
    assert loaded.fallback_voice is not None and loaded.fallback_voice.name == "espeak-ng"

    tts = TTS(loaded.voice, loaded.fallback_voice)
    out: list[SpeechAudioFrame] = []

    async def push(frame, direction=Direction.DOWN):  # noqa: ANN001, ANN202
        if isinstance(frame, SpeechAudioFrame):
            out.append(frame)

    tts.push = push  # type: ignore[method-assign] - collect what TTS sends on
    asyncio.run(tts.process(SentenceFrame(turn=1, index=0, text="Hello there, I am Stella."), Direction.DOWN))
    (spoken,) = out
    assert spoken.engine == "piper" and spoken.rate == 22050 and len(spoken.audio) > spoken.rate // 2
    assert loaded.voice.loaded


def test_a_reply_during_the_background_warm_up_waits_for_the_same_voice():
    loads: list[int] = []
    started = threading.Event()

    def load() -> PiperSynth:
        started.set()
        loads.append(1)
        return PiperSynth(Models().path("piper-joe"))

    voice = DeferredVoice("piper", load)
    warm = threading.Thread(target=voice.warm)
    warm.start()
    started.wait(30)
    audio, rate = voice("Hi.")  # the first reply comes while the warm-up is loading
    warm.join(30)
    assert loads == [1], "one copy of the voice"
    assert rate == 22050 and len(audio) > 0


def test_the_n_best_model_loads_at_the_first_check_and_reads_as_one_loaded_at_once():
    loaded = LoadedModels.load(VoiceConfig(wake_engine="phrase", asr_engine="whisper.cpp"))
    assert loaded.hypotheses is not None
    deferred = loaded.hypotheses.model
    assert isinstance(deferred, DeferredReadings) and not deferred.loaded, "no second whisper until needed"
    clip = espeak("Hey Stella, what time is it?", speed=170)
    eager = NameHypotheses(CT2Transcriber(Models().path(VoiceConfig().ct2_model), 1), 4)
    assert loaded.hypotheses(clip, "Hey Stella.") == eager(clip, "Hey Stella.")
    assert deferred.loaded
