"""`python -m sidecar.app`: the engine of the desktop app, driven by the window over the channel.

    STELLA_CHANNEL_SECRET=<secret> python -m sidecar.app --server http://gpu-box:8765 --store PATH

The desktop shell starts and supervises it (desktop/supervisor.py). Once the channel listens
it prints ``channel_port=<port>`` on stdout; then it opens the encrypted store, keeps the link
to the gateway up, and runs the voice loop (sidecar/loop.py) when the voice models and sound
devices are there — otherwise a typed-turns pipeline made of the same turn taker and reply
processors, and it says why. Every pipeline event goes to the UI as the same dict the headless
JSONL log writes, beside app events (state, link, voice, outfit, settings, history, mouth).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import numpy as np
from websockets.asyncio.server import ServerConnection

from atlas.manifest import DEFAULT_DIR, Manifest
from remote_api.client import LinkClient, LinkRefused, LinkStatus
from remote_api.config import ConfigError, load_config
from remote_api.credentials import LOOPBACK, Credentials, CredentialsRejected, pair
from remote_api.logs import setup_logging
from remote_api.transport import TransportClosed
from sidecar.channel import PORT_LINE, Channel, ChannelError, Command, Event, Launch, bad_command
from sidecar.clock import Clock
from sidecar.config import WAKE_MODELS, AppConfig
from sidecar.conversation import Conversation, Exchange
from sidecar.events import TurnTimeline
from sidecar.frames import (
    AudioOutFrame,
    BotSpeakingFrame,
    EndFrame,
    Frame,
    InputStartedFrame,
    InterruptionFrame,
    ListeningFrame,
    PushToTalkFrame,
    ReplyDoneFrame,
    SpeechAudioFrame,
    TokenFrame,
    TurnEndedFrame,
    UserTextFrame,
    UserTurnFrame,
    WakeFrame,
)
from sidecar.loop import Engines, build
from sidecar.models.errors import ModelError
from sidecar.pipeline import Direction, Pipeline, Source, VoiceError
from sidecar.reply import Reply
from sidecar.store import DeviceCredentials, Store, StoreConfig, StoreError
from sidecar.store.keys import KeyringKey
from sidecar.voice.addressing import TurnTaker
from sidecar.voice.capture import DeviceSource
from sidecar.voice.devices import find_device, portaudio
from sidecar.voice.playback import DeviceOutput

if TYPE_CHECKING:
    from desktop.render import CharacterRenderer

log = logging.getLogger(__name__)

State = Literal["idle", "listening", "thinking", "speaking"]
MOUTH_HOP_MS = 20
MAX_TEXT_CHARS = 2000
# Interruptions the UI asks for; any other reason is the user speaking over Stella.
CANCELLED, NEW_MESSAGE = "cancel", "new message"
HISTORY_SHOWN = 50


@dataclass(frozen=True)
class Options:
    config: Path | None
    server: str | None
    store: Path
    voice: Literal["auto", "off"]
    log_level: str | None


@dataclass(frozen=True)
class UserSettings:
    """What the settings panel edits. Kept in the store; applied over the config file."""

    server_url: str
    wake_engine: str
    wake_model: str
    wake_phrase: str
    tts_engine: str
    input_device: str
    output_device: str

    @classmethod
    def of(cls, config: AppConfig) -> UserSettings:
        v = config.voice
        return cls(config.server_url, v.wake_engine, v.wake_model, v.wake_phrase, v.tts_engine, v.input_device,
                   v.output_device)

    def updated(self, values: dict[str, Any]) -> UserSettings:
        names = {f.name for f in fields(self)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(f"unknown setting {', '.join(unknown)}")
        if not all(isinstance(v, str) for v in values.values()):
            raise ValueError("every setting is a piece of text")
        return replace(self, **{k: v.strip() for k, v in values.items()})

    def apply(self, config: AppConfig) -> AppConfig:
        """The config these settings give; ValueError in plain words if one is not acceptable."""
        if not self.server_url.startswith(("http://", "https://")):
            raise ValueError(f"The server address must start with http:// or https:// (for example "
                             f"http://192.168.1.20:8765), not {self.server_url!r}.")
        voice = replace(config.voice, wake_engine=self.wake_engine, wake_model=self.wake_model,
                        wake_phrase=self.wake_phrase, tts_engine=self.tts_engine, input_device=self.input_device,
                        output_device=self.output_device)
        return replace(config, server_url=self.server_url, voice=voice)

    def voice_changed(self, other: UserSettings) -> bool:
        return any(getattr(self, f.name) != getattr(other, f.name) for f in fields(self) if f.name != "server_url")


class StoreHistory:
    """The conversation's history in the encrypted store (sidecar.conversation.History)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def recent(self, limit: int) -> list[Exchange]:
        exchanges: list[Exchange] = []
        user: str | None = None
        for turn in self.store.history(limit * 2):
            if turn.role == "user":
                user = turn.text
            elif turn.role == "assistant" and user is not None:
                exchanges.append(Exchange(user, turn.as_heard))
                user = None
        return exchanges[-limit:] if limit > 0 else []

    def append(self, exchange: Exchange) -> None:
        self.store.append_turn("user", exchange.user)
        self.store.append_turn("assistant", exchange.assistant)


