"""The embedded default needs no setup although every request is authenticated: a gateway on
loopback pairs its own device and its user's clients find the credentials by themselves, even
when the app starts before its gateway, and even with several such gateways at once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from remote_api.client import Done, LinkClient
from remote_api.credentials import local_credentials_path
from remote_api.seal import SealCodec
from remote_api.shared.processes import free_port, running
from tests.remote_api.harness import FAST, collect

from .conftest import HI, expected

BIN = Path(sys.executable).parent


@contextlib.contextmanager
def local_gateway(port: int, upstream: str, data: Path, wait: bool = True) -> Iterator[subprocess.Popen]:
    with running([str(BIN / "stella-server"), "serve", "--port", str(port), "--upstream", upstream, "--data-dir",
                  str(data)], f"http://127.0.0.1:{port}", timeout=60 if wait else None, grace=10,
                 stderr=subprocess.DEVNULL) as proc:
        yield proc


def devices(data: Path) -> list[str]:
    listed = subprocess.run([str(BIN / "stella-server"), "device", "list", "--json", "--data-dir", str(data)],
                            capture_output=True, text=True, timeout=30)
    return [d["name"] for d in json.loads(listed.stdout)]


def test_the_app_may_start_before_its_local_gateway(fake_upstream, tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    async def scenario():
        client = LinkClient(url, FAST)  # no credentials: none exist yet
        connecting = asyncio.create_task(client.connect(30))
        await asyncio.sleep(0.5)
        with local_gateway(port, fake_upstream.url, tmp_path / "state", wait=False):
            await connecting
            reply = await collect(client.chat(HI, max_tokens=6))
            sealed = isinstance(client.link._codec, SealCodec)  # noqa: SLF001
            await client.close()
        return reply, sealed

    reply, sealed = asyncio.run(scenario())
    assert reply.text == expected(6) and isinstance(reply.end, Done) and sealed
    assert not local_credentials_path(port).exists()  # the gateway took its credentials with it
    assert devices(tmp_path / "state") == []  # ... and its device


def test_two_local_gateways_on_one_data_dir_keep_their_own_devices(fake_upstream, tmp_path):
    data = tmp_path / "state"
    ports = [free_port(), free_port()]

    async def ask(port: int) -> str:
        async with LinkClient(f"http://127.0.0.1:{port}", FAST) as client:
            return (await collect(client.chat(HI, max_tokens=4))).text

    with local_gateway(ports[0], fake_upstream.url, data):
        with local_gateway(ports[1], fake_upstream.url, data):
            both = sorted(devices(data))
            replies = [asyncio.run(ask(port)) for port in ports]
        after = asyncio.run(ask(ports[0]))  # the first one still lets its clients in
    assert both == sorted(f"local-{port}" for port in ports)
    assert replies == [expected(4)] * 2 and after == expected(4)
