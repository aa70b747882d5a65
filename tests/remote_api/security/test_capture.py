"""What a proxy in the middle sees and can do: every byte between the client and the gateway
goes through a TCP proxy that records it (as a TLS-terminating proxy would see it, in clear
HTTP); prompts and replies are not in it. Envelopes altered or replayed on the way are refused
and start nothing."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from remote_api.client import Done, LinkClient
from remote_api.credentials import Credentials, TokenSource
from remote_api.envelope import Envelope, Type, decode, encode, header_ad
from remote_api.protocol import Role
from remote_api.seal import SealCodec, b64d, b64e
from tests.remote_api.harness import FAST, collect
from tests.remote_api.proxy import TcpProxy

from .conftest import expected

PROMPT = "Tell me about the blue heron that sings at midnight."


@pytest.mark.parametrize("transport", ["websocket", "longpoll"])
def test_a_capture_of_the_traffic_holds_no_prompt_and_no_reply(secure, fake_upstream, transport):
    fake_upstream.delay = 0.005

    async def scenario():
        creds = await secure.pair()
        proxy = await TcpProxy(secure.gateway.port, capture=True).start()
        client = LinkClient(proxy.url, FAST, credentials=TokenSource(creds, "fp-laptop"), transport=transport)
        await client.connect(5)  # everything through the proxy, token refreshes included
        reply = await collect(client.chat([{"role": "system", "content": "You are Stella."},
                                           {"role": "user", "content": PROMPT}], max_tokens=30))
        proxy.cut()  # and once more after a reconnect (new keys)
        again = await collect(client.chat([{"role": "user", "content": PROMPT}], max_tokens=30))
        await client.close()
        await proxy.stop()
        return reply, again, bytes(proxy.captured)

    reply, again, captured = asyncio.run(scenario())
    assert reply.text == again.text == expected(30) and isinstance(reply.end, Done)
    assert b"/link/" in captured and len(captured) > 4000  # the capture is real: it holds the traffic
    assert fake_upstream.last_request["messages"][-1]["content"] == PROMPT  # the gateway did get it
    for plain in (PROMPT, "blue heron", "You are Stella", expected(30), " w1 w2"):
        assert plain.encode() not in captured
    for field in (b'"content"', b'"messages"', b'"text"', b'"rid"'):  # not even the shape of a body
        assert field not in captured


class RawClient:
    """A hand-driven client speaking the sealed protocol, to send what no honest client would."""

    def __init__(self, url: str, creds: Credentials) -> None:
        self.url, self.creds = url, creds
        self.codec = SealCodec(Role.CLIENT, creds.link_key)
        self.sid = ""
        self.ws = None

    async def open(self) -> dict:
        headers = await TokenSource(self.creds, "fp-laptop").headers(self.url)
        self.ws = await connect(self.url.replace("http", "ws") + "/link/ws", additional_headers=headers)
        await self.ws.send(encode(Envelope(Type.HELLO, sid=self.sid, body=self.codec.hello())).decode())
        welcome = decode(await self.ws.recv(), 1 << 20)
        self.sid = welcome.sid
        self.codec.welcomed(welcome.sid, welcome.body)
        return welcome.body

    def chat(self, seq: int, rid: str) -> str:
        body = {"rid": rid, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 5}
        sealed = self.codec.seal(header_ad(Type.CHAT, seq, self.sid, 7), body)
        return encode(Envelope(Type.CHAT, seq, 0, self.sid, 7, sealed)).decode()

    async def read(self, timeout: float = 2.0) -> tuple[list[Envelope], int | None]:
        """Frames until the gateway goes quiet or closes; the close code if it closed."""
        frames = []
        try:
            while True:
                frames.append(decode(await asyncio.wait_for(self.ws.recv(), timeout), 1 << 20))
        except TimeoutError:
            return frames, None
        except ConnectionClosed:
            return frames, self.ws.close_code


def tampered(frame: str) -> str:
    env = json.loads(frame)
    raw = bytearray(b64d(env["b"]["c"]))
    raw[-1] ^= 0x40  # one bit of the authentication tag
    env["b"]["c"] = b64e(bytes(raw))
    return json.dumps(env)


def test_a_tampered_ciphertext_is_refused_and_starts_nothing(secure, fake_upstream):
    async def scenario():
        raw = RawClient(secure.url, await secure.pair())
        await raw.open()
        await raw.ws.send(tampered(raw.chat(1, "r-tampered")))
        return await raw.read()

    frames, close_code = asyncio.run(scenario())
    errors = [f.body for f in frames if f.type is Type.ERROR]
    assert errors and errors[0]["code"] == "bad_seal" and "altered" in errors[0]["action"]
    assert close_code == 4400
    assert fake_upstream.generations == 0


def test_a_replayed_envelope_is_refused_on_the_same_and_on_a_later_connection(secure, fake_upstream):
    fake_upstream.tokens = 5

    async def scenario():
        raw = RawClient(secure.url, await secure.pair())
        await raw.open()
        frame = raw.chat(1, "r-once")
        await raw.ws.send(frame)
        await raw.ws.send(frame)  # replayed at once
        first, _ = await raw.read(0.4)
        await raw.ws.close()
        welcome = await raw.open()  # a new connection resumes the session with new keys
        await raw.ws.send(frame)  # replayed later: a duplicate of seq 1
        later, _ = await raw.read(0.4)
        env = json.loads(frame)
        env["seq"] = 2  # replayed as new data: its seal names seq 1
        await raw.ws.send(json.dumps(env))
        last, close_code = await raw.read(0.4)
        await raw.ws.close()
        return first, welcome, later, last, close_code

    first, welcome, later, last, close_code = asyncio.run(scenario())
    assert [f.body["code"] for f in first if f.type is Type.ERROR] == []
    assert welcome["resumed"] is True
    assert fake_upstream.generations == 1  # one generation, whatever was replayed
    assert not [f for f in later if f.type is Type.ERROR]  # the duplicate was dropped, quietly
    assert [f.body["code"] for f in last if f.type is Type.ERROR] == ["bad_seal"] and close_code == 4400
