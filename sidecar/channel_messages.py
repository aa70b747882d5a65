"""The window channel's messages as types: one frozen dataclass per engine event and per command.

Each class carries its wire name (`type` for an event, `cmd` for a command) and its docstring
says what it is; `sidecar.channel_schema` derives the schema's tables and the page's
`channel_schema.js` from the classes listed in `EVENT_TYPES` and `COMMAND_TYPES`, so a message
is named once. Events go out as ``{"type": ..., **fields}`` (`AppEvent.to_wire`); commands come
in through `parse_command`, which refuses an unknown `cmd`, a missing or unknown field and a
field of the wrong type, saying which and what to send (the engine answers that with a
`bad_command` error and the connection stays up). The pipeline's frames that are events keep
their own types (`sidecar.frames`).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

PresenceState = Literal["idle", "listening", "thinking", "speaking"]
VoiceStatus = Literal["loading", "ready", "off"]


# --- events: engine -> window ------------------------------------------------------------


@dataclass(frozen=True)
class AppEvent:
    """What the engine says of itself (beside the pipeline's events)."""

    type: ClassVar[str]

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.type, **dataclasses.asdict(self)}


@dataclass(frozen=True)
class Hello(AppEvent):
    """engine/core.py: the greeting (protocol, pid, restarts, last exit)."""

    type: ClassVar[str] = "hello"
    pid: int
    restarts: int
    last_exit: str
    protocol: int = 1


@dataclass(frozen=True)
class State(AppEvent):
    """engine/presence.py: idle / listening / thinking / speaking."""

    type: ClassVar[str] = "state"
    state: PresenceState


@dataclass(frozen=True)
class Outfit(AppEvent):
    """engine/wardrobe.py: the outfit worn and who chose it."""

    type: ClassVar[str] = "outfit"
    id: str
    source: str  # "user", "store"


@dataclass(frozen=True)
class Link(AppEvent):
    """engine/link.py: the link to the gateway."""

    type: ClassVar[str] = "link"
    transport: str
    connected: bool
    retry_in: float | None
    attempt: int
    detail: str
    refused: bool


@dataclass(frozen=True)
class Voice(AppEvent):
    """engine/voice_session.py: the voice loop's status."""

    type: ClassVar[str] = "voice"
    status: VoiceStatus
    detail: str
    wake_engine: str
    wake_word: str  # as the window shows it; "" when there is none
    enrolled: bool = False  # the user taught her their voice (Settings): her name wakes her for them


@dataclass(frozen=True)
class Settings(AppEvent):
    """engine/settings.py: the settings, their choices and what was saved."""

    type: ClassVar[str] = "settings"
    values: dict[str, str]
    choices: dict[str, list[str]]
    paired: bool
    saved: bool = False


@dataclass(frozen=True)
class Turn:
    """One line of the transcript: what the user heard of an interrupted reply."""

    role: str
    text: str
    interrupted: bool


@dataclass(frozen=True)
class History(AppEvent):
    """engine/stored.py: the conversation so far."""

    type: ClassVar[str] = "history"
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Remembered:
    """One fact she remembers: the sentence, the user's words it came from ("" once those were forgotten), when."""

    id: int
    said: str
    source: str
    when_ms: int


@dataclass(frozen=True)
class Memory(AppEvent):
    """engine/stored.py: the facts she remembers about the user, each with where it came from."""

    type: ClassVar[str] = "memory"
    facts: tuple[Remembered, ...]


@dataclass(frozen=True)
class StoreState(AppEvent):
    """engine/unlock.py: the encrypted store (opening, open, off) and how it was unlocked."""

    type: ClassVar[str] = "store"
    status: Literal["opening", "open", "off"]
    key: str  # "keyring", "passphrase", or "" while not open


@dataclass(frozen=True)
class StoreLocked(AppEvent):
    """engine/unlock.py: the store waits for a passphrase: why, and what went wrong last."""

    type: ClassVar[str] = "store"
    mode: Literal["create", "unlock"]
    message: str
    keyring_help: str
    detail: str
    error: str = ""
    status: Literal["locked"] = "locked"


@dataclass(frozen=True)
class Error(AppEvent):
    """channel.py: a problem to show in plain words; the engine goes on."""

    type: ClassVar[str] = "error"
    code: str
    message: str
    fatal: bool = False


def bad_command(message: str) -> Error:
    return Error("bad_command", message)


EVENT_TYPES: tuple[type[AppEvent], ...] = (Hello, State, Outfit, Link, Voice, Settings, History, Memory,
                                           StoreState, StoreLocked, Error)


# --- commands: window -> engine ----------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """What the window asks of the engine."""

    cmd: ClassVar[str]


@dataclass(frozen=True)
class Text(Command):
    """a typed message"""

    cmd: ClassVar[str] = "text"
    text: str


@dataclass(frozen=True)
class PttStart(Command):
    """push-to-talk pressed"""

    cmd: ClassVar[str] = "ptt_start"


@dataclass(frozen=True)
class PttStop(Command):
    """push-to-talk released"""

    cmd: ClassVar[str] = "ptt_stop"


@dataclass(frozen=True)
class Cancel(Command):
    """stop the reply"""

    cmd: ClassVar[str] = "cancel"


