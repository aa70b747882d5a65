"""The config loader: one dataclass tree per process, filled from a TOML file and env overrides.

Generic, so the gateway (`remote_api.config.ServerConfig`) and the desktop side (`sidecar.config`)
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

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
