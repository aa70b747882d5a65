"""Two gateway replicas (real `stella-server serve --redis` processes) sharing state through a
real Redis: the replica streaming a reply is killed with SIGKILL mid-stream, the client resumes
on the other one, and the reply arrives complete, nothing lost or repeated. Devices and
revocations are shared too."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis.asyncio as redis

from remote_api.client import Done, Error, LinkClient
from remote_api.credentials import Credentials, CredentialsRejected, TokenSource, pair
from remote_api.shared.processes import free_port, running
from remote_api.state_key import new_key_line
from tests.remote_api.harness import FAST, collect
from tests.remote_api.proxy import TcpProxy

from .conftest import HI, expected

pytestmark = pytest.mark.redis
BIN = Path(sys.executable).parent
LINK = "\n".join(f"{name} = {getattr(FAST, name)!r}" for name in (
    "heartbeat_interval", "heartbeat_timeout", "retransmit_timeout", "handshake_timeout", "reconnect_min",
    "reconnect_max", "connect_timeout", "longpoll_hold", "upgrade_probe_interval", "session_ttl"))
# One state key for the whole run: the session's Redis keeps the signing key it sealed.
STATE_KEY = new_key_line("tests")


@dataclass
class Replicas:
    urls: list[str]
    procs: list[subprocess.Popen]
    redis: str
    env: dict[str, str]  # what every replica and `stella-server device` get: the state key
    logs: list[Path]

    def device(self, *args: str) -> subprocess.CompletedProcess:
        """`stella-server device ARGS` on the replicas' shared state, as their operator runs it."""
        return subprocess.run([str(BIN / "stella-server"), "device", *args, "--redis", self.redis],
                              capture_output=True, text=True, timeout=30, env=self.env)

    def serving(self, url: str) -> subprocess.Popen:
        return self.procs[self.urls.index(url)]

    async def pair(self, fingerprint: str = "fp-phone") -> Credentials:
        added = self.device("add", "phone-" + secrets.token_hex(3))
        code = re.search(r"[0-9A-Z]{5}-[0-9A-Z]{5}", added.stdout).group(0)
        return await pair(self.urls[1], code, fingerprint)


@pytest.fixture
def replicas(redis_server, fake_upstream, tmp_path) -> Iterator[Replicas]:
    with start_replicas(redis_server.url, fake_upstream.url, tmp_path) as started:
        yield started


@contextlib.contextmanager
def start_replicas(redis_url: str, upstream_url: str, tmp_path: Path, log_level: str = "INFO",
                   auth: str = "") -> Iterator[Replicas]:
    """Two `stella-server serve --redis` replicas sharing one state key; logs in tmp_path; `auth`:
    more lines for their [auth] settings."""
    config = tmp_path / "replica.toml"
    config.write_text(f"[link]\n{LINK}\n[auth]\nrecheck_interval = 0.3\n{auth}\n")
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    env = {**os.environ, "STELLA_STATE__KEY": STATE_KEY}
    logs = [tmp_path / f"replica-{port}.log" for port in ports]
    with contextlib.ExitStack() as stack:
        procs = []
        for port, url, path in zip(ports, urls, logs, strict=True):
            log = stack.enter_context(open(path, "w"))
            procs.append(stack.enter_context(running(
                [str(BIN / "stella-server"), "serve", "--port", str(port), "--upstream", upstream_url,
                 "--redis", redis_url, "--config", str(config), "--log-level", log_level], url, timeout=60,
                grace=10, stderr=log, env=env)))
        yield Replicas(urls, procs, redis_url, env, logs)


@pytest.mark.parametrize("sampling", [{"temperature": 0, "seed": 7}, {"temperature": 0.8}])
def test_the_replica_streaming_a_reply_is_killed_and_the_other_one_finishes_it(replicas, fake_upstream, sampling):
    fake_upstream.delay, fake_upstream.tokens = 0.02, 150

    async def scenario():
        creds = await replicas.pair()
        client = LinkClient(replicas.urls, FAST, credentials=TokenSource(creds, "fp-phone"))
        await client.connect(5)
        sid = client.link.sid
        killed: list[str] = []
        seeds: list[int] = []

        def on_token(t):
            if t.index == 40:
                killed.append(client.server_url)
                seeds.append(fake_upstream.last_request["seed"])
                os.kill(replicas.serving(client.server_url).pid, signal.SIGKILL)

        reply = await collect(client.chat(HI, max_tokens=150, **sampling), on_token, timeout=30)
        seeds.append(fake_upstream.last_request["seed"])
        finished_on, same_session = client.server_url, client.link.sid == sid
        leftovers = await in_flight_requests(replicas.redis, sid)
        await client.close()
        return reply, killed, finished_on, same_session, seeds, leftovers

    reply, killed, finished_on, same_session, seeds, leftovers = asyncio.run(scenario())
    assert replicas.serving(killed[0]).wait(5) == -signal.SIGKILL
    assert finished_on != killed[0] and same_session
    assert reply.text == expected(150)
    assert [t.index for t in reply.tokens] == list(range(150))  # nothing lost, nothing repeated
    assert isinstance(reply.end, Done) and reply.end.tokens == 150
    assert fake_upstream.generations == 2 and seeds[0] == seeds[1]  # generated again, with the same seed
    assert leftovers == 0  # a finished reply's request is gone from the shared state