@dataclass(frozen=True)
class WearOutfit(Command):
    """wear this outfit (id)"""

    cmd: ClassVar[str] = "outfit"
    id: str


@dataclass(frozen=True)
class SettingsCmd(Command):
    """read the settings, or save `values`"""

    cmd: ClassVar[str] = "settings"
    values: dict[str, Any] | None = None


@dataclass(frozen=True)
class Enrol(Command):
    """teach her the user's voice (three takes of the wake word), cancel that, or forget the voice"""

    cmd: ClassVar[str] = "enrol"
    action: Literal["start", "cancel", "forget"]


@dataclass(frozen=True)
class Pair(Command):
    """redeem a pairing code"""

    cmd: ClassVar[str] = "pair"
    code: str


@dataclass(frozen=True)
class Frames(Command):
    """stream the character as PNG frames (no WebGL); a size of 0 stops them"""

    cmd: ClassVar[str] = "frames"
    width: int
    height: int


@dataclass(frozen=True)
class Unlock(Command):
    """open the store (passphrase, keyring, or skip)"""

    cmd: ClassVar[str] = "unlock"
    how: Literal["passphrase", "keyring", "skip"]
    passphrase: str | None = None

    def __post_init__(self) -> None:
        if self.how == "passphrase" and self.passphrase is None:
            raise BadCommand(f"unlocking with a passphrase needs the passphrase; send {usage(Unlock)}")


@dataclass(frozen=True)
class MemoryCmd(Command):
    """what she remembers: list it, forget one fact (id), or forget all"""

    cmd: ClassVar[str] = "memory"
    action: Literal["list", "forget", "forget_all"]
    id: int | None = None

    def __post_init__(self) -> None:
        if self.action == "forget" and self.id is None:
            raise BadCommand(f"forgetting one fact needs its id (from the memory event); send {usage(MemoryCmd)}")


COMMAND_TYPES: tuple[type[Command], ...] = (Text, PttStart, PttStop, Cancel, WearOutfit, SettingsCmd, Enrol, Pair,
                                            Frames, Unlock, MemoryCmd)
BY_NAME: dict[str, type[Command]] = {c.cmd: c for c in COMMAND_TYPES}


class BadCommand(ValueError):
    """A command the engine cannot take as sent: the message says what was wrong and what to send."""


@dataclass(frozen=True)
class FieldSpec:
    """One field of a message as the wire sees it."""

    name: str
    hint: Any  # the field's type, as `describe` and `conforms` read it
    required: bool

    @property
    def what(self) -> str:
        return describe(self.hint)


@functools.cache
def field_specs(cls: type) -> tuple[FieldSpec, ...]:
    """The wire fields of a message class, read off its dataclass fields and type hints."""
    hints = typing.get_type_hints(cls)
    return tuple(FieldSpec(f.name, hints[f.name], f.default is dataclasses.MISSING
                           and f.default_factory is dataclasses.MISSING) for f in dataclasses.fields(cls))


def describe(hint: Any) -> str:
    """What a value of this type is, in the words of an error message."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return "one of " + ", ".join(f'"{a}"' for a in args)
    if origin in (types.UnionType, typing.Union):
        return " or ".join("null" if a is type(None) else describe(a) for a in args)
    return {str: "text", int: "a whole number", bool: "true or false", dict: "an object"}[origin or hint]


def conforms(value: Any, hint: Any) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return value in args and isinstance(value, str)
    if origin in (types.UnionType, typing.Union):
        return any(conforms(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, origin or hint)


def json_kind(value: Any) -> str:
    """The kind of a JSON value (not the value: it may be a passphrase)."""
    if isinstance(value, bool):
        return "true or false"
    return {str: "text", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), "null")


def usage(cls: type[Command]) -> str:
    """What to send for this command: its name, and each field with what it must be."""
    parts = [f'"cmd": "{cls.cmd}"'] + [f'"{s.name}": {s.what}' + ("" if s.required else " (optional)")
                                       for s in field_specs(cls)]
    return "{" + ", ".join(parts) + "}"


def parse_command(raw: dict[str, Any]) -> Command:
    """The typed command in a decoded JSON object; BadCommand saying which field is wrong and what to send."""
    name = raw.get("cmd")
    cls = BY_NAME.get(name) if isinstance(name, str) else None
    if cls is None:
        raise BadCommand(f"unknown command {name!r}; the commands are {', '.join(sorted(BY_NAME))}")
    specs = field_specs(cls)
    unknown = sorted(set(raw) - {"cmd"} - {s.name for s in specs})
    if unknown:
        raise BadCommand(f"the {name!r} command has no field {', '.join(map(repr, unknown))}; send {usage(cls)}")
    for spec in specs:
        if spec.name not in raw:
            if spec.required:
                raise BadCommand(f"the {name!r} command needs {spec.name!r} ({spec.what}); send {usage(cls)}")
        elif not conforms(raw[spec.name], spec.hint):
            raise BadCommand(f"{spec.name!r} in the {name!r} command must be {spec.what}, not "
                             f"{json_kind(raw[spec.name])}; send {usage(cls)}")
    return cls(**{s.name: raw[s.name] for s in specs if s.name in raw})
