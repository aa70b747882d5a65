"""`/health` tells a stranger whether the gateway is up, and nothing else: the upstream URLs,
the number of sessions and the version go to a paired device's token or to the operator (a
secret the running gateway leaves for its own user, accepted from loopback only)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
from starlette.requests import HTTPConnection

from remote_api.credentials import TokenSource, pair
from remote_api.operator import OPERATOR_HEADER, is_operator
from remote_api.shared.processes import free_port, running
from tests.fakes.llama_server import FakeLlamaServer

BIN = Path(sys.executable).parent
FP = "fp-laptop"


def test_a_stranger_learns_only_the_status_and_a_paired_device_the_details(secure, fake_upstream):
    async def scenario():
        creds = await secure.pair()
        return await TokenSource(creds, FP).headers(secure.url)

    token = asyncio.run(scenario())
    stranger = httpx.get(secure.url + "/health")
    forged = httpx.get(secure.url + "/health", headers={"Authorization": "Bearer forged", "X-Stella-Device": FP})
    device = httpx.get(secure.url + "/health", headers=token)
    operator_elsewhere = httpx.get(secure.url + "/health", headers={OPERATOR_HEADER: "guess"})
    assert stranger.status_code == 200 and stranger.json() == {"status": "ok"}
    assert fake_upstream.url not in stranger.text and "127.0.0.1" not in stranger.text
    assert forged.json() == {"status": "ok"} and operator_elsewhere.json() == {"status": "ok"}
    report = device.json()
    assert report["status"] == "ok" and report["upstreams"][0]["url"] == fake_upstream.url
    assert report["sessions"] == 0 and report["version"]


def test_the_operator_secret_counts_from_loopback_only():
    def conn(host: str, secret: str) -> HTTPConnection:
        return HTTPConnection({"type": "http", "client": (host, 40000),
                               "headers": [(OPERATOR_HEADER.lower().encode(), secret.encode())]})

    assert is_operator(conn("127.0.0.1", "s3cret"), "s3cret") and is_operator(conn("::1", "s3cret"), "s3cret")
    assert not is_operator(conn("192.0.2.7", "s3cret"), "s3cret")  # e.g. through a proxy on another host
    assert not is_operator(conn("127.0.0.1", "s3cre"), "s3cret")
    assert not is_operator(conn("127.0.0.1", ""), "")  # a gateway without a secret has no operator door


def test_stella_server_health_shows_the_details_to_the_operator_on_the_gateway_machine(
        fake_upstream: FakeLlamaServer, tmp_path: Path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    secret_file = tmp_path / "state" / "stella" / "gateways" / f"{port}.operator"
    with running([str(BIN / "stella-server"), "serve", "--port", str(port), "--upstream", fake_upstream.url,
                  "--data-dir", str(tmp_path / "gateway"), "--log-level", "WARNING"], url, timeout=60, grace=10,
                 env=env, stdin=subprocess.DEVNULL):
        mode = stat.S_IMODE(secret_file.stat().st_mode)
        public = httpx.get(url + "/health").json()
        operator = subprocess.run([str(BIN / "stella-server"), "health", "--server", url, "--json"],
                                  capture_output=True, text=True, timeout=30, env=env)
        human = subprocess.run([str(BIN / "stella-server"), "health", "--server", url],
                               capture_output=True, text=True, timeout=30, env=env)
        elsewhere = {**env, "XDG_STATE_HOME": str(tmp_path / "elsewhere")}  # no secret file there
        other_user = subprocess.run([str(BIN / "stella-server"), "health", "--server", url],
                                    capture_output=True, text=True, timeout=30, env=elsewhere)
        added = subprocess.run([str(BIN / "stella-server"), "device", "add", "phone", "--data-dir",
                                str(tmp_path / "gateway")], capture_output=True, text=True, timeout=30, env=env)
        creds = asyncio.run(pair(url, added.stdout.split("--pair ")[1].split()[0]))
        creds.save(tmp_path / "phone.json")
        device = subprocess.run([str(BIN / "stella-server"), "health", "--server", url, "--credentials",
                                 str(tmp_path / "phone.json")], capture_output=True, text=True, timeout=30,
                                env=elsewhere)
    assert public == {"status": "ok"}
    assert mode == 0o600
    report = json.loads(operator.stdout)
    assert operator.returncode == 0 and report["upstreams"][0]["url"] == fake_upstream.url
    assert human.returncode == 0 and fake_upstream.url in human.stdout and "session" in human.stdout
    assert other_user.returncode == 0 and fake_upstream.url not in other_user.stdout
    assert "operator" in other_user.stdout  # it says what would show the details
    assert device.returncode == 0 and fake_upstream.url in device.stdout  # a paired device's token, from anywhere
    assert not secret_file.exists()  # gone with the gateway
