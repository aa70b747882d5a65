"""Web pages may not talk to the gateway's sign-in and link endpoints.

Any page open in the user's browser can send requests to a gateway on 127.0.0.1 (a
``fetch(..., {mode: "no-cors"})`` needs no permission): junk pairings, poll requests, WebSocket
upgrades. Stella's own clients are not browsers and send neither ``Origin`` nor
``Sec-Fetch-Site``; a browser sends ``Origin`` on every POST and WebSocket upgrade and
``Sec-Fetch-Site`` on every request to a loopback or https address. So a request carrying
either (other than ``Sec-Fetch-Site: none``, a URL the user typed) is refused on ``/auth/*``
and ``/link/*`` with HTTP 403 - before authentication, so it never counts as a failed sign-in -
unless its ``Origin`` is listed in ``gateway.allowed_origins`` (a web client of your own).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from remote_api.responses import error_response

log = logging.getLogger(__name__)

GUARDED_PATHS = ("/auth/", "/link/")
SETTING = "gateway.allowed_origins (STELLA_GATEWAY__ALLOWED_ORIGINS)"


def normal_origin(origin: str) -> str:
    """An origin as browsers send it: scheme://host[:port], lower case, no trailing slash."""
    return origin.strip().rstrip("/").lower()


def browser_refusal(headers: Mapping[str, str], allowed: frozenset[str]) -> str | None:
    """Why a request looks like a web page's and is refused (None: it may go on)."""
    origin = headers.get("origin")
    if origin is not None:
        if normal_origin(origin) in allowed:
            return None
        return (f"the gateway does not serve web pages (this request comes from the page at {origin!r}); "
                f"to let a web client of your own in, list its origin in {SETTING}")
    site = headers.get("sec-fetch-site", "").strip().lower()
    if site and site != "none":
        return (f"the gateway does not serve web pages (a browser sent this request, Sec-Fetch-Site: {site}, "
                f"without an Origin that {SETTING} could allow)")
    return None


class BrowserGuard:
    """ASGI middleware applying `browser_refusal` to HTTP requests and WebSocket upgrades."""

    def __init__(self, app: ASGIApp, allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = frozenset(normal_origin(o) for o in allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope["path"].startswith(GUARDED_PATHS):
            refusal = browser_refusal(Headers(scope=scope), self.allowed)
            if refusal is not None:
                log.debug("refused a browser request to %s: %s", scope["path"], refusal)
                response = error_response(403, "browser_refused", refusal,
                                          f"Use the Stella app or stella-chat, or add the origin to {SETTING}.")
                if scope["type"] == "http":
                    await response(scope, receive, send)
                elif "websocket.http.response" in scope.get("extensions", {}):
                    await WebSocket(scope, receive, send).send_denial_response(response)
                else:  # the server cannot send a body with the refusal: a bare 403
                    await send({"type": "websocket.close", "code": 1008, "reason": ""})
                return
        await self.app(scope, receive, send)
