"""Fixtures of the link tests: a fault-injecting fake llama-server and gateways in front of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake_upstream import FakeUpstream
from .harness import GatewayThread


@pytest.fixture(scope="session")
def fake_llama() -> Iterator[FakeUpstream]:
    server = FakeUpstream().start()
    yield server
    server.stop()


@pytest.fixture
def fake_upstream(fake_llama: FakeUpstream) -> FakeUpstream:
    """The fake llama-server, back to its defaults (40 tokens, 5 ms apart, no fault)."""
    fake_llama.reset()
    return fake_llama


@pytest.fixture(scope="module")
def gateway(fake_llama: FakeUpstream) -> Iterator[GatewayThread]:
    """A real gateway (uvicorn, short link timings) relaying the fake llama-server's chat API."""
    with GatewayThread([fake_llama.url], "chat", stall_timeout=1.0, health_interval=0.5) as gw:
        yield gw
