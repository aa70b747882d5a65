"""The fake llama-server as pytest fixtures; a test package's conftest imports them by name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.llama_server import FakeLlamaServer


@pytest.fixture(scope="session")
def fake_llama() -> Iterator[FakeLlamaServer]:
    server = FakeLlamaServer().start()
    yield server
    server.stop()


@pytest.fixture
def fake_upstream(fake_llama: FakeLlamaServer) -> FakeLlamaServer:
    """The fake llama-server, back to its defaults (40 tokens, 5 ms apart, no fault)."""
    fake_llama.reset()
    return fake_llama
