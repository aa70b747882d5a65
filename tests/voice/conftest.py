"""Fixtures of the voice tests: a real gateway in front of the real llama-server, the loaded
engines (whisper, silero, openWakeWord, piper) shared by in-process runs, test speech."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_api.shared.models.provision import Models
from remote_api.shared.processes import free_port, running
from sidecar.config import VoiceConfig
from sidecar.voice.wake import WakeModel
from sidecar.voice_loop import LoadedModels

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
    url = f"http://127.0.0.1:{port}"
    with (tmp_path_factory.mktemp("gateway") / "gateway.log").open("wb") as log, running(
            [sys.executable, "-m", "remote_api.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--upstream", llama_server.url, "--log-level", "WARNING"], url, timeout=30, grace=10,
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **llama_server.env}) as proc:
        yield Gateway(url, proc)


@pytest.fixture(scope="session")
def engines() -> LoadedModels:
    """Every model the default settings use, loaded once (the hey_stella model beside whisper)."""
    return LoadedModels.load(VoiceConfig())


@pytest.fixture(scope="session")
def jarvis_engines(engines: LoadedModels) -> LoadedModels:
    """The same with the published hey_jarvis model as the acoustic wake word."""
    return dataclasses.replace(engines, wake=WakeModel(Models().path("wakeword"), "hey_jarvis"))


@pytest.fixture(scope="session")
def piper() -> Piper:
    return Piper()
