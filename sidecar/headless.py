"""Running the whole voice loop without a window: from a WAV file or the default devices.

    python -m sidecar run --audio-in in.wav --audio-out out.wav --events events.jsonl --server URL

in.wav is fed at real-time pace, as a microphone would deliver it (`fast` drops the pacing
for tests); out.wav shares its timeline — sample 0 is the same instant, silence where nothing
plays — and the run ends when the last turn is over. Without --audio-in/--audio-out the
default microphone/speaker are used and the run lasts until Ctrl-C. `texts` are typed turns
(no microphone needed); `push_to_talk` holds the button over (start, end) spans of in.wav;
`echo` = (delay ms, gain dB, reverb time RT60 ms) feeds out.wav back into the input, as a
speaker heard by the microphone in a room (to test barge-in and echo cancellation against
Stella's own voice).

Besides the turn milestones the event log has `mouth` levels every 20 ms of speech and `blink`
cues (both on the audio clock), `interruption` (barge_in | stop), `heard` (what the user heard
of a reply, `interrupted` if cut short), `outfit` and `volume` requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import wave
from dataclasses import dataclass, field, replace
from pathlib import Path

from remote_api.client import LinkClient
from sidecar.clock import Clock
from sidecar.config import WAKE_MODELS, AppConfig
from sidecar.conversation import Conversation
from sidecar.events import EventLog, TurnTimeline
from sidecar.frames import EndFrame, UserTextFrame
from sidecar.pipeline import Observer, Source, VoiceError
from sidecar.voice.audio import RATE
from sidecar.voice.capture import DeviceSource, FileSource
from sidecar.voice.playback import DeviceOutput, FileOutput, Output
from sidecar.voice.simulated_echo import EchoPath
from sidecar.voice_loop import LoadedModels, build


@dataclass
class Options:
    audio_in: Path | None = None
    audio_out: Path | None = None
    events: Path | None = None
    texts: list[str] = field(default_factory=list)
    push_to_talk: list[tuple[float, float]] = field(default_factory=list)
    fast: bool = False
    echo: tuple[float, ...] | None = None  # (delay ms, gain dB[, RT60 ms]) from out.wav back into the input


def with_wake(config: AppConfig, wake: str) -> AppConfig:
    """`--wake`: an acoustic model's name ("hey_jarvis", "hey_stella"), "off", or any other text as the
    custom phrase ("hey stella": whisper's phrase engine, with the acoustic model beside it)."""
    name = wake.strip().lower()
    if name in WAKE_MODELS:
        voice = replace(config.voice, wake_engine="openwakeword", wake_model=name)
    elif name == "off":
        voice = replace(config.voice, wake_engine="off")
    else:
        voice = replace(config.voice, wake_engine="phrase", wake_phrase=wake.strip())
    return replace(config, voice=voice)


def _source(config: AppConfig, options: Options, output: Output) -> Source:
    if options.audio_in is not None or options.texts:
        echo = None
        if options.echo is not None:
            if not isinstance(output, FileOutput):
                raise VoiceError("a simulated echo (--echo) needs --audio-out: the file it echoes")
            echo = EchoPath(*options.echo)
            echo.connect(output)
        return FileSource(options.audio_in, config.voice.block_ms, push_to_talk=options.push_to_talk,
                          fast=options.fast, echo=echo)
    return DeviceSource(config.voice.input_device, config.voice.block_ms)


def _output(config: AppConfig, options: Options) -> Output:
    if options.audio_out is None:
        return DeviceOutput(config.voice.output_device, config.voice.output_rate, config.voice.block_ms)
    rate = config.voice.output_rate or RATE
    if options.audio_in is not None and not config.voice.output_rate:
        with contextlib.suppress(wave.Error, OSError), wave.open(str(options.audio_in)) as w:
            rate = w.getframerate()  # same rate as in.wav: sample k of both files is the same instant
    return FileOutput(options.audio_out, rate, config.voice.block_ms)


async def run(config: AppConfig, options: Options, loaded: LoadedModels | None = None, *,
              conversation: Conversation | None = None, observers: list[Observer] = ()) -> None:
    """One session; raises VoiceError/LinkError with a message for the user on failure.

    `conversation` (default: a new one) holds the history; `observers` see every frame too.
    """
    output = _output(config, options)
    source = _source(config, options, output)
    loaded = loaded or await asyncio.to_thread(LoadedModels.load, config.voice)
    events = EventLog(options.events)
    timeline = TurnTimeline(lambda frame: events(None, frame))
    try:
        async with LinkClient(config.server_url, config.link) as link:
            pipeline = build(config, loaded, source, output, link, Clock(), observers=[events, timeline, *observers],
                             conversation=conversation)
            for text in options.texts:
                await pipeline.queue(UserTextFrame(text=text, t=0.0))
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(sig, lambda: asyncio.ensure_future(pipeline.queue(EndFrame())))
            try:
                await pipeline.run()
            finally:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    with contextlib.suppress(NotImplementedError, RuntimeError):
                        loop.remove_signal_handler(sig)
    finally:
        events.close()
