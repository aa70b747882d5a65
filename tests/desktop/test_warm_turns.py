"""The app's turns start warm: its persona + history prefix is on llama-server's slot before the user
asks, the first turn included — judged by llama-server's own token counts (the app's turn timeline
carries them), never by a clock. Real engine, gateway and llama-server; typed turns."""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from sidecar.launch import AUTH_PREFIX, SUBPROTOCOL
from tests.desktop import aio
from tests.desktop.conftest import Engine, run_engine
from tests.desktop.gateway import Gateway

pytestmark = [pytest.mark.llama, pytest.mark.keyring]

QUESTIONS = ["Hello there, how are you?", "What do you like to do on weekends?"]


async def converse(engine: Engine) -> list[dict]:
    """Two typed turns, one after the other; the timeline of each."""
    timelines: list[dict] = []
    async with connect(f"ws://127.0.0.1:{engine.port}/", subprotocols=[SUBPROTOCOL, AUTH_PREFIX + engine.secret]) as ws:
        async def until(check) -> dict:  # noqa: ANN001
            while True:
                event = json.loads(await ws.recv())
                if check(event):
                    return event

        async with asyncio.timeout(240):
            await until(lambda e: e["type"] == "link" and e["connected"])
            for question in QUESTIONS:
                await ws.send(json.dumps({"cmd": "text", "text": question}))
                timelines.append(await until(lambda e: e["type"] == "turn"))
    return timelines


def test_every_turn_is_served_mostly_from_the_prompt_cache_the_first_included(
        gateway: Gateway, engine_env: dict[str, str], tmp_path: Path) -> None:
    # A persona no other test uses, so no earlier test left this prefix in a slot.
    env = {**engine_env, "STELLA_PERSONA__NAME": f"Vega{secrets.token_hex(3)}", "STELLA_CHAT__MAX_TOKENS": "16"}
    with run_engine(gateway.url, tmp_path / "s.db", env) as engine:
        timelines = aio.run(converse(engine))
    for n, timeline in enumerate(timelines, 1):
        prompt = timeline["prompt"]
        assert prompt["cached"] > 2 * prompt["evaluated"], f"turn {n}: the prefix was evaluated again: {prompt}"
