"""What the window asks of the engine over the channel: one handler per command.

A handler returns an error event for the asking page only (None when all went well); what the
command changes reaches every page as ordinary events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

from websockets.asyncio.server import ServerConnection

from remote_api.credentials import CredentialsRejected, pair
from remote_api.transport import TransportClosed
from sidecar.channel import Command, Event, bad_command, error_event
from sidecar.channel_schema import COMMANDS
from sidecar.engine.presence import CANCELLED, NEW_MESSAGE
from sidecar.engine.settings import sound_devices
from sidecar.engine.stored import save_pairing
from sidecar.frames import InterruptionFrame, PushToTalkFrame, UserTextFrame

if TYPE_CHECKING:
    from sidecar.engine.core import App

MAX_TEXT_CHARS = 2000
Handler = Callable[[Command], Awaitable[Event | None]]


class Commands:
    def __init__(self, app: App) -> None:
        self.app = app

    def handlers(self, ws: ServerConnection) -> dict[str, Handler]:
        """One handler per command of `sidecar.channel_schema.COMMANDS` (a test holds them equal)."""
        return {
            "text": self.text, "ptt_start": self.ptt, "ptt_stop": self.ptt, "cancel": self.cancel,
            "outfit": self.outfit, "settings": lambda c: self.settings(ws, c), "pair": self.pair,
            "frames": lambda c: self.frames(ws, c), "unlock": self.app.unlock.answer}

    async def handle(self, ws: ServerConnection, command: Command) -> None:
        name = command["cmd"]
        if name not in COMMANDS:
            self.app.channel.send(bad_command(f"unknown command {name!r}"), [ws])
            return
        error = await self.handlers(ws)[name](command)
        if error is not None:
            self.app.channel.send(error, [ws])

    async def text(self, command: Command) -> Event | None:
        text = command.get("text")
        if not isinstance(text, str) or not text.strip():
            return bad_command("a text command needs the words to send")
        if len(text) > MAX_TEXT_CHARS:
            return error_event("too_long", f"That message is too long for Stella ({len(text)} characters); "
                                           f"keep it under {MAX_TEXT_CHARS}.")
        sessions = self.app.sessions
        try:  # a pipeline being replaced (new settings, voice ready) is back within moments
            await asyncio.wait_for(sessions.serving.wait(), 10)
        except TimeoutError:
            return error_event("not_ready", "Stella is not ready to answer yet; send it again in a moment.")
        assert sessions.pipeline is not None
        if self.app.presence.state in ("thinking", "speaking"):  # the user takes the floor
            await sessions.pipeline.queue(InterruptionFrame(reason=NEW_MESSAGE))
        await sessions.pipeline.queue(UserTextFrame(text=text.strip()))
        return None

    async def ptt(self, command: Command) -> Event | None:
        sessions = self.app.sessions
        if sessions.pipeline is None or sessions.engines is None:
            return error_event("no_voice", f"Push-to-talk needs the microphone. {sessions.voice['detail']}")
        await sessions.pipeline.queue(PushToTalkFrame(pressed=command["cmd"] == "ptt_start"))
        return None

    async def cancel(self, command: Command) -> Event | None:
        if self.app.sessions.pipeline is not None:
            await self.app.sessions.pipeline.queue(InterruptionFrame(reason=CANCELLED))
        return None

    async def outfit(self, command: Command) -> Event | None:
        outfit = command.get("id")
        if outfit not in self.app.outfits:
            return bad_command(f"there is no outfit {outfit!r}")
        self.app.set_outfit(outfit, "user")
        return None

    async def settings(self, ws: ServerConnection, command: Command) -> Event | None:
        app = self.app
        values = command.get("values")
        if values is None:  # the panel opened: fresh device lists
            app.devices = await asyncio.to_thread(sound_devices)
            app.channel.send(app.settings_event(), [ws])
            return None
        try:
            if not isinstance(values, dict):
                raise ValueError("settings come as an object of name: value")
            settings = app.settings.updated(values)
            config = settings.apply(app.base_config)
        except ValueError as exc:
            return error_event("bad_settings", f"Those settings were not saved: {exc}")
        if app.store is not None:
            await asyncio.to_thread(app.store.set_setting, "settings", asdict(settings))
        old, app.settings = app.settings, settings
        app.sessions.reconfigure(config, reload_voice=settings.voice_changed(old) and app.options.voice != "off")
        app.channel.send(app.settings_event(saved=True))
        return None

    async def pair(self, command: Command) -> Event | None:
        code = command.get("code")
        if not isinstance(code, str) or not code.strip():
            return error_event("pairing_failed", "Type the pairing code from the server's operator "
                                                 "(stella-server device add NAME) first.")
        app = self.app
        url = app.config.server_url
        try:
            creds = await pair(url, code.strip())
        except CredentialsRejected as exc:
            return error_event("pairing_failed", f"The server did not accept that code: {exc}")
        except TransportClosed as exc:
            return error_event("pairing_failed", f"Could not reach the server at {url} to pair: {exc}")
        if app.store is not None:
            await asyncio.to_thread(save_pairing, app.store, creds)
        app.link.paired(creds)
        app.channel.send(app.settings_event(saved=True))
        return None

    async def frames(self, ws: ServerConnection, command: Command) -> Event | None:
        try:
            width, height = int(command.get("width", 0)), int(command.get("height", 0))
        except (TypeError, ValueError):
            return bad_command("frames needs a width and a height in pixels")
        self.app.frames.subscribe(ws, width, height)
        return None
