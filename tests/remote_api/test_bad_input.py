"""Bad input at the gateway: an error envelope or close code for the sender, and every other
session carries on undisturbed."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from remote_api.client import Done, LinkClient
from remote_api.envelope import Envelope, Type, encode
from tests.fakes.llama_server import token_text

from .harness import FAST, collect

HELLO = encode(Envelope(Type.HELLO)).decode()
CHAT = {"rid": "r1", "messages": [{"role": "user", "content": "hi"}]}
LONG = "x" * FAST.max_frame_bytes


def env(**fields) -> str:
    obj = {"v": 1, "sid": "", "seq": 1, "ack": 0, "t": "chat", "ts": 0, "b": CHAT} | fields
    return json.dumps(obj)


async def misbehave(url: str, frames: list[str], *, hello: bool) -> tuple[list[dict], int | None]:
    """Open a raw WebSocket, say hello (or not), send `frames`; return what came back and the close code."""
    got: list[dict] = []
    async with connect(url.replace("http", "ws") + "/link/ws", max_size=None) as ws:
        sid = ""
        if hello:
            await ws.send(HELLO)
            welcome = json.loads(await ws.recv())
            sid = welcome["sid"]
        for frame in frames:
            await ws.send(frame.replace('"sid": ""', f'"sid": "{sid}"'))
        try:
            while True:
                got.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
        except ConnectionClosed:
            pass
        return got, ws.close_code


CASES = {
    "bad_json": ("{not json", 4400),
    "unknown_type": (env(t="teleport"), 4400),
    "bad_version": (env(v=99), 4400),
    "bad_seq": (env(seq=10**6), 4400),
    "bad_body": (env(b={"rid": "r1"}), 4400),
    "frame_too_large": (env(b={**CHAT, "messages": [{"role": "user", "content": LONG}]}), 1009),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_a_bad_envelope_gets_an_error_and_a_close_code_while_others_stream(gateway, fake_upstream, code):
    frame, close_code = CASES[code]
    fake_upstream.delay = 0.01

    async def scenario():
        async with LinkClient(gateway.url, FAST, anonymous=True) as good:
            streaming = asyncio.create_task(collect(good.chat(CHAT["messages"], max_tokens=30)))
            await asyncio.sleep(0.05)
            got, closed_with = await misbehave(gateway.url, [frame], hello=True)
            return got, closed_with, await streaming

    got, closed_with, reply = asyncio.run(scenario())
    errors = [g["b"] for g in got if g["t"] == "error"]
    assert errors and errors[0]["code"] == code and errors[0]["message"] and errors[0]["action"]
    assert closed_with == close_code
    assert isinstance(reply.end, Done) and reply.text == "".join(token_text(i) for i in range(30))


def test_a_connection_that_does_not_start_with_hello_is_refused(gateway):
    got, closed_with = asyncio.run(misbehave(gateway.url, [env()], hello=False))
    assert got[0]["t"] == "error" and got[0]["b"]["code"] == "hello_required"
    assert closed_with == 4400


def test_long_poll_refuses_bad_requests_with_error_envelopes(gateway):
    with httpx.Client(base_url=gateway.url) as http:
        bad_json = http.post("/link/send", content=b"{nope\n")
        unknown = http.get("/link/poll", params={"sid": "no-such-session", "ack": "0"})
        empty = http.post("/link/send", content=b"\n")
        huge = http.post("/link/send", content=b"x" * (FAST.max_frame_bytes * 64 + 1))
        hello = http.post("/link/send", content=HELLO.encode() + b"\n")
        sid = json.loads(hello.content.splitlines()[0])["sid"]
        bad_ack = http.get("/link/poll", params={"sid": sid, "ack": "-3"})
        future_ack = http.get("/link/poll", params={"sid": sid, "ack": "99"})
    for resp, status, code in [(bad_json, 400, "bad_json"), (unknown, 409, "not_attached"),
                               (empty, 400, "bad_request"), (huge, 413, "frame_too_large"),
                               (bad_ack, 400, "bad_request"), (future_ack, 400, "bad_seq")]:
        assert resp.status_code == status, (code, resp.content)
        body = json.loads(resp.content.splitlines()[0])
        assert body["t"] == "error" and body["b"]["code"] == code and body["b"]["action"]
    assert hello.status_code == 200
