"""What a web page open in the user's browser can do to a gateway on 127.0.0.1: nothing.

Its requests carry `Origin` (every POST and WebSocket upgrade) or `Sec-Fetch-Site`; they are
refused on /auth and /link with 403 before authentication, so they never count as failed
sign-ins. Junk from any local process (same address, no browser headers) counts against that
address only: the paired desktop app with valid credentials is never locked out.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from starlette.requests import HTTPConnection
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from remote_api.auth import DeviceAuth
from remote_api.client import Done
from remote_api.config import GatewaySection, ServerConfig
from remote_api.credentials import TokenSource
from remote_api.envelope import AuthError, Envelope, Type, decode, encode
from remote_api.pairing import FINGERPRINT_HEADER, issue_code, redeem
from remote_api.protocol import Role
from remote_api.ratelimit import FailureLimiter
from remote_api.seal import SealCodec
from remote_api.shared.config_loader import ConfigError, load_config
from remote_api.state import LocalState
from remote_api.tokens import TokenIssuer
from tests.remote_api.harness import collect

from .conftest import HI, expected

FP = "fp-laptop"
HELLO = encode(Envelope(Type.HELLO)).decode() + "\n"  # refused before it is read


def sealed_hello(creds) -> str:
    """A hello as the app sends it (with its key share), for requests that must get through."""
    return encode(Envelope(Type.HELLO, body=SealCodec(Role.CLIENT, creds.link_key).hello())).decode() + "\n"
PAGE = "http://localhost:3000"  # e.g. a dev server's page, or any site the user visits


def junk_pair(url: str, **headers: str) -> httpx.Response:
    """What a page's `fetch(url, {method: "POST", mode: "no-cors", body: "junk"})` sends."""
    return httpx.post(url + "/auth/pair", content=b"junk", headers={"Content-Type": "text/plain", **headers})


def error_of(body: bytes) -> dict:
    return decode(body.split(b"\n")[0], 1 << 16).body


async def ws_refusal(url: str, headers: dict[str, str], origin: str | None = None) -> tuple[int, dict]:
    with pytest.raises(InvalidStatus) as err:
        async with connect(url.replace("http", "ws") + "/link/ws", additional_headers=headers,
                           origin=origin) as ws:  # type: ignore[arg-type]
            await ws.send(HELLO)
    return err.value.response.status_code, error_of(err.value.response.body or b"")


async def full_reply(gw, creds) -> tuple[str, object]:
    async with gw.client(creds) as client:
        reply = await collect(client.chat(HI, max_tokens=8))
    return reply.text, reply.end


def test_a_junk_pairing_flood_from_loopback_never_locks_the_paired_device_out(secure_factory):
    gw = secure_factory(max_failures=3, failure_window=60)

    async def scenario():
        creds = await gw.pair()
        flood = [junk_pair(gw.url).status_code for _ in range(15)]  # a local process: no browser headers
        good = await TokenSource(creds, FP).headers(gw.url)  # /auth/refresh
        longpoll = httpx.post(gw.url + "/link/send", content=sealed_hello(creds), headers=good)
        async with connect(gw.url.replace("http", "ws") + "/link/ws", additional_headers=good) as ws:
            await ws.send(sealed_hello(creds))
            welcome = decode(await ws.recv(), 1 << 16)
        bad = httpx.post(gw.url + "/link/send", content=HELLO,
                         headers={"Authorization": "Bearer nonsense", FINGERPRINT_HEADER: FP})
        code = await issue_code(gw.state, "phone", time.time())
        pairing = httpx.post(gw.url + "/auth/pair", json={"code": code, "fingerprint": "fp-phone"})
        return flood, longpoll, welcome, bad, pairing, await full_reply(gw, creds)

    flood, longpoll, welcome, bad, pairing, (text, end) = asyncio.run(scenario())
    assert flood[:3] == [400, 400, 400] and set(flood[3:]) == {429}  # the stranger is slowed down...
    assert longpoll.status_code == 200 and welcome.type is Type.WELCOME  # ...the paired device is not
    assert text == expected(8) and isinstance(end, Done)
    assert bad.status_code == 429 and 0 < int(bad.headers["Retry-After"]) <= 60  # failures still are
    # A pairing code is short enough to be worth guessing: new pairings from a flooded address wait.
    assert pairing.status_code == 429 and error_of(pairing.content)["code"] == "rate_limited"


