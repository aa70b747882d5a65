"""Fixtures of the security tests: gateways with device auth and sealing (their state in a
temporary data dir, as `stella-server serve` keeps it), a fake llama-server behind them, and
helpers to pair devices the way a user does."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from remote_api.client import LinkClient
from remote_api.config import AuthSection, GatewaySection, ServerConfig, StateSection, TlsSection
from remote_api.credentials import Credentials, TokenSource, pair
from remote_api.gateway_setup import build_app
from remote_api.link_config import LinkConfig
from remote_api.pairing import issue_code
from remote_api.state import LocalState
from tests.fakes.llama_server import FakeLlamaServer, token_text
from tests.remote_api.harness import FAST, GatewayThread

HI = [{"role": "user", "content": "Say something."}]


def expected(n: int) -> str:
    return "".join(token_text(i) for i in range(n))


@dataclass
class SecureGateway:
    """A real gateway (uvicorn in a thread) as `serve` wires it, plus the operator's view of its
    state (a second connection to the same SQLite file, as `stella-server device` has)."""

    gateway: GatewayThread
    state: LocalState
    verify: ssl.SSLContext | bool = True
    _gateway_state: LocalState | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return self.gateway.url

    async def pair(self, name: str = "laptop", fingerprint: str = "fp-laptop") -> Credentials:
        code = await issue_code(self.state, name, time.time())
        return await pair(self.url, code, fingerprint, verify=self.verify)

    def client(self, credentials: Credentials | TokenSource, fingerprint: str = "fp-laptop",
               **options: Any) -> LinkClient:
        if isinstance(credentials, Credentials):
            credentials = TokenSource(credentials, fingerprint, verify=self.verify)
        return LinkClient(self.url, options.pop("config", FAST), credentials=credentials, **options)

    def sessions(self) -> int:
        return self.gateway.call(lambda g: len(g.registry))

    def stop(self) -> None:
        self.gateway.stop()
        for state in (self.state, self._gateway_state):
            if state is not None:
                asyncio.run(state.close())


def start_secure(data_dir: Path, upstream_url: str, *, tls: TlsSection | None = None,
                 verify: ssl.SSLContext | bool = True, gateway: GatewaySection | None = None,
                 link: LinkConfig = FAST, **auth: Any) -> SecureGateway:
    cfg = ServerConfig(gateway=gateway or GatewaySection(), link=link, auth=AuthSection(**auth),
                       state=StateSection(data_dir=data_dir))
    gateway_state = LocalState(data_dir)

    async def factory(upstreams):
        return await build_app(cfg, upstreams, gateway_state, health_interval=0.5)

    gw = GatewayThread([upstream_url], config=link, app_factory=factory, tls=tls).start()
    return SecureGateway(gw, LocalState(data_dir), verify, gateway_state)


@pytest.fixture
def secure_factory(tmp_path: Path, fake_upstream: FakeLlamaServer) -> Iterator[Callable[..., SecureGateway]]:
    """Start secure gateways (each on its own data dir) for one test; all stopped after it."""
    started: list[SecureGateway] = []

    def start(**options: Any) -> SecureGateway:
        gw = start_secure(tmp_path / f"gateway-{len(started)}", fake_upstream.url, **options)
        started.append(gw)
        return gw

    yield start
    for gw in started:
        gw.stop()


@pytest.fixture
def secure(secure_factory: Callable[..., SecureGateway]) -> SecureGateway:
    return secure_factory(recheck_interval=0.2)
