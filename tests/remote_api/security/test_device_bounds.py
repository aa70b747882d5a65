"""What one paired device can make the gateway hold is bounded, each bound a setting: sessions
per device (the oldest idle one goes), replies being written per device, bytes held ahead of a
missing envelope, bytes waiting for a client that does not read, sessions per gateway. Refused
work gets a plain code (HTTP status, or WebSocket close 4429 with the setting in the reason);
other devices notice nothing - shown last against a real `stella-server serve` flooded by one
device while another still gets its whole reply and the gateway's memory stays bounded."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from remote_api.client import Done, Error, LinkClient
from remote_api.config import ServerConfig
from remote_api.credentials import Credentials, TokenSource, pair
from remote_api.envelope import CLOSE_LIMIT, Envelope, LimitError, Type, decode, encode
from remote_api.link_config import LinkConfig
from remote_api.protocol import LinkProtocol, Role
from remote_api.seal import SealCodec
from remote_api.shared.config_loader import load_config
from remote_api.shared.processes import free_port, running
from tests.fakes.llama_server import FakeLlamaServer
from tests.remote_api import test_protocol as sans_io
from tests.remote_api.harness import FAST, collect

from .conftest import HI, SecureGateway, expected

FP = "fp-laptop"
BIN = Path(sys.executable).parent
# Raw test sessions send no pings of their own: a long heartbeat keeps them open meanwhile.
QUIET = dataclasses.replace(FAST, heartbeat_interval=10.0, heartbeat_timeout=10.0)


class Raw:
    """A session driven by hand over a WebSocket, sealed as the app seals it, so a test can do
    what the app never does: withhold an envelope, stop reading, open session after session."""

    def __init__(self, ws: ClientConnection, link: LinkProtocol) -> None:
        self.ws, self.link = ws, link

    @property
    def sid(self) -> str:
        return self.link.sid

    @staticmethod
    async def connect(url: str, headers: dict[str, str], rcvbuf: int = 0) -> ClientConnection:
        sock = None
        if rcvbuf:  # a small receive buffer: a client that stops reading stalls the gateway's socket soon
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.connect(("127.0.0.1", int(url.rsplit(":", 1)[1])))
        return await connect(url.replace("http", "ws") + "/link/ws", additional_headers=headers, sock=sock,
                             ping_interval=None, compression=None, max_size=None,
                             max_queue=1 if rcvbuf else None)  # not reading: stop at once; else see closes soon

    @classmethod
    async def open(cls, url: str, headers: dict[str, str], link_key: bytes, rcvbuf: int = 0) -> Raw:
        link = LinkProtocol(Role.CLIENT, LinkConfig(), codec=SealCodec(Role.CLIENT, link_key))
        ws = await cls.connect(url, headers, rcvbuf)
        link.connection_made()
        await ws.send(link.data_to_send()[0].decode())
        link.receive(await asyncio.wait_for(ws.recv(), 5))
        assert link.established, "no welcome"
        link.events()
        return cls(ws, link)

    def chat(self, max_tokens: int = 128, content: str = "Say something.") -> None:
        self.link.send(Type.CHAT, {"rid": uuid.uuid4().hex, "messages": [{"role": "user", "content": content}],
                                   "max_tokens": max_tokens, "temperature": 0.7, "stop": []})

    async def flush(self, skip_first: bool = False) -> bool:
        """Send what is queued (but the first envelope if `skip_first`); False once the gateway closed."""
        frames = self.link.data_to_send()[1 if skip_first else 0:]
        try:
            for frame in frames:
                await self.ws.send(frame.decode())
        except Exception:
            return False
        return True

    async def ping(self, n: int) -> None:
        """A heartbeat carrying an ack of nothing new: keeps the connection alive without reading."""
        await self.ws.send(encode(Envelope(Type.PING, 0, self.link.recv_seq, self.sid, int(time.time() * 1000),
                                           {"n": n})).decode())

    async def closed(self, timeout: float = 10.0) -> tuple[int | None, str, list[Envelope]]:
        """Read to the end: the close code and reason, and the envelopes that came before."""
        got: list[Envelope] = []
        with contextlib.suppress(Exception):
            async with asyncio.timeout(timeout):
                async for frame in self.ws:
                    got.append(decode(frame, 1 << 20))
        return self.ws.close_code, self.ws.close_reason or "", got


def sealed_hello(link_key: bytes) -> str:
    return encode(Envelope(Type.HELLO, body=SealCodec(Role.CLIENT, link_key).hello())).decode()


async def refused_hello(url: str, headers: dict[str, str], link_key: bytes) -> tuple[int | None, str, dict]:
    ws = await Raw.connect(url, headers)
    await ws.send(sealed_hello(link_key))
    code, reason, got = await Raw(ws, LinkProtocol(Role.CLIENT)).closed()
    return code, reason, got[0].body if got else {}


def sessions_of(gw: SecureGateway) -> set[str]:
    return gw.gateway.call(lambda g: {s.sid for s in g.registry})


def generating(gw: SecureGateway) -> int:
    return gw.gateway.call(lambda g: sum(len(s.turns) for s in g.registry))


@pytest.fixture
def long_replies(fake_upstream: FakeLlamaServer) -> FakeLlamaServer:
    fake_upstream.tokens, fake_upstream.delay = 1000, 0.02  # 20 s: a session stays busy for the test
    return fake_upstream


def test_a_device_over_its_session_bound_loses_its_oldest_idle_session(secure_factory, long_replies):
    gw = secure_factory(link=dataclasses.replace(QUIET, max_sessions_per_device=3))

    async def scenario():
        creds = await gw.pair()
        headers = await TokenSource(creds, FP).headers(gw.url)
        busy = await Raw.open(gw.url, headers, creds.link_key)  # the oldest, but writing a reply
        busy.chat(max_tokens=1000)
        await busy.flush()
        assert gw.gateway.wait_for(lambda g: any(s.turns for s in g.registry))
        old, new = [await Raw.open(gw.url, headers, creds.link_key) for _ in range(2)]
        newest = await Raw.open(gw.url, headers, creds.link_key)
        code, reason, _ = await old.closed()
        return (busy.sid, new.sid, newest.sid), (code, reason), sessions_of(gw), generating(gw)

    kept, (code, reason), sessions, busy = asyncio.run(scenario())
    assert code == CLOSE_LIMIT and reason == "too_many_sessions (link.max_sessions_per_device)"
    assert sessions == set(kept) and busy == 1  # the busy one stayed, its reply still being written


def test_a_device_whose_sessions_are_all_busy_is_refused_another(secure_factory, long_replies):
    gw = secure_factory(link=dataclasses.replace(QUIET, max_sessions_per_device=2))

    async def scenario():
        creds = await gw.pair()
        headers = await TokenSource(creds, FP).headers(gw.url)
        for _ in range(2):
            raw = await Raw.open(gw.url, headers, creds.link_key)
            raw.chat(max_tokens=1000)
            await raw.flush()
        assert gw.gateway.wait_for(lambda g: sum(len(s.turns) for s in g.registry) == 2)
        ws = await refused_hello(gw.url, headers, creds.link_key)
        lp = httpx.post(gw.url + "/link/send", content=sealed_hello(creds.link_key) + "\n", headers=headers)
        return ws, lp, len(sessions_of(gw))

    (code, reason, error), lp, sessions = asyncio.run(scenario())
    assert code == CLOSE_LIMIT and reason == "too_many_sessions (link.max_sessions_per_device)"
    assert error["code"] == "too_many_sessions" and error["action"]
    assert lp.status_code == 429 and decode(lp.content.split(b"\n")[0], 1 << 16).body["code"] == "too_many_sessions"
    assert sessions == 2


def test_a_device_gets_a_bounded_number_of_replies_at_once_and_others_are_not_held_up(secure_factory,
                                                                                      fake_upstream):
    fake_upstream.tokens, fake_upstream.delay = 200, 0.02
    gw = secure_factory(link=dataclasses.replace(FAST, max_generations_per_device=2))

    async def scenario():
        laptop, phone = await gw.pair("laptop", FP), await gw.pair("phone", "fp-phone")
        async with gw.client(laptop) as greedy, gw.client(phone, "fp-phone") as other:
            first, second = greedy.chat(HI, max_tokens=200), greedy.chat(HI, max_tokens=200)
            third = await collect(greedy.chat(HI, max_tokens=5))
            theirs = await collect(other.chat(HI, max_tokens=5))
            first.cancel()
            await collect(first)
            after = await collect(greedy.chat(HI, max_tokens=5))
            second.cancel()
            return third, theirs, after

    third, theirs, after = asyncio.run(scenario())
    assert isinstance(third.end, Error) and third.end.code == "too_many_generations"
    assert "link.max_generations_per_device" in third.end.message and third.tokens == []
    assert theirs.text == expected(5) and isinstance(theirs.end, Done)  # another device: unaffected
    assert after.text == expected(5) and isinstance(after.end, Done)  # a slot freed: served again


def test_the_gateway_refuses_sessions_beyond_its_bound_without_touching_open_ones(secure_factory, fake_upstream):
    gw = secure_factory(link=dataclasses.replace(FAST, max_sessions=2))

    async def scenario():
        a, b = await gw.pair("a", "fp-a"), await gw.pair("b", "fp-b")
        c = await gw.pair("c", "fp-c")
        headers = await TokenSource(c, "fp-c").headers(gw.url)
        async with gw.client(a, "fp-a") as ca, gw.client(b, "fp-b") as cb:
            ws = await refused_hello(gw.url, headers, c.link_key)
            lp = httpx.post(gw.url + "/link/send", content=sealed_hello(c.link_key) + "\n", headers=headers)
            replies = [await collect(ca.chat(HI, max_tokens=5)), await collect(cb.chat(HI, max_tokens=5))]
        return ws, lp, replies

    (code, reason, error), lp, replies = asyncio.run(scenario())
    assert code == CLOSE_LIMIT and reason == "gateway_full (link.max_sessions)" and error["code"] == "gateway_full"
    assert lp.status_code == 503
    assert all(r.text == expected(5) and isinstance(r.end, Done) for r in replies)


def test_envelopes_held_ahead_of_a_missing_one_are_bounded_in_bytes(secure_factory, fake_upstream):
    gw = secure_factory(link=dataclasses.replace(QUIET, reorder_bytes=100_000))

    async def scenario():
        creds = await gw.pair()
        raw = await Raw.open(gw.url, await TokenSource(creds, FP).headers(gw.url), creds.link_key)
        for _ in range(12):
            raw.chat(content="x" * 30_000)  # ~40 KB sealed each
        await raw.flush(skip_first=True)  # envelope 1 never comes
        code, reason, got = await raw.closed()
        return code, reason, got, sessions_of(gw)

    code, reason, got, sessions = asyncio.run(scenario())
    assert code == CLOSE_LIMIT and reason == "reorder_overflow (link.reorder_bytes)"
    error = got[-1].body
    assert got[-1].type is Type.ERROR and error["code"] == "reorder_overflow" and "100000 bytes" in error["message"]
    assert len(sessions) == 1  # the connection is refused; the session may still be resumed
    assert fake_upstream.generations == 0


def test_the_reorder_budget_comes_back_once_the_gap_is_filled():
    """Sans-I/O: bytes count while they wait for a missing envelope, and only that long."""
    _, client, server = sans_io.make_pair(dataclasses.replace(sans_io.CFG, reorder_bytes=10_000))
    sans_io.connect(client, server)

    def chats(n: int) -> list[bytes]:
        for _ in range(n):
            client.send(Type.CHAT, {"rid": uuid.uuid4().hex, "messages": [{"role": "user", "content": "x" * 2000}]})
        return client.data_to_send()

    first = chats(6)  # seq 1..6, ~2.2 KB each
    for frame in first[1:5]:  # 2..5 wait for 1: ~8.8 KB
        server.receive(frame)
    with pytest.raises(LimitError) as over:
        server.receive(first[5])  # 6 would pass 10,000 bytes
    assert over.value.code == "reorder_overflow" and over.value.reason == "reorder_overflow (link.reorder_bytes)"
    server.receive(first[0])
    assert [m.seq for m in sans_io.messages(server)] == [1, 2, 3, 4, 5]
    for frame in chats(4):  # 7..10 wait for 6 (refused above): the budget is whole again
        server.receive(frame)
    assert server.recv_seq == 5 and sans_io.messages(server) == []


def test_a_client_that_stops_reading_is_dropped_and_resumes_its_session_later(secure_factory, fake_upstream):
    fake_upstream.tokens, fake_upstream.delay, fake_upstream.accent = 8192, 0.0, "y" * 2000
    gw = secure_factory(link=dataclasses.replace(QUIET, outbound_bytes=256 * 1024))

    async def scenario():
        creds = await gw.pair()
        headers = await TokenSource(creds, FP).headers(gw.url)
        raw = await Raw.open(gw.url, headers, creds.link_key, rcvbuf=4096)
        raw.chat(max_tokens=8192)
        await raw.flush()
        dropped, n = False, 0
        while not dropped and n < 100:  # heartbeats (acks of nothing new) for up to 10 s, never reading
            n += 1
            await raw.ping(n)
            await asyncio.sleep(0.1)
            dropped = gw.gateway.call(lambda g: all(s.attachment is None for s in g.registry))
        held = gw.gateway.call(lambda g: [(s.link.backlog_bytes, s.sid) for s in g.registry])
        raw.ws.transport.abort()
        # It reads again: the same session, resumed, with the reply so far and how it ended.
        link = raw.link
        ws = await Raw.connect(gw.url, headers)
        link.connection_lost()
        link.connection_made()
        resumed = Raw(ws, link)
        await resumed.flush()
        got: list[Any] = []
        async with asyncio.timeout(10):
            while not any(getattr(m, "type", None) in (Type.DONE, Type.ERROR) for m in got):
                link.receive(await ws.recv())
                got += link.events()
                await resumed.flush()
        await ws.close()
        return dropped, held, raw.sid, link.sid, got

    dropped, held, old_sid, new_sid, got = asyncio.run(scenario())
    assert dropped
    assert len(held) == 1 and held[0][1] == old_sid == new_sid and held[0][0] <= 256 * 1024 + 8192
    messages = [m for m in got if hasattr(m, "body")]
    assert messages[-1].type is Type.ERROR and messages[-1].body["code"] == "replay_overflow"
    assert "link.outbound_bytes" in messages[-1].body["message"]
    tokens = [m.body["i"] for m in messages if m.type is Type.TOKEN]
    assert tokens == list(range(len(tokens))) and tokens  # nothing lost on the way


def test_every_bound_is_a_setting_with_an_environment_name():
    env = {"STELLA_LINK__MAX_SESSIONS_PER_DEVICE": "3", "STELLA_LINK__MAX_GENERATIONS_PER_DEVICE": "2",
           "STELLA_LINK__REORDER_BYTES": "65536", "STELLA_LINK__OUTBOUND_BYTES": "131072",
           "STELLA_LINK__MAX_SESSIONS": "50"}
    link = load_config(ServerConfig, env=env).link
    assert (link.max_sessions_per_device, link.max_generations_per_device, link.reorder_bytes, link.outbound_bytes,
            link.max_sessions) == (3, 2, 65536, 131072, 50)


# --- a flood from one device against the real server ----------------------------------------

FLOOD_LIMITS = {"STELLA_LINK__REORDER_BYTES": str(1 << 20), "STELLA_LINK__OUTBOUND_BYTES": str(1 << 20),
                "STELLA_LINK__MAX_SESSIONS_PER_DEVICE": "8", "STELLA_LINK__MAX_GENERATIONS_PER_DEVICE": "4"}
# What the bounds allow one device to pin: 8 sessions x (1 MiB held ahead of a gap + 1 MiB of replay
# buffer, kept plain and sealed + 1 MiB queued for its socket) = 32 MiB; the rest is the heap's slack.
RSS_BOUND = 64 << 20


def rss(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for {pid}")


async def flood(url: str, creds: Credentials, watch: Callable[[], None]) -> dict[str, Any]:
    tokens = TokenSource(creds, FP)
    headers = await tokens.headers(url)
    seen: dict[str, Any] = {"closes": {}, "hellos": 0, "welcomed": 0, "frames": 0}

    def closed(raw: Raw) -> None:
        reason = raw.ws.close_reason or ""
        seen["closes"][reason] = seen["closes"].get(reason, 0) + 1

    async def hello() -> list[Raw]:
        seen["hellos"] += 1
        try:
            return [await Raw.open(url, headers, creds.link_key)]
        except ConnectionClosed as exc:  # ended by a newer one of the same batch before its welcome left
            reason = exc.rcvd.reason if exc.rcvd else ""
            seen["closes"][reason] = seen["closes"].get(reason, 0) + 1
            return []

    # 1,000 hellos, 20 at a time, each session left open: the gateway keeps the newest few.
    live: list[Raw] = []
    for _ in range(0, 1000, 20):
        batch = [raw for opened in await asyncio.gather(*(hello() for _ in range(20))) for raw in opened]
        seen["welcomed"] += len(batch)
        await asyncio.sleep(0.05)  # let the gateway's closes of the sessions it ended arrive
        for raw in live:
            if raw.ws.close_code is not None:
                closed(raw)
        live = [raw for raw in live if raw.ws.close_code is None] + batch
        watch()
    for raw in live:
        await raw.ws.close()
    # 1,024 envelopes of 250 KB, all after a missing first one, on as many new sessions as it takes.
    sent = 0
    while sent < 1024:
        raw = await Raw.open(url, headers, creds.link_key)
        raw.chat(content="z" * 186_000)  # envelope 1: withheld
        while sent < 1024:
            raw.chat(content="z" * 186_000)
            frame = raw.link.data_to_send()[-1]
            assert 245_000 < len(frame) < 256_000
            try:
                await raw.ws.send(frame.decode())
                await asyncio.sleep(0)  # let the gateway's close in: then on to a new session
            except Exception:
                break
            sent += 1
            if sent % 64 == 0:
                watch()
        await raw.closed(2)
        closed(raw)
    seen["frames"] = sent
    # Replies it asks for and never reads, acknowledging nothing, keeping the connections alive.
    silent = [await Raw.open(url, headers, creds.link_key, rcvbuf=4096) for _ in range(6)]
    for raw in silent:
        for _ in range(2):
            raw.chat(max_tokens=8192)
        await raw.flush()
    for n in range(60):
        for raw in silent:
            with contextlib.suppress(Exception):
                await raw.ping(n)
        await asyncio.sleep(0.1)
        watch()
    for raw in silent:
        raw.ws.transport.abort()
    return seen


@pytest.fixture
def flooded_llama(fake_llama: FakeLlamaServer):
    """Replies as long as a request may ask for, as fast as the gateway takes them."""
    fake_llama.reset(tokens=8192, delay=0.0, accent="q" * 1500)
    yield fake_llama
    fake_llama.reset()


def test_a_flood_from_one_device_keeps_the_gateway_small_and_other_devices_served(flooded_llama, tmp_path):
    fake_llama = flooded_llama
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    data = tmp_path / "gateway"
    env = {**os.environ, **FLOOD_LIMITS, "XDG_STATE_HOME": str(tmp_path / "state")}
    with running([str(BIN / "stella-server"), "serve", "--port", str(port), "--upstream", fake_llama.url,
                  "--data-dir", str(data), "--log-level", "WARNING"], url, timeout=60, grace=10, env=env,
                 stdin=subprocess.DEVNULL) as proc:

        def code(name: str) -> str:
            out = subprocess.run([str(BIN / "stella-server"), "device", "add", name, "--data-dir", str(data)],
                                 capture_output=True, text=True, check=True, timeout=30, env=env).stdout
            return out.split("--pair ")[1].split()[0]

        async def scenario():
            greedy = await pair(url, code("greedy"), FP)
            other = await pair(url, code("other"), "fp-other")
            async with LinkClient(url, FAST, credentials=TokenSource(other, "fp-other")) as client:
                warm = await collect(client.chat(HI, max_tokens=20), timeout=30)
                baseline = rss(proc.pid)
                peak = [baseline]
                attack = asyncio.create_task(flood(url, greedy, lambda: peak.append(rss(proc.pid))))
                during = []
                while not attack.done():  # the other device keeps talking meanwhile
                    during.append(await collect(client.chat(HI, max_tokens=20), timeout=30))
                    peak.append(rss(proc.pid))
                    await asyncio.sleep(0.1)
                seen = await attack
                after = await collect(client.chat(HI, max_tokens=20), timeout=30)
                return warm, baseline, max(peak), seen, during, after

        warm, baseline, peak, seen, during, after = asyncio.run(scenario())
    reply = expected_accented(20, "q" * 1500)
    print(f"gateway RSS: baseline {baseline / 2**20:.1f} MiB, peak during the flood {peak / 2**20:.1f} MiB "
          f"(+{(peak - baseline) / 2**20:.1f} MiB, bound +{RSS_BOUND >> 20} MiB); {seen['hellos']} hellos "
          f"({seen['welcomed']} welcomed), "
          f"{seen['frames']} reordered frames; closes {seen['closes']}; {len(during)} replies to the other device "
          "during the flood")
    assert warm.text == reply and isinstance(warm.end, Done)
    assert seen["hellos"] == 1000 and seen["welcomed"] > 0 and seen["frames"] == 1024
    assert seen["closes"].get("too_many_sessions (link.max_sessions_per_device)", 0) >= 900
    assert seen["closes"].get("reorder_overflow (link.reorder_bytes)", 0) >= 100  # ~5 frames a session
    assert peak - baseline < RSS_BOUND
    assert during and all(r.text == reply and isinstance(r.end, Done) for r in during)
    assert after.text == reply and isinstance(after.end, Done)


def expected_accented(n: int, accent: str) -> str:
    from tests.fakes.llama_server import token_text

    return "".join(accent + token_text(i) for i in range(n))
