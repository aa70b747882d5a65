"""The gateway end to end over both transports, with the fake llama-server upstream."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
import websockets

from remote_api.client import Done, Error, LinkClient
from remote_api.envelope import Type
from tests.fakes.llama_server import FakeLlamaServer, token_text

from .harness import FAST, GatewayThread, collect

HI = [{"role": "user", "content": "Say something."}]


def expected(n: int) -> str:
    return "".join(token_text(i) for i in range(n))


@pytest.mark.parametrize("transport", ["websocket", "longpoll"])
def test_a_reply_streams_token_by_token_over_each_transport(gateway, fake_upstream, transport):
    fake_upstream.delay = 0.02

    async def scenario():
        async with LinkClient(gateway.url, FAST, transport=transport, anonymous=True) as client:
            arrivals: list[float] = []
            reply = await collect(client.chat(HI, max_tokens=30), lambda t: arrivals.append(time.monotonic()))
            assert client.status.transport == transport
            return reply, arrivals

    reply, arrivals = asyncio.run(scenario())
    assert reply.text == expected(30)
    assert [t.index for t in reply.tokens] == list(range(30))
    assert isinstance(reply.end, Done) and reply.end.reason == "length" and reply.end.tokens == 30
    # relayed as generated, not buffered: the tokens are spread over the ~0.6 s of generation
    assert arrivals[-1] - arrivals[0] > 0.3


def test_the_completion_api_streams_the_same_way(fake_upstream):
    with GatewayThread([fake_upstream.url], "completion") as gw:
        async def scenario():
            async with LinkClient(gw.url, FAST, anonymous=True) as client:
                return await collect(client.chat(HI, max_tokens=12))

        reply = asyncio.run(scenario())
    assert reply.text == expected(12) and isinstance(reply.end, Done) and reply.end.tokens == 12


def test_a_resent_request_id_never_starts_a_second_generation(gateway, fake_upstream):
    fake_upstream.delay = 0.02

    async def scenario():
        async with LinkClient(gateway.url, FAST, anonymous=True) as client:
            turn = client.chat(HI, max_tokens=20, rid="same-rid")
            body = {"rid": "same-rid", "messages": HI, "max_tokens": 20}
            client.link.send(Type.CHAT, body)  # the app resends while the reply streams
            reply = await collect(turn)
            late = client.chat(HI, max_tokens=20, rid="same-rid")  # and again once it is done
            return reply, await collect(late)

    reply, late = asyncio.run(scenario())
    assert fake_upstream.generations == 1
    assert reply.text == expected(20)  # streamed once, not twice
    assert isinstance(late.end, Error) and late.end.code == "duplicate_request" and late.tokens == []


def test_cancel_closes_the_upstream_stream_at_once(gateway, fake_upstream):
    fake_upstream.delay, fake_upstream.tokens = 0.03, 200

    async def scenario():
        async with LinkClient(gateway.url, FAST, anonymous=True) as client:
            turn = client.chat(HI, max_tokens=200)
            reply = await collect(turn, lambda t: turn.cancel() if t.index == 3 else None)
            cancelled_at = time.monotonic()
            while fake_upstream.active and time.monotonic() - cancelled_at < 2:
                await asyncio.sleep(0.01)
            return reply, time.monotonic() - cancelled_at

    reply, freed_after = asyncio.run(scenario())
    assert isinstance(reply.end, Done) and reply.end.reason == "cancelled"
    assert 4 <= len(reply.tokens) < 50 and reply.end.tokens == len(reply.tokens)
    assert fake_upstream.active == 0 and fake_upstream.disconnects == 1
    assert freed_after < 1.0


@pytest.mark.parametrize(("fault", "code"), [("context", "context_exceeded"), ("loading", "loading")])
def test_upstream_refusals_become_clear_error_envelopes(gateway, fake_upstream, fault, code):
    fake_upstream.fault = fault

    async def scenario():
        async with LinkClient(gateway.url, FAST, anonymous=True) as client:
            return await collect(client.chat(HI))

    reply = asyncio.run(scenario())
    assert isinstance(reply.end, Error) and reply.end.code == code
    assert len(reply.end.message) > 20 and len(reply.end.action) > 10


def test_the_gateway_keeps_no_conversation_content_after_a_reply(gateway, fake_upstream):
    secret = "my bank pin is 4321"

    async def scenario():
        async with LinkClient(gateway.url, FAST, anonymous=True) as client:
            reply = await collect(client.chat([{"role": "user", "content": secret}], max_tokens=10))
            await asyncio.sleep(FAST.ack_delay + 0.2)  # let the acks empty the replay buffer
            sid = client.link.sid

            def state(g):
                s = g.registry.get(sid)
                return s.link.backlog, s.turns, repr(vars(s)) + repr(vars(s.link))

            return reply, gateway.call(state)

    reply, (backlog, turns, dump) = asyncio.run(scenario())
    assert isinstance(reply.end, Done)
    assert backlog == 0 and turns == {}
    assert secret not in dump


def test_health_reports_the_upstreams_to_authenticated_callers_only(gateway, fake_upstream):
    # This gateway's `authenticate` hook lets anyone in, but only a request offering credentials asks for them.
    assert httpx.get(gateway.url + "/health").json() == {"status": "ok"}
    report = httpx.get(gateway.url + "/health", headers={"Authorization": "Bearer anyone"}).json()
    assert report["status"] == "ok"
    assert report["upstreams"][0]["url"] == fake_upstream.url and report["upstreams"][0]["ok"]


def test_the_authenticate_hook_refuses_both_transports(fake_upstream):
    async def nobody(conn):
        return None

    with GatewayThread([fake_upstream.url], authenticate=nobody) as gw:
        async def scenario():
            with pytest.raises(websockets.InvalidStatus) as err:
                await websockets.connect(gw.url.replace("http", "ws") + "/link/ws")
            return err.value.response.status_code

        assert asyncio.run(scenario()) == 403
        resp = httpx.post(gw.url + "/link/send", content=b"{}\n")
        assert resp.status_code == 401 and b"unauthorized" in resp.content


def test_two_sessions_stream_side_by_side(gateway, fake_upstream: FakeLlamaServer):
    fake_upstream.delay = 0.01

    async def scenario():
        async with (LinkClient(gateway.url, FAST, anonymous=True) as a,
                    LinkClient(gateway.url, FAST, transport="longpoll", anonymous=True) as b):
            assert a.link.sid != b.link.sid
            return await asyncio.gather(collect(a.chat(HI, max_tokens=25)),
                                        collect(b.chat(HI, max_tokens=15)))

    ra, rb = asyncio.run(scenario())
    assert ra.text == expected(25) and rb.text == expected(15)