class Presence:
    """What the character is doing, as the UI shows it: idle, listening, thinking or speaking.

    `spoken` says whether replies are heard (voice loop) or only read (typed-turns pipeline):
    a read reply is "speaking" while its tokens stream, a heard one while its audio plays.
    """

    def __init__(self, emit: Callable[[State], None], listen_s: float) -> None:
        self.emit = emit
        self.listen_s = listen_s
        self.spoken = False
        self.state: State = "idle"
        self._expiry: asyncio.TimerHandle | None = None

    def observe(self, frame: Frame) -> None:
        if isinstance(frame, InterruptionFrame):
            self._set("idle" if frame.reason in (CANCELLED, NEW_MESSAGE) else "listening", expires=True)
        elif isinstance(frame, WakeFrame | ListeningFrame):
            self._set("listening", expires=True)
        elif isinstance(frame, PushToTalkFrame):
            self._set("listening", expires=not frame.pressed)
        elif isinstance(frame, UserTurnFrame):
            self._set("thinking")
        elif self.spoken:
            if isinstance(frame, BotSpeakingFrame) and frame.speaking:
                self._set("speaking")
            elif isinstance(frame, TurnEndedFrame):  # heard in full, or nothing to say
                self._set("idle")
        elif isinstance(frame, TokenFrame):
            self._set("speaking")
        elif isinstance(frame, ReplyDoneFrame):
            self._set("idle")

    def _set(self, state: State, expires: bool = False) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if expires and state == "listening":  # listening with nothing said returns to idle
            self._expiry = asyncio.get_running_loop().call_later(self.listen_s, self._set, "idle")
        if state != self.state:
            self.state = state
            self.emit(state)