async def in_flight_requests(url: str, sid: str) -> int:
    client = redis.Redis.from_url(url)
    try:
        return await client.hlen(f"stella:s:{{{sid}}}:req")
    finally:
        await client.aclose()


def test_a_reply_the_model_would_not_write_again_ends_with_a_clear_error_not_a_mixed_reply(replicas,
                                                                                          fake_upstream):
    fake_upstream.delay, fake_upstream.tokens = 0.02, 100

    async def scenario():
        creds = await replicas.pair()
        client = LinkClient(replicas.urls, FAST, credentials=TokenSource(creds, "fp-phone"))
        await client.connect(5)

        def on_token(t):
            if t.index == 20:
                fake_upstream.accent = "~"  # from now on the "model" writes something else
                os.kill(replicas.serving(client.server_url).pid, signal.SIGKILL)

        reply = await collect(client.chat(HI, max_tokens=100, temperature=0.9), on_token, timeout=30)
        await client.close()
        return reply

    reply = asyncio.run(scenario())
    assert reply.text == expected(len(reply.tokens)) and 21 <= len(reply.tokens) < 100  # only the first model's
    assert isinstance(reply.end, Error) and reply.end.code == "reply_diverged" and "Ask again" in reply.end.action


def test_a_client_that_moves_while_its_replica_lives_fences_the_old_one_out(replicas, fake_upstream):
    """No replica dies: the client simply loses its way to A and resumes on B. A is still
    generating; its next write is refused (B owns the session now) and it lets go."""
    fake_upstream.delay, fake_upstream.tokens = 0.02, 120

    async def scenario():
        proxy = await TcpProxy(int(replicas.urls[0].rsplit(":", 1)[1])).start()
        creds = await replicas.pair()
        client = LinkClient([proxy.url, replicas.urls[1]], FAST, credentials=TokenSource(creds, "fp-phone"))
        await client.connect(5)
        assert client.server_url == proxy.url

        def on_token(t):
            if t.index == 30 and client.server_url == proxy.url:
                asyncio.ensure_future(proxy.stop())  # A becomes unreachable: connection cut, no new ones

        reply = await collect(client.chat(HI, max_tokens=120), on_token, timeout=30)
        finished_on = client.server_url
        await client.close()
        await proxy.stop()
        return reply, finished_on

    reply, finished_on = asyncio.run(scenario())
    assert finished_on == replicas.urls[1]
    assert reply.text == expected(120) and [t.index for t in reply.tokens] == list(range(120))
    assert isinstance(reply.end, Done)
    assert fake_upstream.generations == 2 and fake_upstream.disconnects >= 1  # A's generation was stopped
    assert all(p.poll() is None for p in replicas.procs)


def test_devices_and_revocations_are_shared_by_all_replicas(replicas):
    async def scenario():
        creds = await replicas.pair()
        tokens = TokenSource(creds, "fp-phone")
        before = [httpx.get(url + "/link/poll", params={"sid": "none", "ack": 0},
                            headers=await tokens.headers(url)).status_code for url in replicas.urls]
        revoked = replicas.device("revoke", creds.device_id)
        after = [httpx.get(url + "/link/poll", params={"sid": "none", "ack": 0},
                           headers=await tokens.headers(url)).status_code for url in replicas.urls]
        with pytest.raises(CredentialsRejected) as refused:
            await TokenSource(creds, "fp-phone").headers(replicas.urls[0])
        return before, revoked, after, refused.value

    before, revoked, after, refused = asyncio.run(scenario())
    assert before == [409, 409]  # let in (there is just no such session)
    assert revoked.returncode == 0
    assert after == [401, 401] and refused.code == "device_revoked"
