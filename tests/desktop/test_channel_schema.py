"""The window channel's one schema (sidecar/channel_messages.py, read off by sidecar/channel_schema.py):
both sides name the same messages with the same fields, a message unknown to either side fails
there, and a command of the wrong shape is refused saying what to send."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import inspect
import re
from pathlib import Path
from typing import ClassVar

import pytest

from sidecar import channel_messages
from sidecar.channel import Channel
from sidecar.channel_messages import (
    COMMAND_TYPES,
    EVENT_TYPES,
    AppEvent,
    BadCommand,
    Cancel,
    Command,
    Frames,
    Pair,
    PttStart,
    PttStop,
    SettingsCmd,
    State,
    Text,
    Unlock,
    WearOutfit,
    parse_command,
)
from sidecar.channel_schema import COMMANDS, EVENT_FIELDS, EVENTS, JS_FILE, UnknownMessage, render_js
from sidecar.engine import commands

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "desktop" / "web"


def test_the_pages_schema_is_generated_from_the_engines() -> None:
    assert JS_FILE.read_text(encoding="utf-8") == render_js(), "run `python -m sidecar.channel_schema`"


def js_tables() -> tuple[dict[str, set[str] | None], dict[str, tuple[set[str], set[str]]]]:
    """The events (name -> fields) and commands (name -> required, optional) as the page reads them."""
    js = JS_FILE.read_text(encoding="utf-8")
    events, commands = js.split("export const COMMANDS")
    fields = lambda listed: set(re.findall(r"'(\w+)'", listed))  # noqa: E731
    return ({name: None if listed == "null" else fields(listed)
             for name, listed in re.findall(r"^  \['(\w+)', (null|\[.*?\])\],  //", events, re.M)},
            {name: (fields(required), fields(optional)) for name, required, optional in
             re.findall(r"^  \['(\w+)', \{ required: (\[.*?\]), optional: (\[.*?\]) \}\],  //", commands, re.M)})


def test_every_message_class_is_in_the_pages_schema_and_the_page_knows_no_other() -> None:
    events, commands_js = js_tables()
    for cls in EVENT_TYPES:
        assert {f.name for f in dataclasses.fields(cls)} <= (events[cls.type] or set()), cls
    assert {c.type for c in EVENT_TYPES} <= set(events) and set(events) == EVENTS
    assert {name: fields for name, fields in events.items() if fields is not None} == \
        {name: set(fields) for name, fields in EVENT_FIELDS.items() if fields is not None}
    assert commands_js == {c.cmd: ({f.name for f in dataclasses.fields(c) if f.default is dataclasses.MISSING},
                                   {f.name for f in dataclasses.fields(c) if f.default is not dataclasses.MISSING})
                           for c in COMMAND_TYPES}
    assert set(COMMANDS) == set(commands_js)


def test_every_message_class_is_listed_once_and_built_only_through_its_class() -> None:
    defined = [c for _, c in inspect.getmembers(channel_messages, inspect.isclass)
               if c.__module__ == channel_messages.__name__]
    assert {c for c in defined if issubclass(c, AppEvent) and c is not AppEvent} == set(EVENT_TYPES)
    assert {c for c in defined if issubclass(c, Command) and c is not Command} == set(COMMAND_TYPES)
    assert len(set(COMMANDS)) == len(COMMAND_TYPES)
    ad_hoc = [f"{path.relative_to(ROOT)}: {m}" for path in [*(ROOT / "sidecar" / "engine").glob("*.py"),
                                                            *(ROOT / "sidecar").glob("channel*.py")]
              for m in re.findall(r"""\{["'](?:type|cmd)["']: ["']\w+["']""", path.read_text(encoding="utf-8"))]
    assert not ad_hoc, ad_hoc


def test_the_engine_dispatches_every_command_class_on_its_type() -> None:
    answer = next(node for node in ast.walk(ast.parse(inspect.getsource(commands.Commands)))
                  if isinstance(node, ast.AsyncFunctionDef) and node.name == "answer")
    matched = {p.cls.id for node in ast.walk(answer) if isinstance(node, ast.match_case)
               for p in ast.walk(node.pattern) if isinstance(p, ast.MatchClass) and isinstance(p.cls, ast.Name)}
    assert matched == {c.__name__ for c in COMMAND_TYPES}
    assert "COMMANDS" not in inspect.getsource(commands), "no dispatch by the command's name"


def test_the_page_handles_and_sends_only_what_the_schema_names() -> None:
    app = (WEB / "app.js").read_text(encoding="utf-8")
    table = app[app.index("const handlers = {"):]
    table = table[:table.index("\n  };\n")]
    entries = re.split(r"^    (\w+): ", table, flags=re.M)[1:]
    handled = dict(zip(entries[::2], entries[1::2], strict=True))
    pattern = re.compile(r"cmd: (?:\w+ \? )?'(\w+)'(?: : '(\w+)')?")  # also cmd: down ? 'ptt_start' : 'ptt_stop'
    sent = {name for path in WEB.glob("*.js") for names in pattern.findall(path.read_text(encoding="utf-8"))
            for name in names if name}
    sent |= set(re.findall(r'"cmd": "(\w+)"', (ROOT / "desktop" / "terminal.py").read_text(encoding="utf-8")))
    assert {"token", "outfit", "hello"} <= set(handled) <= EVENTS, set(handled) - EVENTS
    assert {"text", "ptt_start", "ptt_stop", "outfit", "unlock", "cancel"} <= sent <= set(COMMANDS), \
        sent - set(COMMANDS)
    for name, body in handled.items():  # what a handler reads of its event is what the engine sends
        read = set(re.findall(r"\be\.(\w+)", body))
        assert EVENT_FIELDS[name] is None or read <= EVENT_FIELDS[name], (name, read - EVENT_FIELDS[name])


