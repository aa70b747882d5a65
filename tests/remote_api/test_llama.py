"""The link against a real llama-server (gemma3 270M, -np 2): streaming on both upstream APIs,
cancel freeing the slot, and a reply surviving five cuts identical to an uncut one."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from remote_api.client import Done, LinkClient

from .harness import FAST, GatewayThread, collect
from .proxy import TcpProxy

pytestmark = pytest.mark.llama

STORY = [{"role": "user", "content": "Write a long story about a dragon who learns to sing."}]


@pytest.fixture(scope="module")
def llama_gateway(llama_server):
    with GatewayThread([llama_server.url], "chat", upstream_key=llama_server.api_key) as gw:
        yield gw


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_a_reply_streams_token_by_token_from_llama_server(llama_server, api):
    with GatewayThread([llama_server.url], api, upstream_key=llama_server.api_key) as gw:
        async def scenario():
            async with LinkClient(gw.url, FAST, anonymous=True) as client:
                arrivals: list[float] = []
                reply = await collect(client.chat(STORY, max_tokens=24, temperature=0, seed=7),
                                      lambda t: arrivals.append(time.monotonic()), timeout=120)
                return reply, arrivals

        reply, arrivals = asyncio.run(scenario())
    assert isinstance(reply.end, Done) and reply.end.reason in ("stop", "length")
    assert len(reply.tokens) >= 8 and reply.end.tokens == len(reply.tokens)
    assert reply.text.strip()
    # token by token: the tokens reach the app spread over the time llama-server spent
    # generating them (a relay that buffered the reply would deliver them all at once)
    generating = reply.end.timings["predicted_ms"] / 1000
    assert arrivals[-1] - arrivals[0] > 0.5 * generating, (arrivals[-1] - arrivals[0], generating)


def test_cancel_mid_reply_frees_the_llama_server_slot_within_a_second(llama_server, llama_gateway):
    async def scenario():
        async with LinkClient(llama_gateway.url, FAST, anonymous=True) as client, httpx.AsyncClient() as http:
            turn = client.chat(STORY, max_tokens=400, temperature=0.8)
            busy: list[bool] = []
            cancelled = 0.0

            def on_token(t):
                nonlocal cancelled
                if t.index == 4:
                    turn.cancel()
                    cancelled = time.monotonic()

            reply = await collect(turn, on_token, timeout=120)
            while time.monotonic() - cancelled < 3:
                slots = (await http.get(llama_server.url + "/slots", headers=llama_server.headers)).json()
                busy.append(any(s["is_processing"] for s in slots))
                if not busy[-1]:
                    break
                await asyncio.sleep(0.02)
            return reply, time.monotonic() - cancelled, busy

    reply, freed_after, busy = asyncio.run(scenario())
    assert isinstance(reply.end, Done) and reply.end.reason == "cancelled"
    assert len(reply.tokens) < 100
    assert busy[-1] is False and freed_after < 1.0, f"slots still busy after {freed_after:.2f} s"


def test_five_cuts_during_a_real_reply_give_the_same_reply_as_no_cut(llama_gateway):
    request = {"max_tokens": 40, "temperature": 0.0, "seed": 42}

    async def scenario():
        async with LinkClient(llama_gateway.url, FAST, anonymous=True) as client:
            reference = await collect(client.chat(STORY, **request), timeout=120)
        proxy = await TcpProxy(llama_gateway.port).start()
        client = LinkClient(proxy.url, FAST, anonymous=True)
        await client.connect(5)
        cuts: list[int] = []
        due = 0

        def on_token(t):
            nonlocal due
            due += t.index in (3, 8, 13, 18, 23)
            if due and proxy.open_connections:
                cuts.append(proxy.cut())
                due -= 1

        cut = await collect(client.chat(STORY, **request), on_token, timeout=120)
        await client.close()
        await proxy.stop()
        return reference, cut, cuts

    reference, cut, cuts = asyncio.run(scenario())
    assert len(reference.tokens) >= 30, "the reference reply is too short to cut five times"
    assert len(cuts) == 5 and all(cuts)
    assert [t.text for t in cut.tokens] == [t.text for t in reference.tokens]
    assert [t.index for t in cut.tokens] == list(range(len(reference.tokens)))
    assert isinstance(cut.end, Done) and cut.end.reason == reference.end.reason
