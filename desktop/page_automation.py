"""JavaScript evaluated in the window's page on request, over a Unix socket: how tests and benchmarks drive
the real window whatever its web view (WebKitGTK has no Chrome DevTools protocol; Qt's is Chromium's only).

Off unless `[window] automation_socket` (`STELLA_WINDOW__AUTOMATION_SOCKET`) names a path. The socket is
made readable and writable by its owner only: whoever can connect can act as the page.

Protocol, one JSON object per line each way: ``{"js": "<a JavaScript expression>"}`` is answered by
``{"value": <its value, as JSON>}`` or ``{"error": "<what the page threw>"}``. An expression, not statements:
the page's Content-Security-Policy forbids `eval` (which pywebview's `evaluate_js` uses), so the expression is
run as it is (`run_js`) inside a wrapper that catches what it throws and returns JSON; use an arrow function
for several statements. A Promise is not awaited: poll for its effect instead.
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


def script(expression: str) -> str:
    """`expression` wrapped so that the page returns {"value": …} or {"error": …} as a JSON string."""
    return (f"(() => {{ try {{ return JSON.stringify({{value: ({expression}\n)}}); }} catch (e) {{ "
            "return JSON.stringify({error: String(e && e.stack ? `${e}\\n${e.stack}` : e)}); } })()")


def answer(request: bytes, run: Callable[[str], Any]) -> dict[str, Any]:
    """The reply to one request line, `run` running a script in the page and returning its result (the
    sans-I/O half: tested without a window)."""
    try:
        js = json.loads(request)["js"]
        if not isinstance(js, str):
            raise TypeError("'js' must be a string")
    except (ValueError, KeyError, TypeError) as exc:
        return {"error": f'bad request ({exc}): send {{"js": "<JavaScript expression>"}} on one line'}
    try:
        result = run(script(js))
    except Exception as exc:  # noqa: BLE001 - the web view's own errors: the caller's to see
        return {"error": f"{type(exc).__name__}: {exc}"}
    if not isinstance(result, str):
        return {"error": "the page did not run it (a syntax error, or no page loaded yet)"}
    reply = json.loads(result)
    return reply if "error" in reply else {"value": reply.get("value")}


class PageAutomation:
    """Serve `run` (the window's `run_js`) on the Unix socket at `path` until closed."""

    def __init__(self, path: Path, run: Callable[[str], Any]) -> None:
        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for line in self.rfile:
                    self.wfile.write(json.dumps(answer(line, run)).encode() + b"\n")

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
