"""The engine of the desktop app: the store, the link, the voice session and the window's channel, together.

Every pipeline event goes to the window as the same dict the headless JSONL log writes, beside
app events (state, link, voice, outfit, settings, history, store).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from websockets.asyncio.server import ServerConnection

from atlas.user import choose_atlas
from sidecar.channel import Channel, Event
from sidecar.channel_messages import Command, Error, Hello, State
from sidecar.config import AppConfig
from sidecar.conversation import Conversation
from sidecar.engine.commands import Commands, CommandTargets
from sidecar.engine.frame_stream import FrameStream
from sidecar.engine.link import LinkKeeper
from sidecar.engine.presence import Presence
from sidecar.engine.settings import SettingsPanel
from sidecar.engine.stored import EngineStore, StoreHistory, StoreMemory
from sidecar.engine.unlock import StoreUnlock
from sidecar.engine.voice_session import Sessions, sentence
from sidecar.engine.wardrobe import Wardrobe
from sidecar.events import EachEventOnce, TurnTimeline
from sidecar.frames import EnrolmentFrame, Frame, InputStartedFrame, MouthFrame, OutfitFrame, TurnTimelineFrame
from sidecar.launch import PORT_LINE, Launch, SavedModel, SavedServer
from sidecar.outfit_catalogue import catalogue_of
from sidecar.pipeline import Observer
from sidecar.store import StoreConfig, StoreError
from sidecar.voice.wake_verifier import Verifier

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    config: Path | None
    server: str | None
    store: Path
    voice: Literal["auto", "off"]
    log_level: str | None
    language: str | None = None  # voice.language given at start ("en", "zh"): wins over the saved setting


class App:
    def __init__(self, options: Options, launch: Launch, config: AppConfig) -> None:
        self.options = options
        self.launch = launch
        self.atlas = choose_atlas(config.atlas_dir)  # the user's own atlas, else the built-in one
        self.manifest = self.atlas.manifest
        self.kept = EngineStore()
        self.channel = Channel(launch.secret, self._command, self._greeting)
        self.frames = FrameStream(self.channel, self.manifest.outfits[0].id, self.atlas.folder)
        self.wardrobe = Wardrobe(self.manifest, self.frames, self.kept, self.channel.send)
        self.presence = Presence(lambda s: self.channel.send(State(s)),
                                 config.voice.wake_window_s)
        # the outfits the window shows are the ones offered to the model (one manifest, read once)
        self.conversation = Conversation(config.persona, config.chat, outfits=catalogue_of(self.manifest),
                                         language=config.voice.language)
        self.link = LinkKeeper(self.channel.send, lambda: self.sessions.reload())
        self.settings = SettingsPanel(config, self.kept, lambda url: self.link.credentials(url) is not None,
                                      SavedServer.beside(options.store), SavedModel.beside(options.store))
        self.sessions = Sessions(config, self.link, self.conversation, self.presence, self._observers,
                                 self.channel.send)
        self.unlock = StoreUnlock(options.store, StoreConfig().keyring_service, self.channel.send)
        self.commands = Commands(CommandTargets(
            self.channel, self.sessions, self.presence, self.wardrobe, self.settings, self.link, self.kept,
            self.frames, self.unlock, voice_allowed=options.voice != "off"))
        self.port = 0  # the channel's, once `listening` is set
        self.listening = asyncio.Event()
        self._stop = asyncio.Event()
        self._store_error: str = ""

    async def _command(self, ws: ServerConnection, command: Command) -> None:
        await self.commands.handle(ws, command)

    # --- lifecycle ------------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        self.port = port = await self.channel.start(self.launch.port)
        print(f"{PORT_LINE}{port}", flush=True)
        log.info("channel listening on 127.0.0.1:%d", port)
        self.listening.set()
        if self.atlas.problem:
            log.error("%s", self.atlas.problem)
        else:
            log.info("atlas: %s (%d outfits)", self.atlas.folder, len(self.manifest.outfits))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        serving = asyncio.create_task(self._serve(), name="serve")
        await self._stop.wait()
        log.info("shutting down")
        watchdog = threading.Timer(8, _hard_exit, ["shutdown took too long"])
        watchdog.daemon = True
        watchdog.start()
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        await self.link.close()
        self.frames.close()
        await self.channel.close()
        self.kept.close()
        watchdog.cancel()  # shut down in time (the engine runs in-process in tests/engine)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)

    async def _serve(self) -> None:
        """Open the store (perhaps waiting for the user's passphrase), then run the voice session."""
        await self._open_store()
        self.sessions.start(voice_on=self.options.voice != "off")  # the voice models load meanwhile
        await self.settings.refresh_devices()
        if self.channel.clients:  # pages greeted while the store was locked: now the whole picture
            asyncio.create_task(self._greet_again(), name="greet-again")
        await self.sessions.run()

    async def _open_store(self) -> None:
        try:
            store = await self.unlock.open()
        except StoreError as exc:
            store, self._store_error = None, f"Your conversations and settings can't be saved: {exc}"
        else:
            if store is None:
                self._store_error = ("Your conversations and settings are not being saved this time: Stella's "
                                     "encrypted store was left locked. Start Stella again to unlock it.")
        if store is None:
            log.error("%s", self._store_error)
            return
        saved = await asyncio.to_thread(self.kept.opened, store)
        self.conversation.remember_in(StoreHistory(store), StoreMemory(store))
        config = self.settings.restore(saved.settings, self.options.server, self.options.language)
        if config is not None:
            self.sessions.reconfigure(config, reload_voice=False)
        self.link.restore(saved.pairing)
        self.wardrobe.restore(saved.outfit)
        if saved.enrolment is not None:
            try:
                self.sessions.enrolled(Verifier.from_stored(saved.enrolment))
            except ValueError as exc:
                log.warning("%s", exc)
                self.channel.send(Error("enrolment_unusable", sentence(str(exc))))

    async def _greet_again(self) -> None:
        await self.sessions.ready.wait()
        for event in self._snapshot():
            self.channel.send(event)

    # --- what the pipeline reports ----------------------------------------------------------

    def _observers(self) -> list[Observer]:
        return [EachEventOnce(self._observe), TurnTimeline(self._timeline, spoken=self.presence.spoken)]

    def _observe(self, frame: Frame) -> None:
        if isinstance(frame, InputStartedFrame):
            self.sessions.listening()
        self._forward(frame)  # the event first, then what it changes
        self.presence.observe(frame)
        if isinstance(frame, MouthFrame):  # lip sync on the playback clock (sidecar/voice/playback.py)
            self.frames.set_mouth(frame.level)
        elif isinstance(frame, OutfitFrame) and frame.id in self.wardrobe:  # asked for aloud, or tagged in a reply
            self.wardrobe.wear(frame.id)
        elif isinstance(frame, EnrolmentFrame) and frame.verifier is not None:  # the user's voice, just taught
            self.sessions.enrolled(frame.verifier)
            self.kept.save_enrolment(frame.verifier.to_stored())  # one small commit, as an outfit's

    def _timeline(self, frame: TurnTimelineFrame) -> None:
        """A finished turn's timeline: to the app's log (times only, no words) and the window."""
        log.info("turn timeline %s", json.dumps({"turn": frame.turn, "latency_ms": frame.latency_ms,
                                                 "prompt": frame.prompt, "marks": frame.marks}))
        self._forward(frame)

    def _forward(self, frame: Frame) -> None:
        """The event as the headless JSONL log writes it."""
        self.channel.send(frame)

    # --- the window's side --------------------------------------------------------------------

    async def _greeting(self) -> list[Event]:
        """A new page hears where things stand once a pipeline serves, or at once if the store waits for it."""
        while not (self.sessions.ready.is_set() or self.unlock.asking.is_set()):
            waits = {asyncio.create_task(self.sessions.ready.wait()), asyncio.create_task(self.unlock.asking.wait())}
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
        return list(self._snapshot())

    def _snapshot(self) -> Iterable[Event]:
        yield Hello(pid=os.getpid(), restarts=self.launch.restarts, last_exit=self.launch.last_exit)
        yield self.unlock.event()
        if not self.sessions.ready.is_set():  # the store waits for the user's passphrase
            return
        yield self.settings.event()
        yield self.kept.history_event()
        yield self.wardrobe.event()
        yield self.link.event()
        yield self.sessions.voice
        yield State(self.presence.state)
        if self._store_error:
            yield Error("store_unavailable", self._store_error)
        if self.atlas.problem:
            yield Error("atlas_unusable", self.atlas.problem)
        if self.link.refusal is not None:
            yield self.link.refusal


def _hard_exit(why: str) -> None:
    log.error("%s; exiting now", why)
    os._exit(1)