def mouth_levels(audio: np.ndarray, rate: int, hop_ms: int = MOUTH_HOP_MS) -> list[float]:
    """Mouth openness (0..1) per `hop_ms` of speech: the RMS level, scaled so speech opens it."""
    hop = max(1, rate * hop_ms // 1000)
    n = len(audio) // hop
    if n == 0:
        return []
    rms = np.sqrt(np.mean(np.square(audio[:n * hop].astype(np.float32).reshape(n, hop)), axis=1))
    return [round(float(x), 2) for x in np.clip(rms / 0.3, 0.0, 1.0)]


class MouthTrack:
    """Lip sync: each sentence's levels, sent to the UI when the sentence starts being heard."""

    def __init__(self) -> None:
        self._levels: dict[tuple[int, int], list[float]] = {}

    def observe(self, frame: Frame) -> Event | None:
        if isinstance(frame, SpeechAudioFrame):
            self._levels[(frame.turn, frame.index)] = mouth_levels(frame.audio, frame.rate)
        elif isinstance(frame, AudioOutFrame):
            levels = self._levels.pop((frame.turn, frame.index), [])
            return {"type": "mouth", "turn": frame.turn, "index": frame.index, "hop_ms": MOUTH_HOP_MS,
                    "levels": levels}
        elif isinstance(frame, InterruptionFrame):
            self._levels.clear()
            return {"type": "mouth", "hop_ms": MOUTH_HOP_MS, "levels": []}
        return None


class FrameStream:
    """The character as PNG frames from the moderngl renderer, for a page without WebGL2.

    The renderer (and its GL thread) is created on the first subscription only.
    """

    def __init__(self, channel: Channel, outfit: str, fps: float = 15.0) -> None:
        self.channel = channel
        self.fps = fps
        self.outfit = outfit
        self._sizes: dict[ServerConnection, tuple[int, int]] = {}
        self._mouth: tuple[float, float, list[float]] = (0.0, MOUTH_HOP_MS / 1000, [])
        self._task: asyncio.Task[None] | None = None
        self._renderer: CharacterRenderer | None = None

    def subscribe(self, ws: ServerConnection, width: int, height: int) -> None:
        if width <= 0 or height <= 0:
            self._sizes.pop(ws, None)
            return
        self._sizes[ws] = (min(width, 1024), min(height, 1024))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="frame-stream")

    def set_outfit(self, outfit: str) -> None:
        self.outfit = outfit
        if self._renderer is not None:
            self._renderer.set_outfit(outfit)

    def play_mouth(self, levels: list[float], hop_ms: int) -> None:
        self._mouth = (time.monotonic(), hop_ms / 1000, levels)

    def _mouth_now(self) -> float:
        start, hop, levels = self._mouth
        i = int((time.monotonic() - start) / hop)
        return levels[i] if 0 <= i < len(levels) else 0.0

    async def _run(self) -> None:
        if self._renderer is None:
            from desktop.render import CharacterRenderer  # moderngl only when a page needs it

            self._renderer = await asyncio.to_thread(CharacterRenderer)
            self._renderer.set_outfit(self.outfit, crossfade=0)
        while True:
            for ws in [ws for ws in self._sizes if ws not in self.channel.clients]:
                del self._sizes[ws]
            if not self._sizes:
                return
            began = time.monotonic()
            self._renderer.set_mouth(self._mouth_now())
            for size in set(self._sizes.values()):
                png = await asyncio.to_thread(self._renderer.frame_png, size)
                self.channel.send_binary(png, [ws for ws, s in self._sizes.items() if s == size])
            await asyncio.sleep(max(0.0, 1 / self.fps - (time.monotonic() - began)))

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._renderer is not None:
            self._renderer.close()


class IdleSource(Source):
    """The head of the typed-turns pipeline: no microphone, just the session clock."""

    async def produce(self) -> None:
        self.clock.start()
        await asyncio.Future()  # typed turns are queued from outside; the pipeline ends with an EndFrame


def sound_devices() -> dict[str, list[str]]:
    """Names of the microphones and speakers PortAudio lists (none if it is missing)."""
    try:
        devices = portaudio().query_devices()
    except Exception as exc:  # noqa: BLE001 - no PortAudio or no sound system: simply no devices
        log.info("no sound devices: %s", exc)
        return {"input": [], "output": []}
    return {kind: [d["name"] for d in devices if d[f"max_{kind}_channels"] > 0] for kind in ("input", "output")}


def wake_label(settings: UserSettings) -> str:
    if settings.wake_engine == "off":
        return ""
    if settings.wake_engine == "openwakeword":
        return settings.wake_model.replace("_", " ").title()
    return settings.wake_phrase.title()


