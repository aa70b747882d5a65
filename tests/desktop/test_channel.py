"""The local channel between the window and the engine: who gets in, and what they hear first."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from sidecar.launch import AUTH_PREFIX, SUBPROTOCOL
from tests.desktop import aio
from tests.desktop.conftest import Engine

pytestmark = [pytest.mark.llama, pytest.mark.keyring]


async def _greeting(port: int, protocols: list[str]) -> list[dict]:
    async with connect(f"ws://127.0.0.1:{port}/", subprotocols=protocols, open_timeout=5) as ws:
        events = []
        while not events or events[-1]["type"] != "state":
            events.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
        return events


@pytest.mark.parametrize("protocols", [[SUBPROTOCOL], [SUBPROTOCOL, AUTH_PREFIX + "0" * 64]],
                         ids=["no secret", "wrong secret"])
def test_a_client_without_the_launch_secret_is_refused(engine: Engine, protocols: list[str]) -> None:
    with pytest.raises(InvalidStatus) as refused:
        aio.run(_greeting(engine.port, protocols))
    assert refused.value.response.status_code == 403


def test_the_window_gets_in_with_the_secret_and_hears_where_things_stand(engine: Engine) -> None:
    events = aio.run(_greeting(engine.port, [SUBPROTOCOL, AUTH_PREFIX + engine.secret]))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "hello" and events[0]["restarts"] == 0
    assert {"settings", "history", "outfit", "link", "voice", "state"} <= set(kinds)
    assert next(e for e in events if e["type"] == "outfit")["id"] == "hoodie"


def test_the_secret_is_never_on_a_command_line(engine: Engine) -> None:
    pid = engine.supervisor.pid
    assert pid is not None
    assert engine.secret.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()


def test_a_bad_command_gets_a_plain_answer_and_the_channel_stays_open(engine: Engine) -> None:
    async def talk() -> list[dict]:
        protocols = [SUBPROTOCOL, AUTH_PREFIX + engine.secret]
        async with connect(f"ws://127.0.0.1:{engine.port}/", subprotocols=protocols) as ws:
            for raw in ("not json", json.dumps({"cmd": "fly"}), json.dumps({"cmd": "outfit", "id": "ball_gown"}),
                        json.dumps({"cmd": "outfit", "id": "space"})):
                await ws.send(raw)
            answers = []
            while len([a for a in answers if a["type"] in ("error", "outfit")]) < 5:  # greeting outfit + 4 answers
                answers.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
            return answers

    answers = aio.run(talk())
    errors = [a["message"] for a in answers if a["type"] == "error"]
    assert errors == ["unreadable command (Expecting value: line 1 column 1 (char 0))",
                      "unknown command 'fly'; the commands are cancel, enrol, frames, memory, outfit, pair, ptt_start, "
                      "ptt_stop, settings, text, unlock", "there is no outfit 'ball_gown'"]
    assert [a["id"] for a in answers if a["type"] == "outfit"][-1] == "space"
