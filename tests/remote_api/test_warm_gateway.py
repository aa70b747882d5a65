"""The gateway's side of warm-ups, over the fake llama-server: the slot it pins, no output asked,
and the device's bound of replies respected."""

from __future__ import annotations

import asyncio
import dataclasses

from remote_api.client import Done, LinkClient
from tests.fakes.llama_server import FakeLlamaServer

from .harness import FAST, GatewayThread, collect

PREFIX = [{"role": "system", "content": "You are Stella."}, {"role": "user", "content": "Hi."},
          {"role": "assistant", "content": "Hello!"}]
TURN = [*PREFIX, {"role": "user", "content": "Say something."}]


def _generations(fake: FakeLlamaServer) -> list[dict]:
    return [r.body for r in fake.requests if r.path.endswith("/v1/chat/completions") and r.body]


def test_a_warm_up_asks_for_no_output_on_the_sessions_slot_and_the_turn_uses_that_slot(fake_upstream):
    with GatewayThread([fake_upstream.url], "chat", health_interval=0.5) as gw:
        async def scenario():
            async with LinkClient(gw.url, FAST, anonymous=True) as client:
                client.warm(PREFIX)
                for _ in range(200):
                    if _generations(fake_upstream):
                        break
                    await asyncio.sleep(0.05)
                return await collect(client.chat(TURN, max_tokens=5))

        reply = asyncio.run(scenario())
    assert isinstance(reply.end, Done)
    warm, turn = _generations(fake_upstream)[:2]
    assert warm["messages"] == PREFIX and warm["max_tokens"] == 0
    assert turn["messages"] == TURN and turn["max_tokens"] == 5 and turn["id_slot"] == warm["id_slot"]


def test_no_warm_up_runs_while_the_device_is_at_its_bound_of_replies(fake_upstream):
    fake_upstream.delay = 0.05  # a reply of 40 tokens streams for ~2 s
    with GatewayThread([fake_upstream.url], "chat", dataclasses.replace(FAST, max_generations_per_device=1),
                       health_interval=0.5) as gw:
        async def scenario():  # two sessions of one device: b's warm-up would have a slot of its own
            async with (LinkClient(gw.url, FAST, anonymous=True) as a,
                        LinkClient(gw.url, FAST, anonymous=True) as b):
                reply = await collect(a.chat(TURN, max_tokens=40),
                                      lambda token: b.warm(PREFIX) if token.index == 1 else None)
                await asyncio.sleep(0.5)  # a warm-up let through would reach the server by now
                return reply

        reply = asyncio.run(scenario())
    assert isinstance(reply.end, Done) and len(reply.tokens) == 40, "the reply itself is untouched"
    assert [g["max_tokens"] for g in _generations(fake_upstream)] == [40], "no warm-up was sent upstream"
