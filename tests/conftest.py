"""Session-wide real services; each starts on first use and is always torn down."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_api.llama_server import LlamaServer
from tests import services

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _process_logging_restored() -> Iterator[None]:
    """Undo a test's process-wide logging set-up (a CLI's `main()` run in-process).

    `setup_logging` points the root logger at the `sys.stderr` of that moment — pytest's capture,
    closed when the test ends — at INFO. Left in place, every later INFO line in the session
    failed to write and printed a whole traceback instead: thousands of them inside the event loop
    of the real-time voice tests (the likeliest reason they flaked in full runs, never alone).
    """
    root = logging.getLogger()
    handlers, level = set(root.handlers), root.level
    yield
    for handler in root.handlers[:]:
        if handler not in handlers and not type(handler).__module__.startswith("_pytest"):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A real llama-server with the bundled gemma3 270M GGUF on a free loopback port."""
    server = services.llama_server(tmp_path_factory.mktemp("llama"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pulseaudio() -> Iterator[services.PulseAudio]:
    with services.PulseAudio() as pa:
        yield pa


@pytest.fixture(scope="session")
def secret_service() -> Iterator[services.SecretService]:
    with services.SecretService() as ss:
        yield ss


@pytest.fixture(scope="session")
def xvfb() -> Iterator[services.Xvfb]:
    with services.Xvfb() as x:
        yield x


@pytest.fixture(scope="session")
def redis_server() -> Iterator[services.Redis]:
    with services.Redis() as r:
        yield r


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """The environment a child process of a test gets (the venv first on PATH)."""
    env = dict(os.environ)
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env
