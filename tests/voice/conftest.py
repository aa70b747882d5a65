"""Fixtures of the voice tests: a real gateway in front of the real llama-server, the loaded
engines (whisper, silero, openWakeWord, piper) shared by in-process runs, test speech."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from remote_api.llama_server import free_port
from sidecar.config import VoiceConfig
from sidecar.loop import Engines

from .speech import Piper

ROOT = Path(__file__).resolve().parents[2]


class Gateway:
    def __init__(self, url: str, proc: subprocess.Popen) -> None:
        self.url = url
        self.proc = proc


@pytest.fixture(scope="session")
def gateway(llama_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """`stella-server serve` relaying the session's llama-server, on a free port."""
    port = free_port()
    log = (tmp_path_factory.mktemp("gateway") / "gateway.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "remote_api.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--upstream", llama_server.url, "--log-level", "WARNING"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the gateway did not come up (see {log.name})")
            time.sleep(0.1)
        yield Gateway(url, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="session")
def engines() -> Engines:
    """Every model loaded once (hey_jarvis for the acoustic wake word)."""
    return Engines.load(VoiceConfig(wake_engine="openwakeword", wake_model="hey_jarvis"))


@pytest.fixture(scope="session")
def piper() -> Piper:
    return Piper()