class App:
    def __init__(self, options: Options, launch: Launch, config: AppConfig) -> None:
        self.options = options
        self.launch = launch
        self.base_config = config
        self.settings = UserSettings.of(config)
        self.config = config
        self.manifest = Manifest.load(DEFAULT_DIR)
        self.outfit = self.manifest.outfits[0].id
        self.store: Store | None = None
        self.channel = Channel(launch.secret, self._command, self._greeting)
        self.frames = FrameStream(self.channel, self.outfit)
        self.presence = Presence(lambda s: self.channel.send({"type": "state", "state": s}),
                                 config.voice.wake_window_s)
        self.mouth = MouthTrack()
        self.conversation = Conversation(config.persona, config.chat)
        self.link: LinkClient | None = None
        self.pairing: Credentials | None = None
        self.link_status = LinkStatus("offline", detail="starting")
        self.devices: dict[str, list[str]] = {"input": [], "output": []}
        self.voice: Event = self._voice_event("loading", "Starting…")
        self.engines: Engines | None = None
        self.pipeline: Pipeline | None = None
        self._engines_task: asyncio.Task[None] | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._relink = False  # the credentials changed: open a new link
        self._refusal: Event | None = None  # the server refused this device: what to tell the user
        self._local_refusals = 0  # in a row, from a gateway on this computer
        self._link_changed = asyncio.Event()
        self._reload = asyncio.Event()
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()  # store read and a pipeline in place: a new page can talk at once
        self._serving = asyncio.Event()  # a pipeline is in place now (not while one is being replaced)
        self._seen: OrderedDict[int, Frame] = OrderedDict()
        self._store_error: str = ""

    # --- lifecycle ------------------------------------------------------------------------

    async def run(self) -> None:
        port = await self.channel.start(self.launch.port)
        print(f"{PORT_LINE}{port}", flush=True)
        log.info("channel listening on 127.0.0.1:%d", port)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        await asyncio.to_thread(self._open_store)
        self.devices = await asyncio.to_thread(sound_devices)
        if self.options.voice == "off":
            self._set_voice("off", "Voice is switched off: type to Stella.")
        else:
            self._load_engines()
        sessions = asyncio.create_task(self._sessions(), name="sessions")
        await self._stop.wait()
        log.info("shutting down")
        watchdog = threading.Timer(8, _hard_exit, ["shutdown took too long"])
        watchdog.daemon = True
        watchdog.start()
        sessions.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sessions
        await self._disconnect()
        self.frames.close()
        await self.channel.close()
        if self.store is not None:
            self.store.close()

    def _open_store(self) -> None:
        try:
            self.store = Store.open(self.options.store, KeyringKey(service=StoreConfig().keyring_service))
        except StoreError as exc:
            self._store_error = f"Your conversations and settings can't be saved: {exc}"
            log.error("%s", self._store_error)
            return
        self.conversation.history = StoreHistory(self.store)
        stored = self.store.get_setting("settings", {})
        try:
            settings = self.settings.updated(stored if isinstance(stored, dict) else {})
            if self.options.server:
                settings = replace(settings, server_url=self.options.server)
            self.config, self.settings = settings.apply(self.base_config), settings
        except ValueError as exc:
            log.warning("saved settings not used: %s", exc)
        saved = self.store.credentials()
        if saved is not None:
            self.pairing = Credentials(saved.gateway_url, saved.device_id, saved.refresh_credential)
        outfit = self.store.outfit()
        if outfit in {o.id for o in self.manifest.outfits}:
            self.outfit = outfit
            self.frames.set_outfit(outfit)

    async def _sessions(self) -> None:
        """Run a pipeline for the current settings; build a new one whenever they change."""
        while True:
            self._reload.clear()
            if self.link is None or self._relink or self.link.server_url != self.config.server_url.rstrip("/"):
                await self._connect()
            pipeline = self.pipeline = self._build()
            self._ready.set()
            self._serving.set()
            running = asyncio.create_task(pipeline.run(), name="pipeline")
            reload = asyncio.create_task(self._reload.wait())
            try:
                await asyncio.wait({running, reload}, return_when=asyncio.FIRST_COMPLETED)
                self._serving.clear()  # new turns wait for the next pipeline: this one is ending
                if not running.done():
                    await pipeline.queue(EndFrame())  # queued work (a reply being spoken) finishes first
                    await asyncio.wait_for(asyncio.shield(running), 30)
                running.result()
            except VoiceError as exc:
                self.engines = None
                self._set_voice("off", _sentence(str(exc)) + " You can still type to Stella.")
            except TimeoutError:
                running.cancel()
            finally:
                reload.cancel()
                self._serving.clear()
                self.pipeline = None
            if not self._reload.is_set():
                await asyncio.sleep(0.5)  # the pipeline ended by itself: do not spin

    async def _connect(self) -> None:
        """(Re)open the link to the configured server; it reconnects by itself from then on."""
        await self._disconnect()
        self._relink, self._refusal = False, None
        self.link = LinkClient(self.config.server_url, self.config.link, on_status=self._on_link,
                               on_outfit=self._on_llm_outfit, credentials=self._credentials())
        self._connecting = asyncio.create_task(self._keep_link(self.link), name="link-connect")

    async def _keep_link(self, link: LinkClient) -> None:
        """Follow the link until the server refuses this device (`connect` raises then, and only then)."""
        try:
            while True:
                await link.connect()  # returns at once while connected, waits while reconnecting
                self._local_refusals = 0
                await self._link_changed.wait()
                self._link_changed.clear()
        except LinkRefused as exc:
            # A local gateway that restarted has left new credentials for this user's devices: a new link
            # finds them. It is given a few tries before the user hears of it (it may still be starting).
            local = self._credentials() is None and urlsplit(link.server_url).hostname in LOOPBACK
            self._local_refusals += local
            if not local or self._local_refusals >= 3:
                self._refusal = self._error("device_refused", f"The Stella server at {link.server_url} does "
                                                              f"not accept this device: {exc}")
                self.channel.send(self._link_event(link.status))
                self.channel.send(self._refusal)
            if local:
                await asyncio.sleep(min(30.0, 0.5 * 2 ** self._local_refusals))
                self._relink = True
                self._reload.set()

    def _credentials(self) -> Credentials | None:
        """This device's pairing with the configured server, if any (a local gateway needs none)."""
        paired = self.pairing
        if paired is None or paired.gateway_url.rstrip("/") != self.config.server_url.rstrip("/"):
            return None
        return paired

    async def _disconnect(self) -> None:
        if self._connecting is not None:
            self._connecting.cancel()
        if self.link is not None:
            await self.link.close()

    def _build(self) -> Pipeline:
        observers = [self._observe, TurnTimeline(self._forward)]
        assert self.link is not None
        voice = self.config.voice
        if self.engines is not None:
            source = DeviceSource(voice.input_device, voice.block_ms)
            output = DeviceOutput(voice.output_device, voice.output_rate, voice.block_ms)
            self.presence.spoken = True
            return build(self.config, self.engines, source, output, self.link, Clock(), observers, self.conversation)
        self.presence.spoken = False
        processors = [IdleSource(), TurnTaker(voice.wake_phrase, voice.wake_window_s),
                      Reply(self.link, self.conversation, self.config.chat)]
        return Pipeline(processors, Clock(), observers)

    def _load_engines(self) -> None:
        """Load the voice models in the background; the typed-turns pipeline serves meanwhile."""
        if self._engines_task is not None:
            self._engines_task.cancel()
        self.engines = None
        self._set_voice("loading", "Getting Stella's voice and ears ready…")
        self._engines_task = asyncio.create_task(self._engines_for(self.config), name="load-engines")

    async def _engines_for(self, config: AppConfig) -> None:
        try:
            await asyncio.to_thread(find_device, config.voice.input_device, "input")
            await asyncio.to_thread(find_device, config.voice.output_device, "output")
            self.engines = await asyncio.to_thread(Engines.load, config.voice)
        except (VoiceError, ModelError, OSError, ValueError) as exc:
            self._set_voice("off", _sentence(str(exc)) + " You can still type to Stella.")
            return
        self._reload.set()

    def _set_voice(self, status: str, detail: str) -> None:
        self.voice = self._voice_event(status, detail)
        self.channel.send(self.voice)

    def _voice_event(self, status: str, detail: str) -> Event:
        """Whether Stella can hear and speak now (loading, ready, off) and her wake word."""
        return {"type": "voice", "status": status, "detail": detail, "wake_engine": self.settings.wake_engine,
                "wake_word": wake_label(self.settings)}

    # --- what the pipeline and the link report ----------------------------------------------

    def _observe(self, source: object, frame: Frame, direction: Direction = Direction.DOWN) -> None:
        if frame.event is None or id(frame) in self._seen:
            return
        if isinstance(frame, InputStartedFrame):
            self._set_voice("ready", "Listening for the wake word." if self.settings.wake_engine != "off"
                            else "Listening: everything you say is for Stella.")
        self._seen[id(frame)] = frame  # holding it keeps its id unique while it is remembered
        if len(self._seen) > 1024:
            self._seen.popitem(last=False)
        self._forward(frame)  # the event first, then what it changes
        self.presence.observe(frame)
        mouth = self.mouth.observe(frame)
        if mouth is not None:
            self.frames.play_mouth(mouth["levels"], mouth["hop_ms"])
            self.channel.send(mouth)

    def _forward(self, frame: Frame) -> None:
        """The event as the headless JSONL log writes it."""
        self.channel.send({"type": frame.event, "t": round(frame.t if frame.t is not None else 0.0, 4),
                           **frame.event_data()})

    def _on_link(self, status: LinkStatus) -> None:
        self.link_status = status
        self._link_changed.set()
        self.channel.send(self._link_event(status))

    def _link_event(self, status: LinkStatus) -> Event:
        return {"type": "link", "transport": status.transport, "connected": status.connected,
                "retry_in": status.retry_in, "attempt": status.attempt, "detail": status.detail,
                "refused": self._refusal is not None}

    def _on_llm_outfit(self, outfit: str) -> None:
        if outfit not in {o.id for o in self.manifest.outfits}:
            log.warning("rejected outfit %r from the server: not in the catalogue", outfit)
            return
        self._set_outfit(outfit, "assistant")

    def _set_outfit(self, outfit: str, source: str) -> None:
        self.outfit = outfit
        self.frames.set_outfit(outfit)
        self.channel.send({"type": "outfit", "id": outfit, "source": source})
        if self.store is not None:
            self.store.set_outfit(outfit)  # one small commit; the UI already shows the outfit

    # --- the UI's side ----------------------------------------------------------------------

    async def _greeting(self) -> list[Event]:
        await self._ready.wait()
        return list(self._snapshot())

    def _snapshot(self) -> Iterable[Event]:
        yield {"type": "hello", "protocol": 1, "pid": os.getpid(), "restarts": self.launch.restarts,
               "last_exit": self.launch.last_exit}
        yield self._settings_event()
        yield {"type": "history", "turns": self._history()}
        yield {"type": "outfit", "id": self.outfit, "source": "store"}
        yield self._link_event(self.link_status)
        yield self.voice
        yield {"type": "state", "state": self.presence.state}
        if self._store_error:
            yield self._error("store_unavailable", self._store_error)
        if self._refusal is not None:
            yield self._refusal

    def _history(self) -> list[Event]:
        if self.store is None:
            return []
        return [{"role": t.role, "text": t.as_heard, "interrupted": t.interrupted}
                for t in self.store.history(HISTORY_SHOWN)]

    def _settings_event(self, saved: bool = False) -> Event:
        return {"type": "settings", "values": asdict(self.settings), "saved": saved,
                "choices": {"wake_engine": ["phrase", "openwakeword", "off"], "wake_model": list(WAKE_MODELS),
                            "tts_engine": ["piper", "espeak"], "input_device": self.devices["input"],
                            "output_device": self.devices["output"]},
                "paired": self._credentials() is not None}

    async def _command(self, ws: ServerConnection, command: Command) -> None:
        name = command["cmd"]
        handler = {"text": self._cmd_text, "ptt_start": self._cmd_ptt, "ptt_stop": self._cmd_ptt,
                   "cancel": self._cmd_cancel, "outfit": self._cmd_outfit, "settings": self._cmd_settings,
                   "pair": self._cmd_pair, "frames": self._cmd_frames}.get(name)
        if handler is None:
            self.channel.send(bad_command(f"unknown command {name!r}"), [ws])
            return
        error = await handler(ws, command)
        if error is not None:
            self.channel.send(error, [ws])

    async def _cmd_text(self, ws: ServerConnection, command: Command) -> Event | None:
        text = command.get("text")
        if not isinstance(text, str) or not text.strip():
            return bad_command("a text command needs the words to send")
        if len(text) > MAX_TEXT_CHARS:
            return self._error("too_long", f"That message is too long for Stella ({len(text)} characters); "
                                           f"keep it under {MAX_TEXT_CHARS}.")
        try:  # a pipeline being replaced (new settings, voice ready) is back within moments
            await asyncio.wait_for(self._serving.wait(), 10)
        except TimeoutError:
            return self._error("not_ready", "Stella is not ready to answer yet; send it again in a moment.")
        assert self.pipeline is not None
        if self.presence.state in ("thinking", "speaking"):  # the user takes the floor
            await self.pipeline.queue(InterruptionFrame(reason=NEW_MESSAGE))
        await self.pipeline.queue(UserTextFrame(text=text.strip()))
        return None

    async def _cmd_ptt(self, ws: ServerConnection, command: Command) -> Event | None:
        if self.pipeline is None or self.engines is None:
            return self._error("no_voice", f"Push-to-talk needs the microphone. {self.voice['detail']}")
        await self.pipeline.queue(PushToTalkFrame(pressed=command["cmd"] == "ptt_start"))
        return None

    async def _cmd_cancel(self, ws: ServerConnection, command: Command) -> Event | None:
        if self.pipeline is not None:
            await self.pipeline.queue(InterruptionFrame(reason=CANCELLED))
        return None

    async def _cmd_outfit(self, ws: ServerConnection, command: Command) -> Event | None:
        outfit = command.get("id")
        if outfit not in {o.id for o in self.manifest.outfits}:
            return bad_command(f"there is no outfit {outfit!r}")
        self._set_outfit(outfit, "user")
        return None

    async def _cmd_settings(self, ws: ServerConnection, command: Command) -> Event | None:
        values = command.get("values")
        if values is None:  # the panel opened: fresh device lists
            self.devices = await asyncio.to_thread(sound_devices)
            self.channel.send(self._settings_event(), [ws])
            return None
        try:
            if not isinstance(values, dict):
                raise ValueError("settings come as an object of name: value")
            settings = self.settings.updated(values)
            config = settings.apply(self.base_config)
        except ValueError as exc:
            return self._error("bad_settings", f"Those settings were not saved: {exc}")
        if self.store is not None:
            await asyncio.to_thread(self.store.set_setting, "settings", asdict(settings))
        old, self.settings, self.config = self.settings, settings, config
        if settings.voice_changed(old) and self.options.voice != "off":
            self._load_engines()
        self._reload.set()
        self.channel.send(self._settings_event(saved=True))
        return None

    async def _cmd_pair(self, ws: ServerConnection, command: Command) -> Event | None:
        code = command.get("code")
        if not isinstance(code, str) or not code.strip():
            return self._error("pairing_failed", "Type the pairing code from the server's operator "
                                                 "(stella-server device add NAME) first.")
        url = self.config.server_url
        try:
            creds = await pair(url, code.strip())
        except CredentialsRejected as exc:
            return self._error("pairing_failed", f"The server did not accept that code: {exc}")
        except TransportClosed as exc:
            return self._error("pairing_failed", f"Could not reach the server at {url} to pair: {exc}")
        self.pairing = creds
        if self.store is not None:
            device = DeviceCredentials(creds.gateway_url, creds.device_id, creds.refresh_credential)
            await asyncio.to_thread(self.store.set_credentials, device)
        self._relink = True
        self._reload.set()
        self.channel.send(self._settings_event(saved=True))
        return None

    async def _cmd_frames(self, ws: ServerConnection, command: Command) -> Event | None:
        try:
            width, height = int(command.get("width", 0)), int(command.get("height", 0))
        except (TypeError, ValueError):
            return bad_command("frames needs a width and a height in pixels")
        self.frames.subscribe(ws, width, height)
        return None

    @staticmethod
    def _error(code: str, message: str) -> Event:
        return {"type": "error", "code": code, "message": message, "fatal": False}


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _hard_exit(why: str) -> None:
    log.error("%s; exiting now", why)
    os._exit(1)


def parse(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(prog="python -m sidecar.app", description="Stella's engine for the desktop window")
    p.add_argument("--config", type=Path, help="TOML settings (env STELLA_SECTION__KEY overrides them)")
    p.add_argument("--server", help="the gateway URL (default: the saved setting, else the config)")
    p.add_argument("--store", type=Path, default=StoreConfig().path, help="the encrypted database")
    p.add_argument("--voice", choices=("auto", "off"), default="auto",
                   help="auto: listen and speak when models and devices allow; off: typed turns only")
    p.add_argument("--log-level")
    a = p.parse_args(argv)
    return Options(a.config, a.server, a.store, a.voice, a.log_level)


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    try:
        launch = Launch.from_env()
        config = load_config(AppConfig, options.config)
        if options.server:
            config = replace(config, server_url=options.server)
    except (ChannelError, ConfigError, ValueError) as exc:
        print(f"stella engine: {exc}", file=sys.stderr)
        return 2
    setup_logging(options.log_level or config.log_level)
    try:
        asyncio.run(App(options, launch, config).run())
    except ChannelError as exc:
        log.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
