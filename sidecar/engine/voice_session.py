"""The voice session: a pipeline for the current settings, rebuilt whenever they change.

The voice loop (sidecar/voice_loop.py) runs when the voice models load and the sound devices are
there; meanwhile, or without them, a typed-turns pipeline made of the same turn taker and
reply processors serves, and the window is told why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace

from remote_api.shared.models.errors import ModelError
from sidecar.channel_messages import Voice, VoiceStatus
from sidecar.clock import Clock
from sidecar.config import AppConfig, VoiceConfig
from sidecar.conversation import Conversation
from sidecar.engine.link import LinkKeeper
from sidecar.engine.presence import Presence
from sidecar.engine.settings import wake_label
from sidecar.frames import EndFrame
from sidecar.pipeline import Observer, Pipeline, Source, VoiceError
from sidecar.voice.capture import DeviceSource
from sidecar.voice.deferred import DeferredVoice
from sidecar.voice.devices import find_device
from sidecar.voice.playback import DeviceOutput
from sidecar.voice.wake import WakeModel
from sidecar.voice.wake_verifier import Verifier
from sidecar.voice_loop import LoadedModels, build, typed

log = logging.getLogger(__name__)


class IdleSource(Source):
    """The head of the typed-turns pipeline: no microphone, just the session clock."""

    async def produce(self) -> None:
        self.clock.start()
        await asyncio.Future()  # typed turns are queued from outside; the pipeline ends with an EndFrame


def sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _find_devices(voice: VoiceConfig) -> None:
    """The microphone and the speaker the settings name: a VoiceError saying what is missing."""
    find_device(voice.input_device, "input")
    find_device(voice.output_device, "output")


def _unheard(task: asyncio.Future[LoadedModels]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: not reported as never retrieved


class Sessions:
    """Runs one pipeline at a time; `reload()` ends it (after the reply in hand) and builds the next.

    `ready` is set once the first pipeline is in place, `serving` while one is (not while it is
    being replaced), and `voice` is what the window shows about hearing and speaking.
    """

    def __init__(self, config: AppConfig, link: LinkKeeper, conversation: Conversation, presence: Presence,
                 observers: Callable[[], list[Observer]], send: Callable[[Voice], None]) -> None:
        self.config = config
        self.link = link
        self.conversation = conversation
        self.presence = presence
        self.observers = observers
        self.send = send
        self.loaded: LoadedModels | None = None
        self.pipeline: Pipeline | None = None
        self.verifier: Verifier | None = None  # the user's voice taught for the wake word (`enrolled`)
        self.voice: Voice = self._voice_event("loading", "Starting…")
        self.ready = asyncio.Event()
        self.serving = asyncio.Event()
        self._reload = asyncio.Event()
        self._models_task: asyncio.Task[None] | None = None
        self._warming: asyncio.Task[None] | None = None

    def start(self, voice_on: bool) -> None:
        if voice_on:
            self._load_models()
        else:
            self.set_voice("off", "Voice is switched off: type to Stella.")

    def reconfigure(self, config: AppConfig, reload_voice: bool) -> None:
        """New settings: a new pipeline, and new voice models when `reload_voice`; the conversation goes on in
        the language chosen (its persona and system line follow it)."""
        self.config = config
        self.conversation.language = config.voice.language
        if reload_voice:
            self._load_models()
        self.reload()

    def reload(self) -> None:
        self._reload.set()

    @property
    def can_enrol(self) -> bool:
        """The loaded wake model is our own (enrolment learns on its windows)."""
        wake = None if self.loaded is None else self.loaded.wake
        return isinstance(wake, WakeModel) and wake.trained and self.config.voice.wake_engine == "phrase"

    def enrolled(self, verifier: Verifier | None) -> None:
        """The user's voice, taught just now (the pipeline listening has it already), restored from the
        store, or forgotten (None: the next pipeline listens without it)."""
        forgotten = verifier is None and self.verifier is not None
        self.verifier = verifier
        if forgotten:
            self.reload()
        self.voice = replace(self.voice, enrolled=verifier is not None)
        self.send(self.voice)

    def listening(self) -> None:
        """The microphone delivers: say what Stella listens for, then load her voice in the background."""
        self.set_voice("ready", "Listening for the wake word." if self.config.voice.wake_engine != "off"
                       else "Listening: everything you say is for Stella.")
        voice = None if self.loaded is None else self.loaded.voice
        if isinstance(voice, DeferredVoice) and not voice.loaded and self._warming is None:
            self._warming = asyncio.create_task(asyncio.to_thread(voice.warm), name="warm-voice")
            self._warming.add_done_callback(self._warmed)

    def _warmed(self, task: asyncio.Task[None]) -> None:
        self._warming = None
        if not task.cancelled() and task.exception() is not None:  # the first reply tries again, then espeak-ng
            log.warning("could not load the voice in the background: %s", task.exception())

    async def run(self) -> None:
        """Run a pipeline for the current settings; build a new one whenever they change."""
        while True:
            self._reload.clear()
            if self.link.needs_new(self.config):
                await self.link.connect(self.config)
            pipeline = self.pipeline = self._build()
            self.ready.set()
            self.serving.set()
            running = asyncio.create_task(pipeline.run(), name="pipeline")
            reload = asyncio.create_task(self._reload.wait())
            try:
                await asyncio.wait({running, reload}, return_when=asyncio.FIRST_COMPLETED)
                self.serving.clear()  # new turns wait for the next pipeline: this one is ending
                if not running.done():
                    await pipeline.queue(EndFrame())  # queued work (a reply being spoken) finishes first
                    # not wait_for: on Python 3.11 it drops a cancellation (the engine's shutdown)
                    # that comes as the pipeline ends, and the next pipeline would then run on
                    await asyncio.wait({running}, timeout=30)
                if running.done():
                    running.result()
            except VoiceError as exc:
                self.loaded = None
                self.set_voice("off", sentence(str(exc)) + " You can still type to Stella.")
            finally:
                running.cancel()  # still running: it did not end in time, or the engine is shutting down
                reload.cancel()
                self.serving.clear()
                self.pipeline = None
            if not self._reload.is_set():
                await asyncio.sleep(0.5)  # the pipeline ended by itself: do not spin

    def _build(self) -> Pipeline:
        link = self.link.link
        assert link is not None
        voice = self.config.voice
        if self.loaded is not None:
            source = DeviceSource(voice.input_device, voice.block_ms)
            output = DeviceOutput(voice.output_device, voice.output_rate, voice.block_ms)
            self.presence.replies_heard(True)
            return build(self.config, self.loaded, source, output, link, Clock(), self.observers(),
                         self.conversation, self.conversation.outfits, self.verifier)
        self.presence.replies_heard(False)
        return typed(self.config, IdleSource(), link, self.conversation, Clock(), self.observers())

    def _load_models(self) -> None:
        """Load the voice models in the background; the typed-turns pipeline serves meanwhile."""
        if self._models_task is not None:
            self._models_task.cancel()
        self.loaded = None
        self.set_voice("loading", "Getting Stella's voice and ears ready…")
        self._models_task = asyncio.create_task(self._models_for(self.config), name="load-models")

    async def _models_for(self, config: AppConfig) -> None:
        """The sound devices are looked up while the models load: neither needs the other, and listening waits
        for both."""
        loading = asyncio.ensure_future(asyncio.to_thread(LoadedModels.load, config.voice, defer_voice=True))
        loading.add_done_callback(_unheard)  # without devices (or cancelled) its outcome no longer matters
        try:
            await asyncio.to_thread(_find_devices, config.voice)
            self.loaded = await loading
        except (VoiceError, ModelError, OSError, ValueError) as exc:
            self.set_voice("off", sentence(str(exc)) + " You can still type to Stella.")
            return
        self.reload()

    def set_voice(self, status: VoiceStatus, detail: str) -> None:
        self.voice = self._voice_event(status, detail)
        self.send(self.voice)

    def _voice_event(self, status: VoiceStatus, detail: str) -> Voice:
        """Whether Stella can hear and speak now (loading, ready, off) and her wake word."""
        voice = self.config.voice
        return Voice(status=status, detail=detail, wake_engine=voice.wake_engine, wake_word=wake_label(voice),
                     enrolled=self.verifier is not None)
