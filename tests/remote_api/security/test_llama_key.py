"""The local llama-server answers only its gateway: it is started with an API key of its own,
new at every launch and never on its command line, and everything but /health refuses a
request without it. A gateway relaying a llama-server that wants a key (a remote one, given
by setting) sends it, and one without the key says which setting is missing."""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from remote_api.client import Done, Error, LinkClient
from remote_api.shared.processes import free_port, running
from tests.remote_api.harness import FAST, GatewayThread, collect

pytestmark = pytest.mark.llama
BIN = Path(sys.executable).parent
HI = [{"role": "user", "content": "Say hello."}]
GUARDED = [("GET", "/slots", None), ("GET", "/props", None), ("GET", "/metrics", None),
           ("POST", "/completion", {"prompt": "Hello", "n_predict": 4}),
           ("POST", "/v1/chat/completions", {"messages": HI, "max_tokens": 4}),
           ("POST", "/apply-template", {"messages": HI})]


def refused_without_key(url: str, wrong: str = "not-the-key") -> list[tuple[str, int, int]]:
    """(path, status with no key, status with a wrong key) for every guarded endpoint."""
    out = []
    for method, path, body in GUARDED:
        bare = httpx.request(method, url + path, json=body, timeout=30).status_code
        bad = httpx.request(method, url + path, json=body, timeout=30,
                            headers={"Authorization": f"Bearer {wrong}"}).status_code
        out.append((path, bare, bad))
    return out


def test_the_test_llama_server_refuses_everything_but_health_without_its_key(llama_server):
    url = llama_server.url
    assert httpx.get(url + "/health", timeout=10).status_code == 200  # liveness stays open
    assert refused_without_key(url) == [(path, 401, 401) for _, path, _ in GUARDED]
    slots = httpx.get(url + "/slots", headers=llama_server.headers, timeout=10)
    assert slots.status_code == 200 and isinstance(slots.json(), list)


def test_the_key_is_not_on_the_command_line_other_users_see(llama_server):
    pid = llama_server.process.pid
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    assert llama_server.api_key.encode() not in cmdline and b"--api-key" not in cmdline
    assert llama_server.api_key.encode() in Path(f"/proc/{pid}/environ").read_bytes()  # this user's alone
    assert len(llama_server.api_key) >= 40


@contextlib.contextmanager
def embedded_gateway(tmp_path: Path) -> Iterator[tuple[str, str, int]]:
    """`stella-server serve` with no upstream: the embedded default, which starts its own
    llama-server. Yields the gateway URL, that llama-server's URL and its pid."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "gateway.log"
    with log.open("w") as out, running(
            [str(BIN / "stella-server"), "serve", "--port", str(port), "--data-dir", str(tmp_path / "state")], url,
            timeout=120, grace=10, stderr=out):
        found = re.search(r"llama-server ready on (http://127\.0\.0\.1:(\d+))", log.read_text())
        assert found, log.read_text()[-2000:]
        llama_port = int(found.group(2))
        pids = [p.parent.name for p in Path("/proc").glob("[0-9]*/cmdline")
                if f"--port\0{llama_port}\0".encode() in _read(p)]
        assert len(pids) == 1
        yield url, found.group(1), int(pids[0])


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_the_embedded_default_keys_its_llama_server_and_the_gateway_sends_the_key(tmp_path):
    with embedded_gateway(tmp_path) as (url, llama_url, pid):

        async def ask():
            async with LinkClient(url, FAST) as client:  # the local device's credentials
                return await collect(client.chat(HI, max_tokens=8, temperature=0), timeout=60)

        reply = asyncio.run(ask())
        refused = refused_without_key(llama_url)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    assert isinstance(reply.end, Done) and reply.text.strip()
    assert refused == [(path, 401, 401) for _, path, _ in GUARDED]  # other local users get nothing
    assert b"--api-key" not in cmdline


def test_a_gateway_without_the_upstream_key_says_which_setting_to_give(llama_server):
    async def ask(gw: GatewayThread):
        async with LinkClient(gw.url, FAST, anonymous=True) as client:
            return await collect(client.chat(HI, max_tokens=4), timeout=60)

    with GatewayThread([llama_server.url], health_interval=0.5) as gw:
        keyless = asyncio.run(ask(gw))
    with GatewayThread([llama_server.url], health_interval=0.5, upstream_key=llama_server.api_key) as gw:
        keyed = asyncio.run(ask(gw))
    assert isinstance(keyless.end, Error) and keyless.end.code == "no_healthy_upstream"
    assert "STELLA_GATEWAY__UPSTREAM_KEY" in keyless.end.message and not keyless.tokens
    assert isinstance(keyed.end, Done) and keyed.tokens


def test_serve_sends_the_key_given_by_setting_to_a_remote_upstream(llama_server, tmp_path, subprocess_env):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**subprocess_env, "STELLA_GATEWAY__UPSTREAM_KEY": llama_server.api_key}
    with running([str(BIN / "stella-server"), "serve", "--port", str(port), "--upstream", llama_server.url,
                  "--data-dir", str(tmp_path / "state")], url, timeout=60, grace=10, env=env,
                 stderr=subprocess.DEVNULL):

        async def ask():
            async with LinkClient(url, FAST) as client:
                return await collect(client.chat(HI, max_tokens=6, temperature=0), timeout=60)

        reply = asyncio.run(ask())
    assert isinstance(reply.end, Done) and reply.tokens
