"""The window channel's schema, derived from its typed messages (as `remote_api.envelope` names the link's).

Events go out to the window (``{"type": ...}``): the engine's own (`sidecar.channel_messages`'s
`EVENT_TYPES`) and every pipeline frame that is an event (`sidecar.frames`, the same records the
headless JSONL log writes). Commands come in (``{"cmd": ...}``): `COMMAND_TYPES`. The tables
here (names, docs, fields) are read off those classes, so each message is named once.
`sidecar.channel` refuses to send an event not named here or carrying a field it does not name;
the page gets the same names and fields from `desktop/web/channel_schema.js`, generated from this
module (`python -m sidecar.channel_schema`, checked by `tests/desktop/test_channel_schema.py`),
and refuses to send or accept anything else.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from sidecar import frames
from sidecar.channel_messages import COMMAND_TYPES, EVENT_TYPES, field_specs


def _doc(cls: type) -> str:
    return (cls.__doc__ or "").strip().splitlines()[0]


# What the engine says of itself, beside the pipeline's events; each with where it comes from.
APP_EVENTS: dict[str, str] = {name: " / ".join(_doc(c) for c in EVENT_TYPES if c.type == name)
                               for name in dict.fromkeys(c.type for c in EVENT_TYPES)}
COMMANDS: dict[str, str] = {c.cmd: _doc(c) for c in COMMAND_TYPES}


def frame_event_types() -> list[type[frames.Frame]]:
    """The pipeline's frame classes that are events."""
    found: list[type[frames.Frame]] = []
    todo: list[type[frames.Frame]] = [frames.Frame]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.event is not None:
            found.append(cls)
    return found


def frame_fields(cls: type[frames.Frame]) -> frozenset[str] | None:
    """The fields of a frame's event record (`Frame.event_data`), or None when the class words its own."""
    if "event_data" in vars(cls):
        return None
    return frozenset({"t"} | {f.name for f in dataclasses.fields(cls) if str(f.type).strip() != "np.ndarray"})


def _event_fields() -> dict[str, frozenset[str] | None]:
    """Each event's name -> the fields it may carry (None: not checked field by field)."""
    table: dict[str, frozenset[str] | None] = {}
    sources: list[tuple[str, frozenset[str] | None]] = [
        (c.type, frozenset(f.name for f in dataclasses.fields(c))) for c in EVENT_TYPES]
    sources += [(c.event, frame_fields(c)) for c in frame_event_types() if c.event is not None]
    for name, names in sources:  # a name two classes share ("error", "store") may carry the fields of either
        unchecked = names is None or (name in table and table[name] is None)
        table[name] = None if unchecked else (table.get(name) or frozenset()) | names
    return table


EVENT_FIELDS = _event_fields()
EVENTS = frozenset(EVENT_FIELDS)


class UnknownMessage(ValueError):
    """An event or command that the channel's schema does not name."""


def check_event(event: dict[str, Any]) -> None:
    name = event.get("type")
    if name not in EVENTS:
        raise UnknownMessage(f"event type {name!r} is not one of the window channel's "
                             "(sidecar/channel_messages.py, sidecar/frames.py); add it there and regenerate "
                             "desktop/web/channel_schema.js")
    allowed = EVENT_FIELDS[name]
    extra = sorted(set(event) - {"type"} - (allowed or set(event)))
    if extra:
        raise UnknownMessage(f"the {name!r} event has no field {', '.join(map(repr, extra))} in the window "
                             "channel's schema; add it to its class and regenerate desktop/web/channel_schema.js")


JS_FILE = Path(__file__).resolve().parents[1] / "desktop" / "web" / "channel_schema.js"


def render_js() -> str:
    """desktop/web/channel_schema.js as this module makes it."""
    def names(items: frozenset[str] | None) -> str:
        return "null" if items is None else json.dumps(sorted(items)).replace('"', "'")

    framed = {c.event: "a pipeline frame (sidecar/frames.py)" for c in frame_event_types()}

    def doc(*texts: str | None) -> str:
        return "  // " + " / ".join(filter(None, texts))

    events = "".join(f"  ['{name}', {names(EVENT_FIELDS[name])}],{doc(APP_EVENTS.get(name), framed.get(name))}\n"
                     for name in sorted(EVENTS))
    commands = "".join(
        f"  ['{c.cmd}', {{ required: {names(frozenset(s.name for s in field_specs(c) if s.required))}, "
        f"optional: {names(frozenset(s.name for s in field_specs(c) if not s.required))} }}],{doc(COMMANDS[c.cmd])}\n"
        for c in sorted(COMMAND_TYPES, key=lambda c: c.cmd))
    return ("// Generated from sidecar/channel_messages.py by `python -m sidecar.channel_schema`: do not edit.\n"
            "// The window channel's messages: events the engine sends, with the fields each may carry\n"
            "// (null: a pipeline record not checked field by field), and commands the page may send.\n\n"
            f"export const EVENTS = new Map([\n{events}]);\n\n"
            f"export const COMMANDS = new Map([\n{commands}]);\n")


if __name__ == "__main__":
    JS_FILE.write_text(render_js(), encoding="utf-8")
    print(f"wrote {JS_FILE}", file=sys.stderr)
