"""What the window asks of the engine over the channel: the typed commands of sidecar.channel_messages.

`answer` dispatches on the command's class; a handler returns an error event for the asking page
only (None when all went well); what the command changes reaches every page as ordinary events.
The handlers are handed the engine's parts they act on (`CommandTargets`) and change them only
through those parts' own methods.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.server import ServerConnection

from remote_api.credentials import CredentialsRejected, pair
from remote_api.transport import TransportClosed
from sidecar.channel import Channel
from sidecar.channel_messages import (
    Cancel,
    Command,
    Enrol,
    Error,
    Frames,
    MemoryCmd,
    Pair,
    PttStart,
    PttStop,
    SettingsCmd,
    Text,
    Unlock,
    WearOutfit,
    bad_command,
)
from sidecar.engine.frame_stream import FrameStream
from sidecar.engine.link import LinkKeeper
from sidecar.engine.presence import CANCELLED, NEW_MESSAGE, Presence
from sidecar.engine.settings import SettingsPanel
from sidecar.engine.stored import EngineStore
from sidecar.engine.unlock import StoreUnlock
from sidecar.engine.voice_session import Sessions
from sidecar.engine.wardrobe import Wardrobe
from sidecar.frames import EnrolFrame, InterruptionFrame, PushToTalkFrame, UserTextFrame

MAX_TEXT_CHARS = 2000


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

    async def handle(self, ws: ServerConnection, command: Command) -> None:
        error = await self.answer(ws, command)
        if error is not None:
            self.parts.channel.send(error, [ws])

    async def answer(self, ws: ServerConnection, command: Command) -> Error | None:
        """Do what `command` asks; the error for the asking page, if any."""
        match command:
            case Text(text=text):
                return await self.text(text)
            case PttStart() | PttStop():
                return await self.ptt(pressed=isinstance(command, PttStart))
            case Cancel():
                return await self.cancel()
            case WearOutfit(id=outfit):
                return self.outfit(outfit)
            case SettingsCmd(values=values):
                return await self.settings(ws, values)
            case Enrol(action=action):
                return await self.enrol(action)
            case Pair(code=code):
                return await self.pair(code)
            case Frames(width=width, height=height):
                self.parts.frames.subscribe(ws, width, height)
                return None
            case Unlock():
                return await self.parts.unlock.answer(command)
            case MemoryCmd(action=action, id=fact_id):
                return await self.memory(ws, action, fact_id)
        raise TypeError(f"no handler for the command {command!r}")  # a class of COMMAND_TYPES left out above

    async def text(self, text: str) -> Error | None:
        if not text.strip():
            return bad_command("a text command needs the words to send")
        if len(text) > MAX_TEXT_CHARS:
            return Error("too_long", f"That message is too long for Stella ({len(text)} characters); "
                                     f"keep it under {MAX_TEXT_CHARS}.")
        sessions = self.parts.sessions
        try:  # a pipeline being replaced (new settings, voice ready) is back within moments
            await asyncio.wait_for(sessions.serving.wait(), 10)
        except TimeoutError:
            return Error("not_ready", "Stella is not ready to answer yet; send it again in a moment.")
        assert sessions.pipeline is not None
        if self.parts.presence.state in ("thinking", "speaking"):  # the user takes the floor
            await sessions.pipeline.queue(InterruptionFrame(reason=NEW_MESSAGE))
        await sessions.pipeline.queue(UserTextFrame(text=text.strip()))
        return None

    async def ptt(self, pressed: bool) -> Error | None:
        sessions = self.parts.sessions
        if sessions.pipeline is None or sessions.loaded is None:
            return Error("no_voice", f"Push-to-talk needs the microphone. {sessions.voice.detail}")
        await sessions.pipeline.queue(PushToTalkFrame(pressed=pressed))
        return None

    async def cancel(self) -> None:
        if self.parts.sessions.pipeline is not None:
            await self.parts.sessions.pipeline.queue(InterruptionFrame(reason=CANCELLED))

    def outfit(self, outfit: str) -> Error | None:
        if outfit not in self.parts.wardrobe:
            return bad_command(f"there is no outfit {outfit!r}")
        self.parts.wardrobe.choose(outfit, "user")
        return None

    async def settings(self, ws: ServerConnection, values: dict[str, Any] | None) -> Error | None:
        panel = self.parts.settings
        if values is None:  # the panel opened: fresh device lists
            await panel.refresh_devices()
            self.parts.channel.send(panel.event(), [ws])
            return None
        try:
            config, voice_changed = await panel.save(values)
        except ValueError as exc:
            return Error("bad_settings", f"Those settings were not saved: {exc}")
        self.parts.sessions.reconfigure(config, reload_voice=voice_changed and self.parts.voice_allowed)
        self.parts.channel.send(panel.event(saved=True))
        return None

    async def enrol(self, action: str) -> Error | None:
        """Start or cancel teaching her the user's voice (the acoustic wake hears the takes and says how it
        goes: `EnrolmentFrame`), or forget the voice taught."""
        sessions = self.parts.sessions
        if action == "forget":
            await asyncio.to_thread(self.parts.kept.save_enrolment, None)
            sessions.enrolled(None)
            return None
        if sessions.pipeline is None or sessions.loaded is None:
            return Error("no_voice", f"Teaching her your voice needs the microphone. {sessions.voice.detail}")
        if not sessions.can_enrol and sessions.config.voice.language == "zh":
            # no acoustic model of 你好小星 exists (docs/voice.md#mandarin): there is nothing to choose
            return Error("no_enrolment", "教她认你的声音需要她名字的声学模型，目前只有英文的 “hey stella” 有；普通话的"
                                         "“你好小星”还没有。她仍然会听你说“你好小星”。")
        if not sessions.can_enrol:
            return Error("no_enrolment", "Teaching her your voice works with her name's own model: choose "
                                         "Engine “Her name” and the phrase “hey stella” first, and save.")
        await sessions.pipeline.queue(EnrolFrame(start=action == "start"))
        return None

    async def memory(self, ws: ServerConnection, action: str, fact_id: int | None) -> Error | None:
        """The Memory panel: what she remembers (to the asking page), or forgetting (every page hears the rest);
        the prompt no longer holds what was forgotten from her next turn on."""
        kept = self.parts.kept
        if not kept.is_open:
            return Error("no_store", "Stella remembers nothing this time: her encrypted store is not open.")
        if action == "list":
            self.parts.channel.send(await asyncio.to_thread(kept.memory_event), [ws])
            return None
        if await asyncio.to_thread(kept.forget, fact_id if action == "forget" else None) == 0 and action == "forget":
            return bad_command(f"there is no fact {fact_id} to forget; it may have been forgotten already")
        self.parts.sessions.conversation.forgotten()
        self.parts.channel.send(await asyncio.to_thread(kept.memory_event))
        self.parts.channel.send(await asyncio.to_thread(kept.history_event))
        return None

    async def pair(self, code: str) -> Error | None:
        if not code.strip():
            return Error("pairing_failed", "Type the pairing code from the server's operator "
                                           "(stella-server device add NAME) first.")
        url = self.parts.sessions.config.server_url
        try:
            creds = await pair(url, code.strip())
        except CredentialsRejected as exc:
            return Error("pairing_failed", f"The server did not accept that code: {exc}")
        except TransportClosed as exc:
            return Error("pairing_failed", f"Could not reach the server at {url} to pair: {exc}")
        await asyncio.to_thread(self.parts.kept.save_pairing, creds)
        self.parts.link.paired(creds)
        self.parts.channel.send(self.parts.settings.event(saved=True))
        return None
