"""Fixtures of the desktop tests: a real gateway on the real llama-server, Stella's engine under
the real supervisor (with a real Secret Service for its store), and headless Chromium on the UI.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from desktop.assets import PAGE
from desktop.supervisor import Backoff, Supervisor, engine_command
from remote_api.llama_server import LlamaServer
from remote_api.shared.processes import free_port
from sidecar.launch import Launch
from tests import services
from tests.desktop.gateway import Gateway, running_gateway

ROOT = Path(__file__).resolve().parents[2]
# Short link timings (engine and gateway read them from the environment) so faults play out in seconds.
FAST = {
    "STELLA_LINK__HEARTBEAT_INTERVAL": "0.5", "STELLA_LINK__HEARTBEAT_TIMEOUT": "1.0",
    "STELLA_LINK__RECONNECT_MIN": "0.2", "STELLA_LINK__RECONNECT_MAX": "1.5",
    "STELLA_LINK__UPGRADE_PROBE_INTERVAL": "1.0", "STELLA_LINK__LONGPOLL_HOLD": "2.0",
}


@pytest.fixture(scope="session")
def gateway(llama_server: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with running_gateway(llama_server.url, tmp_path_factory.mktemp("gateway"), FAST | llama_server.env) as gw:
        yield gw


@pytest.fixture
def engine_env(secret_service: services.SecretService) -> dict[str, str]:
    """The engine's environment: the test keyring, short link timings, replies without randomness,
    and the real home, where the local gateway leaves its device's credentials for the user's clients."""
    return {**os.environ, **secret_service.env, **FAST, "STELLA_CHAT__TEMPERATURE": "0", "HOME": os.environ["HOME"]}


@dataclass
class Engine:
    supervisor: Supervisor
    secret: str
    store: Path

    @property
    def port(self) -> int:
        port = self.supervisor.status.port
        assert port is not None, "the engine is not running"
        return port

    def page_url(self, assets: str) -> str:
        return f"{assets}/{PAGE}#port={self.port}&secret={self.secret}"


@contextlib.contextmanager
def run_engine(server: str, store: Path, env: dict[str, str], voice: str = "off") -> Iterator[Engine]:
    """The engine as the shell runs it (by default typed turns only: most tests need no sound card)."""
    secret = secrets.token_hex(32)
    supervisor = Supervisor(engine_command("--server", server, "--store", str(store), "--voice", voice),
                            Launch(secret, free_port()), env=env, backoff=Backoff(first=0.3))
    supervisor.start()
    try:
        status = supervisor.wait_running(30)
        assert status.state == "running", f"the engine did not start: {status}"
        yield Engine(supervisor, secret, store)
    finally:
        supervisor.stop()


@pytest.fixture
def engine(gateway: Gateway, engine_env: dict[str, str], tmp_path: Path) -> Iterator[Engine]:
    with run_engine(gateway.url, tmp_path / "stella.db", engine_env) as e:
        yield e


@pytest.fixture(scope="session")
def assets() -> Iterator[str]:
    """The source tree over HTTP, as the window's asset server serves it (same paths)."""
    with services.static_http(ROOT) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Per module: Playwright's sync API keeps an event loop on this thread while it is open."""
    with services.chromium() as context:
        yield context


@pytest.fixture
def page(browser):  # noqa: ANN001, ANN201 - Playwright's sync types
    page = browser.new_page()
    page.set_default_timeout(20_000)
    yield page
    page.close()
