"""The gateway as `stella-server serve` runs it: device auth, sealing and the configured state
backend (SQLite + memory, or Redis) plugged into `create_app`'s seams."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from remote_api.auth import DeviceAuth
from remote_api.config import ServerConfig
from remote_api.credentials import Credentials, write_local_credentials
from remote_api.gateway import create_app
from remote_api.origins import BrowserGuard
from remote_api.pairing import machine_fingerprint, new_device
from remote_api.protocol import BodyCodec, PlainCodec, Role
from remote_api.ratelimit import FailureLimiter
from remote_api.seal import SealCodec
from remote_api.state import GatewayState, LocalState, StateError, default_data_dir
from remote_api.tokens import TokenIssuer
from remote_api.upstream import Upstream


def open_state(cfg: ServerConfig) -> GatewayState:
    if cfg.state.redis:
        from remote_api.state_key import StateKeyError, StateKeys
        from remote_api.state_redis import RedisState

        try:
            keys = StateKeys.load(cfg.state.key, cfg.state.key_file)
        except StateKeyError as exc:
            raise StateError(str(exc)) from None
        return RedisState(cfg.state.redis, keys, session_ttl=cfg.link.session_ttl)
    return LocalState(cfg.state.data_dir or default_data_dir())


async def build_app(cfg: ServerConfig, upstreams: list[Upstream], state: GatewayState, *,
                    replica: str = "", health_interval: float = 5.0, operator_secret: str = "") -> Starlette:
    """`operator_secret` opens the detailed /health to loopback requests carrying it
    (`remote_api.operator`)."""
    issuer = TokenIssuer(await state.signing_key(), ttl=cfg.auth.token_ttl)
    auth = DeviceAuth(state, issuer, FailureLimiter(cfg.auth.max_failures, cfg.auth.failure_window))

    def codec(identity: Any) -> BodyCodec:
        return SealCodec(Role.SERVER, getattr(identity, "link_key", b"")) if cfg.auth.seal else PlainCodec()

    app = create_app(cfg.link, upstreams, authenticate=auth.authenticate, recheck=auth.recheck,
                     codec_factory=codec, sessions=state, replica=replica, routes=auth.routes(),
                     health_interval=health_interval, recheck_interval=cfg.auth.recheck_interval,
                     operator_secret=operator_secret)
    app.add_middleware(BrowserGuard, allowed_origins=cfg.gateway.allowed_origins)
    return app


@contextlib.asynccontextmanager
async def local_device(state: GatewayState, url: str, port: int) -> AsyncIterator[Path]:
    """A loopback gateway's own device while it runs (one per port, so several embedded
    gateways can share a data dir); its credentials wait where this user's clients look for
    them (`remote_api.credentials`). Yields that file; both are gone afterwards."""
    device, secret = new_device(f"local-{port}", machine_fingerprint(), time.time(), local=True)
    await state.add_device(device)
    path = write_local_credentials(Credentials(url, device.id, secret), port)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)
        await state.remove_device(device.id)
