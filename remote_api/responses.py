"""What the gateway's HTTP endpoints answer outside a session's stream: NDJSON bodies in and out,
and errors as one error envelope in an HTTP response (also for `remote_api.auth` and `origins`)."""

from __future__ import annotations

import math
import time

from starlette.requests import Request
from starlette.responses import Response

from remote_api.envelope import NDJSON, AuthError, Envelope, ProtocolError, Type, encode

STATE_DOWN = ("state_unavailable", "the gateway cannot reach its shared state (Redis)",
               "Try again in a moment; if it persists, the server's operator must check Redis.")


def ndjson(frames: list[bytes]) -> Response:
    return Response(b"".join(f + b"\n" for f in frames), 200, media_type=NDJSON)


def error_frame(code: str, message: str, action: str) -> bytes:
    """A link-level error envelope for a client that has no session (yet)."""
    body = {"code": code, "message": message, "action": action}
    return encode(Envelope(Type.ERROR, body=body, ts=int(time.time() * 1000)))


def error_response(status: int, code: str, message: str, action: str,
                   headers: dict[str, str] | None = None) -> Response:
    """An HTTP error whose body is one error envelope (what the client shows the user)."""
    return Response(error_frame(code, message, action) + b"\n", status, headers=headers, media_type=NDJSON)


def auth_error_response(exc: AuthError) -> Response:
    headers = {"Retry-After": str(math.ceil(exc.retry_after))} if exc.retry_after else None
    return error_response(exc.status, exc.code, exc.message, exc.action, headers)


async def read_ndjson(request: Request, max_frame: int) -> list[bytes]:
    """The request's envelopes, one per line, refusing bodies larger than 64 frames' worth."""
    limit = max_frame * 64
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ProtocolError("frame_too_large", f"a long-poll request over {limit} bytes",
                                "Send fewer or shorter messages at once.")
    return [line for line in bytes(body).split(b"\n") if line.strip()]
