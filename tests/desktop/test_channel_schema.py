"""The window channel's one schema (sidecar/channel_schema.py): both sides name the same messages,
and a message unknown to either side fails there."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from sidecar.channel import Channel
from sidecar.channel_schema import COMMANDS, EVENTS, JS_FILE, UnknownMessage, render_js
from sidecar.engine.commands import Commands

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "desktop" / "web"


def test_the_pages_schema_is_generated_from_the_engines() -> None:
    assert JS_FILE.read_text(encoding="utf-8") == render_js(), "run `python -m sidecar.channel_schema`"


def test_every_event_the_engine_builds_is_in_the_schema() -> None:
    built = {m for path in (ROOT / "sidecar").rglob("*.py")
             for m in re.findall(r"""["']type["']: ["'](\w+)["']""", path.read_text(encoding="utf-8"))}
    assert "hello" in built and built <= EVENTS, built - EVENTS


def test_the_page_handles_and_sends_only_what_the_schema_names() -> None:
    app = (WEB / "app.js").read_text(encoding="utf-8")
    table = app[app.index("const handlers = {"):]
    table = table[:table.index("\n  };\n")]
    handled = set(re.findall(r"^    (\w+): ", table, re.M))
    pattern = re.compile(r"cmd: (?:\w+ \? )?'(\w+)'(?: : '(\w+)')?")  # also cmd: down ? 'ptt_start' : 'ptt_stop'
    sent = {name for path in WEB.glob("*.js") for names in pattern.findall(path.read_text(encoding="utf-8"))
            for name in names if name}
    sent |= set(re.findall(r'"cmd": "(\w+)"', (ROOT / "desktop" / "terminal.py").read_text(encoding="utf-8")))
    assert {"token", "outfit", "hello"} <= handled <= EVENTS, handled - EVENTS
    assert {"text", "ptt_start", "ptt_stop", "outfit", "unlock", "cancel"} <= sent <= set(COMMANDS), \
        sent - set(COMMANDS)


def test_the_engine_has_one_handler_per_command_of_the_schema() -> None:
    commands = Commands(SimpleNamespace(unlock=SimpleNamespace(answer=None)))  # type: ignore[arg-type]
    assert set(commands.handlers(None)) == set(COMMANDS)  # type: ignore[arg-type]


def test_an_unknown_command_gets_a_bad_command_answer_on_the_engine_side() -> None:
    sent = []
    app = SimpleNamespace(channel=SimpleNamespace(send=lambda event, to: sent.append((event, to))))
    asyncio.run(Commands(app).handle("page", {"cmd": "fly"}))  # type: ignore[arg-type]
    assert sent == [({"type": "error", "code": "bad_command", "message": "unknown command 'fly'", "fatal": False},
                     ["page"])]


def test_the_engine_refuses_to_send_an_event_the_page_does_not_know() -> None:
    async def send(event: dict) -> None:
        channel = Channel("s" * 32, on_command=None, greeting=None)  # type: ignore[arg-type]
        channel.send(event)

    asyncio.run(send({"type": "state", "state": "idle"}))
    with pytest.raises(UnknownMessage, match="'dance' is not one of the window channel's"):
        asyncio.run(send({"type": "dance"}))


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
            command: threw(() => channel.send({cmd: 'fly'})),
            offline: channel.send({cmd: 'text', text: 'Hi'}),
        };
    }""")
    assert result == {"known": "Hi", "event": 'unknown event "dance" from the engine (channel_schema.js)',
                      "command": 'unknown command "fly" (channel_schema.js)', "offline": False}
