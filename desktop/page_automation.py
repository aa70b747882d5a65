"""JavaScript evaluated in the window's page on request, over a Unix socket: how tests and benchmarks drive
the real window whatever its web view (WebKitGTK has no Chrome DevTools protocol; Qt's is Chromium's only).

Off unless `[window] automation_socket` (`STELLA_WINDOW__AUTOMATION_SOCKET`) names a path. The socket is
made readable and writable by its owner only: whoever can connect can act as the page.

Protocol, one JSON object per line each way: ``{"js": "<expression or statements>"}`` is answered by
``{"value": <its JSON value>}`` or ``{"error": "<what the page threw>"}``. The value is the last expression's,
as pywebview's `evaluate_js` returns it (a Promise is not awaited: poll for its effect instead).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socketserver
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def answer(request: bytes, evaluate: Callable[[str], Any]) -> dict[str, Any]:
    """The reply to one request line (the sans-I/O half: tested without a window)."""
    try:
        js = json.loads(request)["js"]
        if not isinstance(js, str):
            raise TypeError("'js' must be a string")
    except (ValueError, KeyError, TypeError) as exc:
        return {"error": f'bad request ({exc}): send {{"js": "<JavaScript>"}} on one line'}
    try:
        return {"value": evaluate(js)}
    except Exception as exc:  # noqa: BLE001 - pywebview's JavascriptException and friends: the caller's to see
        return {"error": f"{type(exc).__name__}: {exc}"}


class PageAutomation:
    """Serve `evaluate` (the window's `evaluate_js`) on the Unix socket at `path` until closed."""

    def __init__(self, path: Path, evaluate: Callable[[str], Any]) -> None:
        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for line in self.rfile:
                    self.wfile.write(json.dumps(answer(line, evaluate)).encode() + b"\n")

        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old = os.umask(0o177)
        try:
            self._server = socketserver.ThreadingUnixStreamServer(str(path), Handler)
        finally:
            os.umask(old)
        self._server.daemon_threads = True
        self.path = path
        threading.Thread(target=self._server.serve_forever, name="page-automation", daemon=True).start()
        log.info("page automation on %s", path)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