@pytest.mark.parametrize(("raw", "command"), [
    ({"cmd": "text", "text": "Hi"}, Text("Hi")),
    ({"cmd": "ptt_start"}, PttStart()),
    ({"cmd": "ptt_stop"}, PttStop()),
    ({"cmd": "cancel"}, Cancel()),
    ({"cmd": "outfit", "id": "space"}, WearOutfit("space")),
    ({"cmd": "settings"}, SettingsCmd(None)),
    ({"cmd": "settings", "values": {"wake_phrase": "hi"}}, SettingsCmd({"wake_phrase": "hi"})),
    ({"cmd": "pair", "code": "829X7-DENYR"}, Pair("829X7-DENYR")),
    ({"cmd": "frames", "width": 640, "height": 0}, Frames(640, 0)),
    ({"cmd": "unlock", "how": "skip"}, Unlock("skip")),
    ({"cmd": "unlock", "how": "passphrase", "passphrase": "correct horse"}, Unlock("passphrase", "correct horse")),
])
def test_a_well_formed_command_is_parsed_into_its_type(raw: dict, command: Command) -> None:
    assert parse_command(raw) == command


@pytest.mark.parametrize(("raw", "said"), [
    ({"cmd": "fly"}, "unknown command 'fly'; the commands are cancel, enrol, frames, memory, outfit, pair, ptt_start, "
                     "ptt_stop, settings, text, unlock"),
    ({"cmd": "text"}, """the 'text' command needs 'text' (text); send {"cmd": "text", "text": text}"""),
    ({"cmd": "text", "text": 3}, """'text' in the 'text' command must be text, not a number; send {"cmd": "text", """),
    ({"cmd": "cancel", "turn": 2}, """the 'cancel' command has no field 'turn'; send {"cmd": "cancel"}"""),
    ({"cmd": "frames", "width": 640}, "the 'frames' command needs 'height' (a whole number)"),
    ({"cmd": "frames", "width": True, "height": 480}, "'width' in the 'frames' command must be a whole number, "
                                                      "not true or false"),
    ({"cmd": "frames", "width": 640.5, "height": 480}, "'width' in the 'frames' command must be a whole number"),
    ({"cmd": "settings", "values": ["wake_phrase"]}, "'values' in the 'settings' command must be an object or "
                                                     "null, not a list"),
    ({"cmd": "unlock", "how": "guess"}, """'how' in the 'unlock' command must be one of "passphrase", "keyring", """
                                        '"skip", not text'),
    ({"cmd": "unlock", "how": "passphrase"}, "unlocking with a passphrase needs the passphrase; send "),
    ({"cmd": "unlock", "how": "passphrase", "passphrase": 12345678}, "'passphrase' in the 'unlock' command must "
                                                                    "be text or null, not a number"),
], ids=["unknown", "missing", "wrong type", "unknown field", "missing int", "bool for int", "float for int",
        "list for object", "not a choice", "passphrase missing", "passphrase not text"])
def test_a_command_of_the_wrong_shape_says_what_was_wrong_and_what_to_send(raw: dict, said: str) -> None:
    with pytest.raises(BadCommand) as refused:
        parse_command(raw)
    assert said in str(refused.value)
    assert "12345678" not in str(refused.value)  # never the value itself: it may be a passphrase


@dataclasses.dataclass(frozen=True)
class Dance(AppEvent):
    """An event the schema does not name."""

    type: ClassVar[str] = "dance"


@dataclasses.dataclass(frozen=True)
class MoodyState(State):
    """The state event with a field the schema does not name."""

    mood: str = "grumpy"


def test_the_engine_refuses_to_send_an_event_the_page_does_not_know() -> None:
    async def send(event: AppEvent) -> None:
        channel = Channel("s" * 32, on_command=None, greeting=None)  # type: ignore[arg-type]
        channel.send(event)

    asyncio.run(send(State("idle")))
    with pytest.raises(UnknownMessage, match="'dance' is not one of the window channel's"):
        asyncio.run(send(Dance()))
    with pytest.raises(UnknownMessage, match="the 'state' event has no field 'mood'"):
        asyncio.run(send(MoodyState("idle")))


@pytest.mark.browser
def test_the_page_refuses_unknown_events_and_commands(page, assets: str) -> None:  # noqa: ANN001
    page.goto(f"{assets}/desktop/web/icon.svg")  # any page of the origin, to import the module from
    result = page.evaluate("""async () => {
        const m = await import('/desktop/web/channel.js');
        const threw = (f) => { try { f(); return ''; } catch (e) { return e.message; } };
        const channel = new m.Channel({port: 9, secret: 's'.repeat(32)});
        return {
            known: m.parseEvent('{"type": "token", "turn": 1, "text": "Hi"}').text,
            event: threw(() => m.parseEvent('{"type": "dance"}')),
            field: threw(() => m.parseEvent('{"type": "state", "state": "idle", "mood": "grumpy"}')),
            command: threw(() => channel.send({cmd: 'fly'})),
            missing: threw(() => channel.send({cmd: 'outfit'})),
            extra: threw(() => channel.send({cmd: 'text', text: 'Hi', loud: true})),
            offline: channel.send({cmd: 'text', text: 'Hi'}),
        };
    }""")
    assert result == {"known": "Hi", "event": 'unknown event "dance" from the engine (channel_schema.js)',
                      "field": 'the "state" event from the engine has unknown fields mood (channel_schema.js)',
                      "command": 'unknown command "fly" (channel_schema.js)',
                      "missing": 'the "outfit" command needs id (channel_schema.js)',
                      "extra": 'the "text" command has no field loud (channel_schema.js)', "offline": False}
