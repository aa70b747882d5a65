"""Configuration: one dataclass tree per process, filled from a TOML file and env overrides.

The loader is generic so the gateway (`ServerConfig`) and the desktop side (`sidecar.config`)
share one set of rules: TOML keys mirror dataclass fields, `PREFIX_SECTION__FIELD=value`
environment variables override them, and anything unknown or mistyped is a `ConfigError`
naming the setting and the file, never silently ignored.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from remote_api.link_config import LinkConfig

T = TypeVar("T")
_NAMES = {int: "whole number", float: "number", str: "string", bool: "true or false"}


class ConfigError(ValueError):
    """A config file or override is wrong; the message says which setting and how to fix it."""


def load_config(
    cls: type[T], path: Path | None = None, env: Mapping[str, str] | None = None, prefix: str = "STELLA",
    others: Collection[str] = (),
) -> T:
    """Build `cls` from defaults, then the TOML file at `path` (if any), then env overrides.

    `others` names sections that belong to another program reading the same environment (the
    app and its embedded gateway share `STELLA_`): their variables are left to it, not errors."""
    data: dict[str, Any] = {}
    where = "defaults"
    if path is not None:
        where = str(path)
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist; create it or drop --config") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {path} is not valid TOML ({exc}); fix the syntax") from None
    env = os.environ if env is None else env
    prefix_ = prefix + "_"
    for key, raw in env.items():
        if not key.startswith(prefix_) or "__" not in key:
            continue
        parts = [p.lower() for p in key[len(prefix_):].split("__")]
        if parts[0] in others:
            continue
        node = data
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = _EnvValue(raw, key)
    return _build(cls, data, where, ())


@dataclass(frozen=True)
class _EnvValue:
    """A raw string from the environment, parsed by the target field's type."""

    raw: str
    name: str


def sections(cls: type) -> frozenset[str]:
    """The names of `cls`'s sections (its dataclass fields), as its environment variables spell them."""
    return frozenset(f.name for f in dataclasses.fields(cls)
                     if f.default_factory is not dataclasses.MISSING and dataclasses.is_dataclass(f.default_factory()))


def _build(cls: type[T], data: Mapping[str, Any], where: str, trail: tuple[str, ...]) -> T:
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        dotted = ".".join((*trail, key))
        if key not in known:
            raise ConfigError(
                f"unknown setting '{dotted}' in {where}; known settings here: {', '.join(sorted(known))}"
            )
        kwargs[key] = _coerce(hints[key], value, where, (*trail, key))
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        section = ".".join(trail) or "top level"
        raise ConfigError(f"{exc} (section '{section}' of {where} or its environment overrides)") from None


def _coerce(hint: Any, value: Any, where: str, trail: tuple[str, ...]) -> Any:
    dotted = ".".join(trail)
    source = where
    if isinstance(value, _EnvValue):
        source = f"environment variable {value.name}"
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, Mapping):
            raise ConfigError(f"setting '{dotted}' in {source} must be a table of settings")
        return _build(hint, value, where, trail)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if isinstance(value, _EnvValue) and value.raw == "":
            return None
        return _coerce(inner[0], value, where, trail)
    try:
        if isinstance(value, _EnvValue):
            return _parse_env(hint, value.raw)
        return _check(hint, value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"setting '{dotted}' in {source}: {exc}") from None


def _parse_env(hint: Any, raw: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = typing.get_args(hint)
        return [_parse_env(item, part.strip()) for part in raw.split(",") if part.strip()]
    if hint is bool:
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"expected true/false, got {raw!r}")
    if hint in (int, float):
        try:
            return hint(raw)
        except ValueError:
            raise ValueError(f"expected a {_NAMES[hint]}, got {raw!r}") from None
    return _check(hint, raw)


def _check(hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
        return value
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise TypeError(f"expected a list, got {value!r}")
        return [_check(item, v) for v in value]
    if hint is Path:
        if not isinstance(value, str):
            raise TypeError(f"expected a path string, got {value!r}")
        return Path(value).expanduser()
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (int, float, str, bool) and (not isinstance(value, hint) or
                                            (hint is int and isinstance(value, bool))):
        raise TypeError(f"expected a {_NAMES[hint]}, got {value!r}")
    return value


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
