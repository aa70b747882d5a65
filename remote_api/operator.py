"""The operator's key to a running gateway's detailed health report.

``GET /health`` tells anyone only ``{"status": ...}``; the details (upstream URLs, sessions,
version) go to a paired device's access token, or to the operator: a request from a loopback
address carrying ``X-Stella-Operator: <secret>``. `stella-server serve` makes a new secret at
every start and leaves it in a file only its user can read, named after its port (removed when
it stops); `stella-server health` on the same machine, as the same user, sends it by itself.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from starlette.requests import HTTPConnection

OPERATOR_HEADER = "X-Stella-Operator"
LOOPBACK_PEERS = frozenset({"127.0.0.1", "::1"})


def operator_secret_path(port: int) -> Path:
    import platformdirs

    return Path(platformdirs.user_state_dir("stella")) / "gateways" / f"{port}.operator"


@contextlib.contextmanager
def operator_secret(port: int) -> Iterator[str]:
    """A new secret for the gateway on `port`, in its file (mode 0600) while the block runs."""
    secret = secrets.token_urlsafe(32)
    path = operator_secret_path(port)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a file left by a killed gateway: start afresh, with our permissions
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(secret)
    try:
        yield secret
    finally:
        path.unlink(missing_ok=True)


def read_operator_secret(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def is_operator(conn: HTTPConnection, secret: str) -> bool:
    """Whether `conn` comes from this machine and carries the operator's `secret`."""
    offered = conn.headers.get(OPERATOR_HEADER, "")
    return bool(secret and offered and conn.client is not None and conn.client.host in LOOPBACK_PEERS
                and hmac.compare_digest(offered.encode(), secret.encode()))