def test_failures_are_counted_per_device_as_well_as_per_address(tmp_path):
    """A device whose own requests keep failing is slowed down wherever they come from; a
    stranger's junk from another address does not touch that device's count."""
    state = LocalState(tmp_path)
    try:
        async def scenario():
            issuer = TokenIssuer(await state.signing_key())
            auth = DeviceAuth(state, issuer, FailureLimiter(3, 60))
            laptop, _ = await pair_direct(state, "laptop", FP)
            phone, _ = await pair_direct(state, "phone", "fp-phone")
            laptop_token, _ = issuer.issue(laptop.id, laptop.fingerprint_hash)
            phone_token, _ = issuer.issue(phone.id, phone.fingerprint_hash)

            async def attempt(address: str, token: str, fingerprint: str) -> int:
                conn = HTTPConnection({"type": "http", "client": (address, 1234), "headers": [
                    (b"authorization", f"Bearer {token}".encode()), (FINGERPRINT_HEADER.lower().encode(),
                                                                    fingerprint.encode())]})
                try:
                    await auth.authenticate(conn)
                except AuthError as exc:
                    return exc.status
                return 200

            copied = [await attempt(f"192.0.2.{i}", laptop_token, "fp-thief") for i in range(1, 4)]
            return (copied, await attempt("192.0.2.9", laptop_token, "fp-thief"),
                    await attempt("192.0.2.9", phone_token, "fp-thief"),
                    await attempt("192.0.2.9", laptop_token, FP))

        copied, again, other_device, valid = asyncio.run(scenario())
    finally:
        asyncio.run(state.close())
    assert copied == [401, 401, 401]  # the laptop's token on another machine, from three addresses
    assert again == 429  # a fourth address: the laptop's count is spent...
    assert other_device == 401  # ...not the phone's, nor that new address's
    assert valid == 200  # and the laptop itself is never refused


async def pair_direct(state: LocalState, name: str, fingerprint: str):
    code = await issue_code(state, name, time.time())
    return await redeem(state, code, fingerprint, time.time())


@pytest.mark.parametrize("headers", [{"Origin": PAGE}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"},
                                     {"Sec-Fetch-Site": "same-site"}], ids=["origin", "null", "cross", "same-site"])
def test_browser_requests_are_refused_on_auth_and_link_naming_the_setting(secure_factory, headers):
    gw = secure_factory(max_failures=3, failure_window=60)

    async def scenario():
        creds = await gw.pair()
        good = await TokenSource(creds, FP).headers(gw.url)
        refused = [
            junk_pair(gw.url, **headers),
            httpx.post(gw.url + "/auth/refresh", json={"device_id": creds.device_id, "proof": "x",
                                                       "fingerprint": FP}, headers=headers),
            httpx.post(gw.url + "/link/send", content=HELLO, headers=good | headers),  # valid token, from a page
            httpx.get(gw.url + "/link/poll", params={"sid": "x", "ack": 0}, headers=good | headers),
        ]
        ws_headers = good | {k: v for k, v in headers.items() if k != "Origin"}
        ws = await ws_refusal(gw.url, ws_headers, headers.get("Origin"))
        after = junk_pair(gw.url)  # none of the above counted as a failed sign-in
        return refused, ws, after

    refused, (ws_status, ws_error), after = asyncio.run(scenario())
    assert [r.status_code for r in refused] == [403, 403, 403, 403] and ws_status == 403
    for error in [error_of(r.content) for r in refused] + [ws_error]:
        assert error["code"] == "browser_refused" and "gateway.allowed_origins" in error["message"]
    assert after.status_code == 400
    assert gw.sessions() == 0


def test_an_origin_listed_in_allowed_origins_may_connect(secure_factory):
    gw = secure_factory(gateway=GatewaySection(allowed_origins=["https://My-Web-Client.example/"]))

    async def scenario():
        creds = await gw.pair()
        good = await TokenSource(creds, FP).headers(gw.url)
        origin = {"Origin": "https://my-web-client.example"}
        longpoll = httpx.post(gw.url + "/link/send", content=sealed_hello(creds), headers=good | origin)
        async with connect(gw.url.replace("http", "ws") + "/link/ws", additional_headers=good,
                           origin=origin["Origin"]) as ws:  # type: ignore[arg-type]
            await ws.send(sealed_hello(creds))
            welcome = decode(await ws.recv(), 1 << 16)
        other = await ws_refusal(gw.url, good, "https://evil.example")
        return longpoll, welcome, other

    longpoll, welcome, (other_status, _) = asyncio.run(scenario())
    assert longpoll.status_code == 200 and welcome.type is Type.WELCOME
    assert other_status == 403


def test_allowed_origins_is_a_setting_with_a_clear_error(tmp_path):
    cfg = load_config(ServerConfig, env={"STELLA_GATEWAY__ALLOWED_ORIGINS": "https://a.example, http://b:8080"})
    assert cfg.gateway.allowed_origins == ["https://a.example", "http://b:8080"]
    with pytest.raises(ConfigError) as err:
        load_config(ServerConfig, env={"STELLA_GATEWAY__ALLOWED_ORIGINS": "a.example/app"})
    assert "allowed_origins" in str(err.value) and "https://" in str(err.value)
