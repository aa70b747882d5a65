"""Fuzzing (hypothesis) what comes off the network: envelopes, sealed bodies, tokens and auth
headers. Nothing but the documented errors ever escapes, and a live gateway bombarded with such
requests answers each one (never a 5xx) and keeps serving its real clients."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.requests import HTTPConnection
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from remote_api.auth import DeviceAuth
from remote_api.client import Done
from remote_api.credentials import Credentials, TokenSource
from remote_api.envelope import AuthError, ProtocolError, Type, decode, validate_body
from remote_api.link_config import LinkConfig
from remote_api.protocol import LinkProtocol, Role
from remote_api.ratelimit import FailureLimiter
from remote_api.seal import SealCodec
from remote_api.state import LocalState
from remote_api.tokens import TokenIssuer
from tests.remote_api.clock import FakeClock
from tests.remote_api.harness import collect

from .conftest import HI, SecureGateway, expected, start_secure

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LIVE = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = ["v", "sid", "seq", "ack", "t", "ts", "b"]
any_object = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=4), json_values, max_size=8)
envelope_like = any_object | st.fixed_dictionaries(
    {"v": st.just(1) | json_values, "sid": st.text(max_size=70) | json_values, "seq": st.integers(-2, 5000),
     "ack": st.integers(-2, 5000), "t": st.sampled_from([str(t) for t in Type]) | st.text(max_size=8),
     "ts": st.integers() | json_values,
     "b": st.dictionaries(st.sampled_from(["rid", "messages", "text", "i", "e", "n", "c", "kx", "code"]),
                          json_values, max_size=5) | json_values})
frames = st.binary(max_size=300) | envelope_like.map(lambda e: json.dumps(e).encode())


@FUZZ
@given(frames)
def test_envelope_parsing_only_ever_raises_protocol_error(frame):
    try:
        env = decode(frame, 4096)
        validate_body(env.type, env.body)
    except ProtocolError as exc:
        assert exc.code and exc.message and exc.action


def _open_pair() -> tuple[LinkProtocol, LinkProtocol]:
    clock = FakeClock()
    client = LinkProtocol(Role.CLIENT, LinkConfig(), clock=clock, codec=SealCodec(Role.CLIENT, b"k" * 32))
    server = LinkProtocol(Role.SERVER, LinkConfig(), clock=clock, sid="S", codec=SealCodec(Role.SERVER, b"k" * 32))
    client.connection_made()
    server.connection_made()
    server.receive(client.data_to_send()[0])
    client.receive(server.data_to_send()[0])
    return client, server


@FUZZ
@given(st.lists(frames, max_size=6))
def test_a_sealed_session_survives_any_frames_and_carries_on(batch):
    client, server = _open_pair()
    for frame in batch:
        if server.state == "idle":  # a refused frame closed the connection: the client comes back
            server.connection_made()
            client.connection_lost()
            client.connection_made()
            server.receive(client.data_to_send()[0])
            client.receive(server.data_to_send()[0])
        try:
            server.receive(frame)
        except ProtocolError:
            server.connection_lost()
    if server.state != "open":
        client.connection_lost()
        client.connection_made()
        server.connection_made()
        server.receive(client.data_to_send()[0])
        client.receive(server.data_to_send()[0])
    client.send(Type.OUTFIT, {"outfit": "red"})
    for frame in client.data_to_send():
        server.receive(frame)
    assert [e.body for e in server.events() if hasattr(e, "body")][-1] == {"outfit": "red"}


@pytest.fixture(scope="module")
def auth(tmp_path_factory) -> Iterator[DeviceAuth]:
    state = LocalState(tmp_path_factory.mktemp("fuzz-auth"))
    yield DeviceAuth(state, TokenIssuer(asyncio.run(state.signing_key())), FailureLimiter(10**9))
    asyncio.run(state.close())


token_like = st.text(max_size=200) | st.lists(
    st.binary(max_size=60).map(lambda b: __import__("base64").urlsafe_b64encode(b).decode().rstrip("=")),
    min_size=1, max_size=4).map(".".join)


@FUZZ
@given(authorization=st.binary(max_size=300) | token_like.map(lambda t: f"Bearer {t}".encode("utf-8", "replace")),
       fingerprint=st.binary(max_size=200))
def test_any_forged_auth_headers_are_refused_with_an_auth_error_and_nothing_else(auth, authorization, fingerprint):
    conn = HTTPConnection({"type": "http", "headers": [(b"authorization", authorization),
                                                       (b"x-stella-device", fingerprint)],
                           "client": ("192.0.2.1", 1234)})
    with pytest.raises(AuthError) as err:  # none of these is a token the gateway issued
        asyncio.run(auth.authenticate(conn))
    assert err.value.status == 401 and err.value.code and err.value.action


# --- a live gateway under fire -----------------------------------------------------------------


@dataclass
class Live:
    gw: SecureGateway
    creds: Credentials
    headers: dict[str, str]  # a good token
    http: httpx.Client


@pytest.fixture(scope="module")
def live(tmp_path_factory, fake_llama) -> Iterator[Live]:
    gw = start_secure(tmp_path_factory.mktemp("fuzz-live"), fake_llama.url, max_failures=10**9)
    creds = asyncio.run(gw.pair("fuzzed", "fp-laptop"))
    with httpx.Client(base_url=gw.url, timeout=10) as http:
        yield Live(gw, creds, asyncio.run(TokenSource(creds, "fp-laptop").headers(gw.url)), http)
    gw.stop()


def printable(text: str) -> str:
    """What an HTTP client can put in a header at all (h11 refuses the rest before sending)."""
    return "".join(ch for ch in text if 32 < ord(ch) < 127)


requests = st.fixed_dictionaries({
    "method": st.sampled_from(["GET", "POST", "PUT"]),
    "path": st.sampled_from(["/link/send", "/link/poll", "/auth/pair", "/auth/refresh", "/link/ws", "/health"]),
    "params": st.dictionaries(st.sampled_from(["sid", "ack", "hold"]), st.text(max_size=12), max_size=3),
    "auth": st.none() | token_like,
    "fingerprint": st.none() | st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    "body": st.binary(max_size=400) | envelope_like.map(lambda e: json.dumps(e).encode() + b"\n")
    | st.dictionaries(st.sampled_from(["code", "fingerprint", "device_id", "proof"]), json_values,
                      max_size=4).map(lambda d: json.dumps(d).encode()),
})


@LIVE
@given(req=requests, good_token=st.booleans())
def test_a_live_gateway_answers_any_request_without_failing(live, req, good_token):
    headers = dict(live.headers) if good_token else {}
    if not good_token and req["auth"] is not None:
        headers["Authorization"] = f"Bearer {printable(req['auth'])}".strip()
    if not good_token and req["fingerprint"] is not None:
        headers["X-Stella-Device"] = printable(req["fingerprint"])
    resp = live.http.request(req["method"], req["path"], params=req["params"], headers=headers,
                             content=req["body"])
    assert resp.status_code < 500, resp.text


@LIVE
@given(batch=st.lists(frames, min_size=1, max_size=4))
def test_a_signed_in_client_sending_garbage_frames_only_loses_its_connection(live, batch):
    with connect(live.gw.url.replace("http", "ws") + "/link/ws", additional_headers=live.headers) as ws:
        try:
            for frame in batch:
                ws.send(frame.decode("utf-8", "replace"))
            reply = ws.recv(timeout=2)
            assert decode(reply, 1 << 20).type in (Type.ERROR, Type.WELCOME)
        except (ConnectionClosed, TimeoutError):
            pass


def test_after_the_fuzzing_the_gateway_still_serves_real_clients(live, fake_upstream):
    async def scenario():
        async with live.gw.client(live.creds) as client:
            return await collect(client.chat(HI, max_tokens=8))

    reply = asyncio.run(scenario())
    assert reply.text == expected(8) and isinstance(reply.end, Done)
    assert live.http.get("/health").json()["status"] == "ok"
