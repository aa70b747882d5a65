"""The window channel's messages, named once for both sides (as `remote_api.envelope` names the link's).

Events go out to the window (``{"type": ...}``): the engine's own (`APP_EVENTS`) and every
pipeline frame that is an event (`sidecar.frames`, the same records the headless JSONL log
writes). Commands come in (``{"cmd": ...}``): `COMMANDS`. `sidecar.channel` refuses to send an
event not named here; the engine answers a command not named here with a `bad_command` error;
the page gets the same names from `desktop/web/channel_schema.js`, generated from this module
(`python -m sidecar.channel_schema`, checked by `tests/desktop/test_channel_schema.py`), and
refuses to send or accept anything else.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sidecar import frames

# What the engine says of itself, beside the pipeline's events; each with where it comes from.
APP_EVENTS = {
    "hello": "engine/core.py: the greeting (protocol, pid, restarts, atlas)",
    "state": "engine/presence.py: idle / listening / thinking / speaking",
    "outfit": "engine/wardrobe.py: the outfit worn and who chose it",
    "link": "engine/link.py: the link to the gateway",
    "voice": "engine/voice_session.py: the voice loop's status",
    "settings": "engine/settings.py: the settings, their choices and what was saved",
    "history": "engine/stored.py: the conversation so far",
    "store": "engine/unlock.py: the encrypted store (locked, open, its key)",
    "error": "channel.py: a problem to show in plain words",
}

COMMANDS = {
    "text": "a typed message",
    "ptt_start": "push-to-talk pressed",
    "ptt_stop": "push-to-talk released",
    "cancel": "stop the reply",
    "outfit": "wear this outfit (id)",
    "settings": "read the settings, or save `values`",
    "pair": "redeem a pairing code",
    "frames": "stream the character as PNG frames (no WebGL)",
    "unlock": "open the store (passphrase, or skip)",
}


def frame_events() -> frozenset[str]:
    """The event names of the pipeline's frames."""
    found: set[str] = set()
    todo: list[type[frames.Frame]] = [frames.Frame]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.event is not None:
            found.add(cls.event)
    return frozenset(found)


EVENTS = frozenset(APP_EVENTS) | frame_events()


class UnknownMessage(ValueError):
    """An event or command that the channel's schema does not name."""


def check_event(event: dict[str, Any]) -> None:
    if event.get("type") not in EVENTS:
        raise UnknownMessage(f"event type {event.get('type')!r} is not one of the window channel's "
                             "(sidecar/channel_schema.py); add it there and regenerate desktop/web/channel_schema.js")


JS_FILE = Path(__file__).resolve().parents[1] / "desktop" / "web" / "channel_schema.js"


def render_js() -> str:
    """desktop/web/channel_schema.js as this module makes it."""
    def names(items: frozenset[str] | dict[str, str]) -> str:
        return "".join(f"  '{name}',\n" for name in sorted(items))

    return ("// Generated from sidecar/channel_schema.py by `python -m sidecar.channel_schema`: do not edit.\n"
            "// The window channel's messages: events the engine sends, commands the page may send.\n\n"
            f"export const EVENTS = new Set([\n{names(EVENTS)}]);\n\n"
            f"export const COMMANDS = new Set([\n{names(COMMANDS)}]);\n")


if __name__ == "__main__":
    JS_FILE.write_text(render_js(), encoding="utf-8")
    print(f"wrote {JS_FILE}", file=sys.stderr)
