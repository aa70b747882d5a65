"""The desktop engine in this process: its real store (on a tmp dir, key in the real keyring),
settings, outfits and channel; the test is the window, a WebSocket client with the launch secret."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from sidecar.config import load_app_config
from sidecar.engine.core import App, Options
from sidecar.launch import AUTH_PREFIX, SUBPROTOCOL, Launch

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 10  # for an event the engine sends at once; generous for a loaded machine


def dead_server() -> str:
    """A gateway address nothing listens on: the link stays offline, the engine serves anyway."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@dataclass
class Window:
    """One page of the window: what it was greeted with, and what it hears after."""

    ws: ClientConnection
    greeting: list[dict[str, Any]] = field(default_factory=list)

    async def send(self, command: dict[str, Any] | str) -> None:
        await self.ws.send(command if isinstance(command, str) else json.dumps(command))

    async def next(self, kind: str) -> dict[str, Any]:
        """The next event of type `kind` (events of other types are passed over)."""
        while True:
            event = json.loads(await asyncio.wait_for(self.ws.recv(), WAIT_S))
            if event["type"] == kind:
                return event

    def greeted(self, kind: str) -> dict[str, Any]:
        return next(e for e in self.greeting if e["type"] == kind)


@dataclass
class Engine:
    app: App
    secret: str

    @contextlib.asynccontextmanager
    async def window(self, last: str = "state") -> AsyncIterator[Window]:
        """A page, once greeted: the greeting ends with `last` ("store" while the store waits for a passphrase)."""
        protocols = [SUBPROTOCOL, AUTH_PREFIX + self.secret]
        async with connect(f"ws://127.0.0.1:{self.app.port}/", subprotocols=protocols, open_timeout=WAIT_S) as ws:
            window = Window(ws)
            while not window.greeting or window.greeting[-1]["type"] != last:
                window.greeting.append(json.loads(await asyncio.wait_for(ws.recv(), WAIT_S)))
            yield window


@pytest.fixture
def keyring_env(secret_service, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:  # noqa: ANN001
    """The store's key goes to the session's real gnome-keyring over its private D-Bus."""
    for key, value in secret_service.env.items():
        monkeypatch.setenv(key, value)
    yield


@dataclass(frozen=True)
class Home:
    """What stays between two runs of the engine: its store, and the gateway it is configured for."""

    store: Path
    server_url: str


@pytest.fixture
def home(tmp_path: Path, keyring_env: None) -> Home:
    return Home(tmp_path / "data" / "stella.db", dead_server())


@contextlib.asynccontextmanager
async def running(home: Home, env: dict[str, str] | None = None, voice: str = "off") -> AsyncIterator[Engine]:
    """The engine, voice off (typed turns) unless `voice` is "auto", `env` its STELLA_SECTION__KEY settings;
    stopped as `python -m sidecar.engine` is on SIGTERM."""
    config = replace(load_app_config(None, env=env or {}), atlas_dir=str(ROOT / "atlas" / "default"),
                     server_url=home.server_url)
    secret = secrets.token_hex(32)
    app = App(Options(None, None, home.store, voice, None), Launch(secret), config)
    task = asyncio.create_task(app.run())
    try:
        await asyncio.wait_for(app.listening.wait(), WAIT_S)
        yield Engine(app, secret)
    finally:
        app.stop()
        await asyncio.wait_for(task, WAIT_S)
