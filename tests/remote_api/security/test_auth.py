"""Who may use the gateway: every way a token or a pairing can be wrong is refused, over both
transports, with a clear error and without creating a session; failures are rate-limited;
revocation ends open sessions; tokens are renewed without the user noticing."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from remote_api.client import Done, Error, LinkRefused
from remote_api.credentials import Credentials, CredentialsRejected, TokenSource, pair
from remote_api.envelope import Envelope, Type, decode, encode
from remote_api.pairing import FINGERPRINT_HEADER, fingerprint_hash, issue_code
from remote_api.tokens import ISSUER
from tests.remote_api.harness import collect

from .conftest import HI, SecureGateway, expected, start_secure

FP = "fp-laptop"
HELLO = encode(Envelope(Type.HELLO)).decode()


@dataclass
class Ctx:
    gw: SecureGateway
    key: Ed25519PrivateKey
    laptop: Credentials
    old_phone: Credentials  # revoked
    now: int


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory, fake_llama) -> Iterator[Ctx]:
    gw = start_secure(tmp_path_factory.mktemp("auth"), fake_llama.url, max_failures=10_000)

    async def setup() -> Ctx:
        laptop = await gw.pair("laptop", FP)
        old_phone = await gw.pair("old-phone", "fp-phone")
        await gw.state.revoke_device("old-phone", time.time())
        await gw.state.revoke_token("revoked-jti", time.time() + 7200)
        return Ctx(gw, await gw.state.signing_key(), laptop, old_phone, int(time.time()))

    yield asyncio.run(setup())
    gw.stop()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(c: Ctx, **changes: object) -> dict:
    base = {"iss": ISSUER, "sub": c.laptop.device_id, "fph": fingerprint_hash(FP), "jti": secrets.token_hex(8),
            "iat": c.now, "nbf": c.now, "exp": c.now + 7200}
    return {k: v for k, v in (base | changes).items() if v is not None}


def signed(c: Ctx, key: Ed25519PrivateKey | None = None, **changes: object) -> str:
    return jwt.encode(claims(c, **changes), key or c.key, algorithm="EdDSA")


def hand_made(c: Ctx, alg: str, secret: bytes | None) -> str:
    head = b64(json.dumps({"alg": alg, "typ": "JWT"}).encode()) + "." + b64(json.dumps(claims(c)).encode())
    sig = b64(hmac.new(secret, head.encode(), hashlib.sha256).digest()) if secret else ""
    return head + "." + sig


def bearer(token: str, fingerprint: str = FP) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", FINGERPRINT_HEADER: fingerprint}


# name -> (headers for a link request, the code it must be refused with)
CASES: dict[str, tuple[Callable[[Ctx], dict[str, str]], str]] = {
    "expired": (lambda c: bearer(signed(c, iat=c.now - 9000, nbf=c.now - 9000, exp=c.now - 1800)), "token_expired"),
    "not_yet_valid": (lambda c: bearer(signed(c, iat=c.now + 3600, nbf=c.now + 3600, exp=c.now + 9000)),
                      "token_not_yet_valid"),
    "bad_signature": (lambda c: bearer(signed(c, Ed25519PrivateKey.generate())), "bad_signature"),
    "alg_none": (lambda c: bearer(hand_made(c, "none", None)), "bad_algorithm"),
    # HMAC keyed with the gateway's public key, the classic confusion of a verifier that reads `alg`
    "algorithm_confusion": (lambda c: bearer(hand_made(c, "HS256", c.key.public_key().public_bytes_raw())),
                            "bad_algorithm"),
    "wrong_fingerprint": (lambda c: bearer(signed(c), fingerprint="fp-someone-else"), "wrong_device"),
    "fingerprint_claim_of_another_device": (lambda c: bearer(signed(c, fph=fingerprint_hash("fp-phone"))),
                                            "wrong_device"),
    "revoked_jti": (lambda c: bearer(signed(c, jti="revoked-jti")), "token_revoked"),
    "revoked_device": (lambda c: bearer(signed(c, sub=c.old_phone.device_id, fph=fingerprint_hash("fp-phone")),
                                        "fp-phone"), "device_revoked"),
    "unknown_device": (lambda c: bearer(signed(c, sub="d-nobody")), "unknown_device"),
    **{f"missing_{claim}": ((lambda c, claim=claim: bearer(signed(c, **{claim: None}))), "missing_claim")
       for claim in ("sub", "fph", "jti", "iat", "exp")},
    "garbage_token": (lambda c: bearer("not.a.token"), "malformed_token"),
    "binary_garbage": (lambda c: bearer(b64(secrets.token_bytes(40))), "malformed_token"),
    "no_token": (lambda c: {FINGERPRINT_HEADER: FP}, "missing_token"),
    "basic_auth": (lambda c: {"Authorization": "Basic bGFwdG9wOnB3", FINGERPRINT_HEADER: FP}, "missing_token"),
    "no_fingerprint": (lambda c: {"Authorization": f"Bearer {signed(c)}"}, "missing_fingerprint"),
}


async def refused_over_websocket(url: str, headers: dict[str, str]) -> tuple[int, dict]:
    with pytest.raises(InvalidStatus) as err:
        async with connect(url.replace("http", "ws") + "/link/ws", additional_headers=headers) as ws:
            await ws.send(HELLO)
    resp = err.value.response
    return resp.status_code, decode(resp.body.split(b"\n")[0], 1 << 16).body


def refused_over_longpoll(url: str, headers: dict[str, str]) -> tuple[int, dict]:
    resp = httpx.post(url + "/link/send", content=HELLO + "\n", headers=headers)
    return resp.status_code, decode(resp.content.split(b"\n")[0], 1 << 16).body


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_token_is_refused_with_a_clear_error_and_no_session(ctx, case):
    make_headers, code = CASES[case]
    headers = make_headers(ctx)
    before = ctx.gw.sessions()
    ws_status, ws_error = asyncio.run(refused_over_websocket(ctx.gw.url, headers))
    lp_status, lp_error = refused_over_longpoll(ctx.gw.url, headers)
    poll = httpx.get(ctx.gw.url + "/link/poll", params={"sid": "x", "ack": 0}, headers=headers)
    assert (ws_status, lp_status, poll.status_code) == (401, 401, 401)
    assert ws_error["code"] == lp_error["code"] == code
    assert ws_error["message"] and ws_error["action"]  # what was wrong, and what to do
    assert ctx.gw.sessions() == before


def test_the_same_requests_with_a_good_token_are_let_in(ctx):
    headers = bearer(signed(ctx))

    async def scenario():
        async with connect(ctx.gw.url.replace("http", "ws") + "/link/ws", additional_headers=headers) as ws:
            await ws.send(HELLO)
            return decode(await ws.recv(), 1 << 16)

    assert asyncio.run(scenario()).type is Type.ERROR  # past auth: the gateway wants a sealed hello
    resp = httpx.post(ctx.gw.url + "/link/send", content=HELLO + "\n", headers=headers)
    assert resp.status_code == 400 and b"seal_required" in resp.content


def test_a_pairing_code_pairs_one_device_once(ctx):
    async def scenario():
        code = await issue_code(ctx.gw.state, "tablet", time.time())
        first = await pair(ctx.gw.url, code, "fp-tablet")
        outcomes = {}
        for name, attempt in {
            "reused": pair(ctx.gw.url, code, "fp-other"),
            "expired": pair(ctx.gw.url, await issue_code(ctx.gw.state, "tv", time.time(), ttl=-1), "fp-tv"),
            "unknown": pair(ctx.gw.url, "ABCDE-FGHJK", "fp-x"),
        }.items():
            with pytest.raises(CredentialsRejected) as err:
                await attempt
            outcomes[name] = err.value
        return first, outcomes, await ctx.gw.state.devices()

    first, outcomes, devices = asyncio.run(scenario())
    assert first.device_id.startswith("d-") and first.gateway_url == ctx.gw.url
    assert outcomes["reused"].code == "pairing_code_used" and "already used" in outcomes["reused"].message
    assert outcomes["expired"].code == "pairing_code_expired"
    assert outcomes["unknown"].code == "bad_pairing_code"
    assert all(str(e.action) for e in outcomes.values())
    assert [d.name for d in devices].count("tablet") == 1 and "tv" not in [d.name for d in devices]


@pytest.mark.parametrize(("change", "code"), [
    ("fingerprint", "wrong_device"), ("secret", "bad_refresh_credential"), ("revoked", "device_revoked")])
def test_a_refresh_with_wrong_credentials_gets_no_token(ctx, change, code):
    creds, fingerprint = ctx.laptop, FP
    if change == "fingerprint":
        fingerprint = "fp-copied-to-another-machine"
    elif change == "secret":
        creds = Credentials(creds.gateway_url, creds.device_id, b64(secrets.token_bytes(32)))
    else:
        creds, fingerprint = ctx.old_phone, "fp-phone"
    with pytest.raises(CredentialsRejected) as err:
        asyncio.run(TokenSource(creds, fingerprint).headers(ctx.gw.url))
    assert err.value.code == code


def test_a_paired_device_chats_with_sealed_bodies(secure, fake_upstream):
    async def scenario():
        creds = await secure.pair()
        async with secure.client(creds) as client:
            return await collect(client.chat(HI, max_tokens=12))

    reply = asyncio.run(scenario())
    assert reply.text == expected(12) and isinstance(reply.end, Done)


def test_failed_sign_ins_are_rate_limited_but_good_credentials_never_are(secure_factory):
    gw = secure_factory(max_failures=3, failure_window=60)

    async def scenario():
        creds = await gw.pair()
        good = await TokenSource(creds, FP).headers(gw.url)
        bad = {"Authorization": "Bearer nonsense", FINGERPRINT_HEADER: FP}
        statuses = [refused_over_longpoll(gw.url, bad)[0] for _ in range(3)]
        limited = httpx.post(gw.url + "/link/send", content=HELLO + "\n", headers=bad)
        ws_status, ws_error = await refused_over_websocket(gw.url, bad)
        fresh = await TokenSource(creds, FP).headers(gw.url)  # a refresh with good credentials
        async with gw.client(creds) as client:
            reply = await collect(client.chat(HI, max_tokens=5))
        return statuses, limited, (ws_status, ws_error), good, fresh, reply

    statuses, limited, (ws_status, ws_error), good, fresh, reply = asyncio.run(scenario())
    assert statuses == [401, 401, 401]
    assert limited.status_code == 429 and ws_status == 429
    assert 0 < int(limited.headers["Retry-After"]) <= 60
    error = decode(limited.content.split(b"\n")[0], 1 << 16).body
    assert error["code"] == ws_error["code"] == "rate_limited" and "Wait" in error["action"]
    assert fresh["Authorization"] != good["Authorization"]  # a new token, not a 429
    assert reply.text == expected(5) and isinstance(reply.end, Done)


def test_revoking_a_device_ends_its_open_session_and_it_cannot_come_back(secure, fake_upstream):
    fake_upstream.delay, fake_upstream.tokens = 0.05, 400

    async def scenario():
        creds = await secure.pair()
        client = secure.client(creds)
        await client.connect(5)
        turn = client.chat(HI, max_tokens=400)
        await asyncio.sleep(0.3)
        device = await secure.state.revoke_device("laptop", time.time())
        started = time.monotonic()
        reply = await collect(turn, timeout=10)
        ended_after = time.monotonic() - started
        with pytest.raises(LinkRefused) as refused:
            await client.connect(1)
        await client.close()
        return device, reply, ended_after, refused.value

    device, reply, ended_after, refused = asyncio.run(scenario())
    assert device is not None and device.revoked
    assert isinstance(reply.end, Error) and reply.end.code == "device_revoked"
    assert ended_after < 2.0  # the gateway re-checks open sessions every 0.2 s here
    assert refused.code == "device_revoked" and "revoked" in str(refused)
    assert secure.sessions() == 0
    assert fake_upstream.active == 0  # its generation was stopped too


def test_revoking_a_token_ends_its_session_but_the_device_carries_on_with_a_new_one(secure, fake_upstream):
    """A revoked token may have leaked: what was opened with it ends. The device itself is
    still trusted, so the client signs in again with a new token and can ask again."""
    fake_upstream.delay, fake_upstream.tokens = 0.02, 100

    async def scenario():
        creds = await secure.pair()
        tokens = TokenSource(creds, FP)
        async with secure.client(tokens) as client:
            headers = await tokens.headers(secure.url)
            jti = jwt.decode(headers["Authorization"].split()[1], options={"verify_signature": False})["jti"]
            turn = client.chat(HI, max_tokens=100)
            await asyncio.sleep(0.2)
            await secure.state.revoke_token(jti, time.time() + 7200)
            lost = await collect(turn, timeout=10)
            again = await collect(client.chat(HI, max_tokens=5))
            new_jti = jwt.decode((await tokens.headers(secure.url))["Authorization"].split()[1],
                                 options={"verify_signature": False})["jti"]
            return lost, again, jti != new_jti

    lost, again, renewed = asyncio.run(scenario())
    assert isinstance(lost.end, Error) and lost.end.code == "session_lost"  # the old session ended with it
    assert isinstance(again.end, Done) and again.text == expected(5) and renewed


def test_tokens_are_renewed_before_they_expire_without_the_user_noticing(secure_factory, fake_upstream):
    gw = secure_factory(token_ttl=1.0, recheck_interval=0.2)
    fake_upstream.delay, fake_upstream.tokens = 0.02, 150  # a 3 s reply outlives three tokens

    async def scenario():
        creds = await gw.pair()
        tokens = TokenSource(creds, FP)
        issued: list[str] = []
        fetch = tokens._refresh  # noqa: SLF001

        async def counting(url: str) -> None:
            await fetch(url)
            issued.append(tokens._token)  # noqa: SLF001

        tokens._refresh = counting  # noqa: SLF001
        async with gw.client(tokens) as client:
            sid = client.link.sid
            reply = await collect(client.chat(HI, max_tokens=150), timeout=15)
            return reply, issued, client.link.sid == sid

    reply, issued, same_session = asyncio.run(scenario())
    assert reply.text == expected(150) and [t.index for t in reply.tokens] == list(range(150))
    assert isinstance(reply.end, Done) and same_session
    assert len(set(issued)) >= 3
