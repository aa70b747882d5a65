"""What the window asks of the engine over the channel: one handler per command.

A handler returns an error event for the asking page only (None when all went well); what the
command changes reaches every page as ordinary events. The handlers are handed the engine's parts
they act on (`CommandTargets`) and change them only through those parts' own methods.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from websockets.asyncio.server import ServerConnection

from remote_api.credentials import CredentialsRejected, pair
from remote_api.transport import TransportClosed
from sidecar.channel import Channel, Command, Event, bad_command, error_event
from sidecar.channel_schema import COMMANDS
from sidecar.engine.frame_stream import FrameStream
from sidecar.engine.link import LinkKeeper
from sidecar.engine.presence import CANCELLED, NEW_MESSAGE, Presence
from sidecar.engine.settings import SettingsPanel
from sidecar.engine.stored import EngineStore
from sidecar.engine.unlock import StoreUnlock
from sidecar.engine.voice_session import Sessions
from sidecar.engine.wardrobe import Wardrobe
from sidecar.frames import InterruptionFrame, PushToTalkFrame, UserTextFrame

MAX_TEXT_CHARS = 2000
Handler = Callable[[Command], Awaitable[Event | None]]


@dataclass(frozen=True)
class CommandTargets:
    """The parts of the engine the window's commands act on."""

    channel: Channel
    sessions: Sessions  # the pipeline serving now: typed turns, push-to-talk, cancelling, new settings
    presence: Presence  # whether she is answering (a new message interrupts her)
    wardrobe: Wardrobe
    settings: SettingsPanel
    link: LinkKeeper  # the pairing
    kept: EngineStore
    frames: FrameStream
    unlock: StoreUnlock
    voice_allowed: bool  # False when the engine was started with --voice off


class Commands:
    def __init__(self, parts: CommandTargets) -> None:
        self.parts = parts

    def handlers(self, ws: ServerConnection) -> dict[str, Handler]:
        """One handler per command of `sidecar.channel_schema.COMMANDS` (a test holds them equal)."""
        return {
            "text": self.text, "ptt_start": self.ptt, "ptt_stop": self.ptt, "cancel": self.cancel,
            "outfit": self.outfit, "settings": lambda c: self.settings(ws, c), "pair": self.pair,
            "frames": lambda c: self.frames(ws, c), "unlock": self.parts.unlock.answer}

    async def handle(self, ws: ServerConnection, command: Command) -> None:
        name = command["cmd"]
        if name not in COMMANDS:
            self.parts.channel.send(bad_command(f"unknown command {name!r}"), [ws])
            return
        error = await self.handlers(ws)[name](command)
        if error is not None:
            self.parts.channel.send(error, [ws])

    async def text(self, command: Command) -> Event | None:
        text = command.get("text")
        if not isinstance(text, str) or not text.strip():
            return bad_command("a text command needs the words to send")
        if len(text) > MAX_TEXT_CHARS:
            return error_event("too_long", f"That message is too long for Stella ({len(text)} characters); "
                                           f"keep it under {MAX_TEXT_CHARS}.")
        sessions = self.parts.sessions
        try:  # a pipeline being replaced (new settings, voice ready) is back within moments
            await asyncio.wait_for(sessions.serving.wait(), 10)
        except TimeoutError:
            return error_event("not_ready", "Stella is not ready to answer yet; send it again in a moment.")
        assert sessions.pipeline is not None
        if self.parts.presence.state in ("thinking", "speaking"):  # the user takes the floor
            await sessions.pipeline.queue(InterruptionFrame(reason=NEW_MESSAGE))
        await sessions.pipeline.queue(UserTextFrame(text=text.strip()))
        return None

    async def ptt(self, command: Command) -> Event | None:
        sessions = self.parts.sessions
        if sessions.pipeline is None or sessions.loaded is None:
            return error_event("no_voice", f"Push-to-talk needs the microphone. {sessions.voice['detail']}")
        await sessions.pipeline.queue(PushToTalkFrame(pressed=command["cmd"] == "ptt_start"))
        return None

    async def cancel(self, command: Command) -> Event | None:
        if self.parts.sessions.pipeline is not None:
            await self.parts.sessions.pipeline.queue(InterruptionFrame(reason=CANCELLED))
        return None

    async def outfit(self, command: Command) -> Event | None:
        outfit = command.get("id")
        if not isinstance(outfit, str) or outfit not in self.parts.wardrobe:
            return bad_command(f"there is no outfit {outfit!r}")
        self.parts.wardrobe.choose(outfit, "user")
        return None

    async def settings(self, ws: ServerConnection, command: Command) -> Event | None:
        panel = self.parts.settings
        values = command.get("values")
        if values is None:  # the panel opened: fresh device lists
            await panel.refresh_devices()
            self.parts.channel.send(panel.event(), [ws])
            return None
        try:
            config, voice_changed = await panel.save(values)
        except ValueError as exc:
            return error_event("bad_settings", f"Those settings were not saved: {exc}")
        self.parts.sessions.reconfigure(config, reload_voice=voice_changed and self.parts.voice_allowed)
        self.parts.channel.send(panel.event(saved=True))
        return None

    async def pair(self, command: Command) -> Event | None:
        code = command.get("code")
        if not isinstance(code, str) or not code.strip():
            return error_event("pairing_failed", "Type the pairing code from the server's operator "
                                                 "(stella-server device add NAME) first.")
        url = self.parts.sessions.config.server_url
        try:
            creds = await pair(url, code.strip())
        except CredentialsRejected as exc:
            return error_event("pairing_failed", f"The server did not accept that code: {exc}")
        except TransportClosed as exc:
            return error_event("pairing_failed", f"Could not reach the server at {url} to pair: {exc}")
        await asyncio.to_thread(self.parts.kept.save_pairing, creds)
        self.parts.link.paired(creds)
        self.parts.channel.send(self.parts.settings.event(saved=True))
        return None

    async def frames(self, ws: ServerConnection, command: Command) -> Event | None:
        try:
            width, height = int(command.get("width", 0)), int(command.get("height", 0))
        except (TypeError, ValueError):
            return bad_command("frames needs a width and a height in pixels")
        self.parts.frames.subscribe(ws, width, height)
        return None
