"""What the gateway keeps for a session that stops listening: bounded, and not forever."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time

from websockets.asyncio.client import connect

from remote_api.client import Error, LinkClient
from remote_api.envelope import Envelope, Type, encode

from .harness import FAST, GatewayThread, collect

CHAT = {"rid": "r1", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 40}


def test_a_client_that_stops_acknowledging_cannot_grow_the_replay_buffer_past_its_limit(fake_upstream):
    config = dataclasses.replace(FAST, replay_limit=8, heartbeat_interval=5.0, heartbeat_timeout=5.0)
    fake_upstream.delay = 0.01
    with GatewayThread([fake_upstream.url], config=config) as gw:
        async def scenario():
            async with connect(gw.url.replace("http", "ws") + "/link/ws") as ws:
                await ws.send(encode(Envelope(Type.HELLO)).decode())
                sid = json.loads(await ws.recv())["sid"]
                await ws.send(encode(Envelope(Type.CHAT, seq=1, sid=sid, body=CHAT)).decode())
                frames = []  # read, but never acknowledge
                while not frames or frames[-1]["t"] != "error":
                    frames.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
                return frames, gw.call(lambda g: g.registry.get(sid).link.backlog)

        frames, backlog = asyncio.run(scenario())
    tokens = [f for f in frames if f["t"] == "token"]
    assert len(tokens) == 8 and frames[-1]["b"]["code"] == "replay_overflow"
    assert backlog == 9  # the eight tokens and the error, nothing more
    assert fake_upstream.disconnects == 1  # the generation was stopped, not left running


def test_an_abandoned_session_expires_and_a_late_resume_is_told_its_reply_is_lost(fake_upstream):
    config = dataclasses.replace(FAST, session_ttl=0.4)
    fake_upstream.delay, fake_upstream.tokens = 0.02, 200
    with GatewayThread([fake_upstream.url], config=config) as gw:
        async def scenario():
            client = LinkClient(gw.url, config, anonymous=True)
            await client.connect(5)
            old_sid = client.link.sid
            turn = client.chat(CHAT["messages"], max_tokens=200)
            await asyncio.sleep(0.1)
            client._manager.cancel()  # the app vanishes: no bye, no reconnect  # noqa: SLF001
            client._manager = None  # noqa: SLF001
            started = time.monotonic()
            assert gw.wait_for(lambda g: len(g.registry) == 0, timeout=5)
            expired_after = time.monotonic() - started
            await client.connect(5)  # the app comes back and asks to resume
            reply = await collect(turn)
            new_sid = client.link.sid
            await client.close()
            return expired_after, reply, old_sid, new_sid

        expired_after, reply, old_sid, new_sid = asyncio.run(scenario())
    assert expired_after < 0.4 + config.heartbeat_interval + config.heartbeat_timeout + 1.0
    assert fake_upstream.active == 0  # its generation was cancelled with it
    assert new_sid != old_sid
    assert isinstance(reply.end, Error) and reply.end.code == "session_lost" and reply.end.action
