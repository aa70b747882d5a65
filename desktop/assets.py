"""Serves the window's files to the webview over http://127.0.0.1 (read-only, three folders).

ES modules and fetch() need http://, and the page draws on files from three places in the
app: the UI (desktop/web), the atlas (atlas/default) and the GLSL (shaders/). Only those are
served, under the same paths as in the source tree, so tests can serve the tree itself. The
user's own atlas (atlas/user.py), when it is the one to show, is served as atlas/user/ and
the page told so in its URL. No secret ever travels here: the page gets the channel's port and
secret in the URL fragment, which browsers never send.
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
SERVED = ("desktop/web/", "atlas/default/")
SHADERS = ("shaders/character.vert", "shaders/character.frag")  # the GLSL, not the renderer's Python beside it
USER_ATLAS = "atlas/user/"
PAGE = "desktop/web/index.html"


class _AssetHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript",
                      ".vert": "text/plain", ".frag": "text/plain", ".svg": "image/svg+xml"}

    user_atlas: Path | None = None

    def send_head(self):  # noqa: ANN201 - the base class's signature
        path = unquote(urlsplit(self.path).path).lstrip("/")
        served = SERVED + ((USER_ATLAS,) if self.user_atlas else ())
        if not (path.startswith(served) or path in SHADERS) or ".." in path.split("/") or path.endswith("/"):
            self.send_error(404, "Not part of the Stella window")
            return None
        return super().send_head()

    def translate_path(self, path: str) -> str:
        name = unquote(urlsplit(path).path).lstrip("/")
        if self.user_atlas and name.startswith(USER_ATLAS) and "/" not in name[len(USER_ATLAS):]:
            return str(self.user_atlas / name[len(USER_ATLAS):])
        return super().translate_path(path)

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def log_message(self, *args: object) -> None:
        pass


class AssetServer:
    """`with AssetServer() as assets: assets.page_url(port, secret)`; `user_atlas`: the user's atlas folder
    to show instead of the built-in one."""

    def __init__(self, root: Path = ROOT, user_atlas: Path | None = None) -> None:
        handler = type("AssetHandler", (_AssetHandler,), {"user_atlas": user_atlas})
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                       functools.partial(handler, directory=str(root)))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._atlas = "&atlas=user" if user_atlas else ""

    def page_url(self, port: int, secret: str) -> str:
        return f"{self.url}/{PAGE}#port={port}&secret={secret}{self._atlas}"

    def __enter__(self) -> AssetServer:
        threading.Thread(target=self._server.serve_forever, name="assets", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
