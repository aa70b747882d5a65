"""Fixtures of the link tests: a fault-injecting fake llama-server and gateways in front of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes import fixtures
from tests.fakes.llama_server import FakeLlamaServer

from .harness import GatewayThread

fake_llama, fake_upstream = fixtures.fake_llama, fixtures.fake_upstream  # shared with tests/remote_api/security


@pytest.fixture(scope="module")
def gateway(fake_llama: FakeLlamaServer) -> Iterator[GatewayThread]:
    """A real gateway (uvicorn, short link timings) relaying the fake llama-server's chat API."""
    with GatewayThread([fake_llama.url], "chat", stall_timeout=1.0, health_interval=0.5) as gw:
        yield gw
