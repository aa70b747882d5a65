"""The gateway's configuration (`ServerConfig`): its sections, read by the shared loader
(`remote_api.shared.config_loader`) from a TOML file and `STELLA_SECTION__KEY` overrides."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from remote_api.link_config import LinkConfig


@dataclass
class GatewaySection:
    """Where the gateway listens and which llama-servers it relays."""

    host: str = "127.0.0.1"
    port: int = 8765
    # Empty = the embedded default: start and supervise a local llama-server.
    upstreams: list[str] = field(default_factory=list)
    api: Literal["chat", "completion"] = "chat"
    # The --api-key of those llama-servers (sent as Authorization: Bearer); the embedded
    # default's own llama-server gets a new random one at every launch instead.
    upstream_key: str = field(default="", repr=False)
    # Web pages whose requests may reach /auth and /link (scheme://host[:port]); by default a
    # request with a browser's Origin or Sec-Fetch-Site is refused (`remote_api.origins`).
    allowed_origins: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for origin in self.allowed_origins:
            scheme, sep, rest = origin.partition("://")
            if scheme not in ("http", "https") or not sep or not rest or "/" in rest.rstrip("/"):
                raise ValueError(f"gateway setting 'allowed_origins' takes origins like https://app.example:8443 "
                                 f"(scheme, host, optional port, no path), got {origin!r}")


@dataclass
class LlamaSection:
    """The local llama-server started for the embedded default."""

    binary: Path | None = None  # None = the cached build from build/llama_server.sh
    # Which provisioned model of `stella models list` to run ("" = the embedded default); `model`
    # (a GGUF file) overrides it.
    model_name: str = ""
    model: Path | None = None
    host: str = "127.0.0.1"
    port: int = 0  # 0 = a free port
    # One thread: llama.cpp's threads wait for each other at every step, so when the voice loop, the
    # window or anything else takes a core, two threads stall each other (measured under load on 2
    # cores: 1.5-3.9 tok/s and first tokens of 1.2-3 s with 2 threads, 14-20 tok/s and 0.16-0.8 s with 1).
    threads: int = 1
    ctx: int = 2048
    parallel: int = 2
    # A llama.cpp built-in chat template (e.g. "vicuna", run with --no-jinja), or "" for the
    # catalogue's choice for `model_name` (the GGUF's own template for a `model` file).
    chat_template: str = ""
    # CPU priority (nice) of the local llama-server: it shares the machine with listening and
    # playback, which must never wait behind a generation (barge-in has 150 ms).
    nice: int = 5


@dataclass
class AuthSection:
    """Device authentication and sealing (`remote_api.auth`, `remote_api.seal`)."""

    token_ttl: float = 7200.0  # access tokens live this long (seconds)
    pairing_code_ttl: float = 600.0  # a pairing code must be used within this time
    max_failures: int = 10  # failed sign-ins from one address within `failure_window` s, then HTTP 429
    failure_window: float = 60.0
    recheck_interval: float = 5.0  # open sessions are checked against revocations this often
    seal: bool = True  # seal message bodies end to end; off only to measure what it costs

    def __post_init__(self) -> None:
        for name in ("token_ttl", "pairing_code_ttl", "failure_window", "recheck_interval"):
            if getattr(self, name) <= 0:
                raise ValueError(f"auth setting '{name}' must be positive, got {getattr(self, name)!r}")
        if self.max_failures < 1:
            raise ValueError(f"auth setting 'max_failures' must be at least 1, got {self.max_failures!r}")


@dataclass
class StateSection:
    """Where the gateway keeps devices, revocations and (with Redis) sessions."""

    data_dir: Path | None = None  # None = the platform's data dir (~/.local/share/stella/gateway)
    redis: str = field(default="", repr=False)  # redis://host:port/db: share everything with other replicas
    # With Redis: the state key sealing what the replicas keep there (`remote_api.state_key`),
    # "ID:KEY[,ID:KEY...]" (the first seals, all open), or a file holding it (mode 0600).
    key: str = field(default="", repr=False)
    key_file: Path | None = None

    def __post_init__(self) -> None:
        if self.redis and not self.redis.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("state setting 'redis' must be a redis:// URL, got "
                             f"{self.redis.partition('://')[0] or self.redis[:8]!r}...")


@dataclass
class TlsSection:
    """Serve https/wss with this certificate chain and key (PEM files)."""

    cert: Path | None = None
    key: Path | None = None

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise ValueError("TLS needs both a certificate (--tls-cert) and its key (--tls-key)")


@dataclass
class ServerConfig:
    """Everything `stella-server` needs; passed down, never read from globals."""

    gateway: GatewaySection = field(default_factory=GatewaySection)
    llama: LlamaSection = field(default_factory=LlamaSection)
    link: LinkConfig = field(default_factory=LinkConfig)
    auth: AuthSection = field(default_factory=AuthSection)
    state: StateSection = field(default_factory=StateSection)
    tls: TlsSection = field(default_factory=TlsSection)
    log_level: str = "INFO"
