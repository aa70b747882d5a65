"""pywebview, imported without its own HTTP server.

pywebview imports `webview.http` (bottle, and wsgiref's server under it) as it is itself imported, for apps
whose pages are local files. Stella's page comes from the shell's own `AssetServer` over loopback, so pywebview
never starts that server: the shell puts a stand-in in its place before importing pywebview, and pays neither
its memory nor its import (measured on `import desktop.cli`: 1.4 MiB PSS and ~25 ms less). The stand-in refuses,
in words, if pywebview ever asks it to serve. pywebview is pinned (pyproject.toml);
tests/desktop/test_supervisor.py checks that the shell starts without bottle, and the window tests run the real
window through this import.
"""

from __future__ import annotations

import sys
import types
from typing import Any, NoReturn


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise RuntimeError("pywebview's own HTTP server is not part of Stella: the window's page comes from the "
                       "shell's AssetServer (desktop/assets.py), by an http:// URL")


class NoServer:
    """pywebview's default server class (a default argument's value); never made."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse()


def _stand_in() -> types.ModuleType:
    """What pywebview reads of `webview.http` as it runs (its annotations naming the module's types are never
    evaluated: both its modules postpone them)."""
    http = types.ModuleType("webview.http", "Stella's stand-in for pywebview's HTTP server (desktop/pywebview.py)")
    http.BottleServer = NoServer  # type: ignore[attr-defined]
    http.global_server = None  # type: ignore[attr-defined]
    http.start_server = _refuse  # type: ignore[attr-defined]
    http.start_global_server = _refuse  # type: ignore[attr-defined]
    return http


if "webview" not in sys.modules:
    sys.modules.setdefault("webview.http", _stand_in())

import webview  # noqa: E402 - after the stand-in, on purpose

__all__ = ["webview"]
