"""The network misbehaves between client and gateway (a TCP proxy the test controls), or the
upstream does: every reply still arrives complete, once, in order, or ends in a clear error."""

from __future__ import annotations

import asyncio
import time

import pytest

from remote_api.client import Done, Error, LinkClient, LinkStatus
from tests.fakes.llama_server import token_text

from .harness import FAST, collect
from .proxy import TcpProxy

HI = [{"role": "user", "content": "Tell me a story."}]


def expected(n: int) -> str:
    return "".join(token_text(i) for i in range(n))


@pytest.mark.parametrize("transport", ["websocket", "longpoll"])
def test_five_cuts_during_one_reply_lose_and_repeat_nothing(gateway, fake_upstream, transport):
    fake_upstream.delay, fake_upstream.tokens = 0.03, 60

    async def scenario():
        proxy = await TcpProxy(gateway.port).start()
        statuses: list[LinkStatus] = []
        client = LinkClient(proxy.url, FAST, transport=transport, on_status=statuses.append, anonymous=True)
        await client.connect(5)
        sid = client.link.sid
        cuts: list[int] = []
        due = 0

        def on_token(t):  # cut at these tokens, or at the next one if no connection is up just then
            nonlocal due
            due += t.index in (5, 12, 20, 28, 36)
            if due and proxy.open_connections:
                cuts.append(proxy.cut())
                due -= 1

        reply = await collect(client.chat(HI, max_tokens=60), on_token)
        same_session = client.link.sid == sid
        await client.close()
        await proxy.stop()
        return reply, cuts, statuses, same_session

    reply, cuts, statuses, same_session = asyncio.run(scenario())
    assert len(cuts) == 5 and all(n >= 1 for n in cuts)  # five cuts during the reply, each a real one
    assert sum(1 for s in statuses if s.transport == "offline" and s.retry_in is not None) >= 5
    assert reply.text == expected(60) and [t.index for t in reply.tokens] == list(range(60))
    assert isinstance(reply.end, Done) and reply.end.tokens == 60
    assert same_session  # every reconnect resumed the session
    assert fake_upstream.generations == 1  # ... and no resend started a second generation


def test_a_black_holed_connection_is_detected_within_interval_plus_timeout(gateway, fake_upstream):
    fake_upstream.delay, fake_upstream.tokens = 0.03, 80
    bound = FAST.heartbeat_interval + FAST.heartbeat_timeout

    async def scenario():
        proxy = await TcpProxy(gateway.port).start()
        offline_at: list[float] = []
        client = LinkClient(proxy.url, FAST, on_status=lambda s: offline_at.append(time.monotonic())
                            if s.transport == "offline" else None, anonymous=True)
        await client.connect(5)
        holed: list[float] = []

        def on_token(t):
            if t.index == 5:
                proxy.blackhole()
                holed.append(time.monotonic())

        reply = await collect(client.chat(HI, max_tokens=80), on_token)
        await client.close()
        await proxy.stop()
        return reply, offline_at[0] - holed[0]

    reply, detected_after = asyncio.run(scenario())
    assert detected_after <= bound + 0.3, f"dead link noticed after {detected_after:.2f} s (bound {bound} s)"
    assert reply.text == expected(80) and isinstance(reply.end, Done)


@pytest.mark.parametrize("blocking", ["refuse_upgrade", "drop_upgrade"])
def test_a_blocked_upgrade_falls_back_to_long_poll_and_moves_back_without_loss(gateway, fake_upstream, blocking):
    fake_upstream.delay, fake_upstream.tokens = 0.03, 90

    async def scenario():
        proxy = await TcpProxy(gateway.port).start()
        setattr(proxy, blocking, True)
        statuses: list[LinkStatus] = []
        client = LinkClient(proxy.url, FAST, on_status=statuses.append, anonymous=True)
        await client.connect(5)
        assert client.status.transport == "longpoll"
        # a 403 is not worth retrying: long-poll at once; a handshake that fails, after two tries
        tries = 1 if blocking == "refuse_upgrade" else FAST.ws_failures_before_fallback
        assert proxy.refused == tries and sum(s.transport == "offline" for s in statuses) == tries - 1
        carried_by: list[str] = []

        def on_token(t):
            carried_by.append(client.status.transport)
            if t.index == 15:
                setattr(proxy, blocking, False)  # the proxy lets WebSockets through again

        reply = await collect(client.chat(HI, max_tokens=90), on_token)
        refused = proxy.refused
        await client.close()
        await proxy.stop()
        return reply, carried_by, refused

    reply, carried_by, refused = asyncio.run(scenario())
    assert refused >= 1
    assert carried_by[0] == "longpoll" and carried_by[-1] == "websocket"
    assert carried_by.index("websocket") > 15  # the switch happened mid-reply
    assert reply.text == expected(90) and [t.index for t in reply.tokens] == list(range(90))
    assert isinstance(reply.end, Done)


@pytest.mark.parametrize(("fault", "code"), [("stall", "stalled"), ("break", "broken_stream")])
def test_an_upstream_that_stalls_or_breaks_mid_reply_gives_a_clear_error_and_the_next_chat_works(
        gateway, fake_upstream, fault, code):
    fake_upstream.fault, fake_upstream.fault_after = fault, 5

    async def scenario():
        async with LinkClient(gateway.url, FAST, anonymous=True) as client:
            sid = client.link.sid
            started = time.monotonic()
            broken = await collect(client.chat(HI, max_tokens=20))
            took = time.monotonic() - started
            after = await collect(client.chat(HI, max_tokens=20))
            return broken, took, after, client.link.sid == sid

    broken, took, after, same_session = asyncio.run(scenario())
    assert broken.text == expected(5)  # what was generated before the fault did arrive
    assert isinstance(broken.end, Error) and broken.end.code == code
    assert "llama-server" in broken.end.message and broken.end.action
    assert took < 3.0  # the gateway's stall timeout here is 1 s
    assert same_session and isinstance(after.end, Done) and after.text == expected(20)
