"""How the shell starts the engine and reaches its channel: the launch secret and port in the engine's
environment, the port on its first line of output, the WebSocket handshake's names; and the server saved for
every start (`SavedServer`).

Both sides import this, and nothing heavier: the shell starts without the engine's code (its frames,
numpy, websockets) — 0.2 s sooner to the window, and less memory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

SUBPROTOCOL = "stella.v1"
AUTH_PREFIX = "auth."

# The launch contract between the shell and the engine, all in the engine's environment.
SECRET_ENV = "STELLA_CHANNEL_SECRET"
PORT_ENV = "STELLA_CHANNEL_PORT"  # the port to bind, so a restarted engine keeps the page's address
RESTARTS_ENV = "STELLA_ENGINE_RESTARTS"
LAST_EXIT_ENV = "STELLA_ENGINE_LAST_EXIT"
PORT_LINE = "channel_port="  # the engine's first line on stdout: channel_port=<port>


class ChannelError(RuntimeError):
    """The channel cannot start (no secret, port taken and no other free)."""


@dataclass(frozen=True)
class Launch:
    """What the shell tells the engine when it starts it (see the *_ENV names)."""

    secret: str
    port: int = 0
    restarts: int = 0
    last_exit: str = ""

    def env(self) -> dict[str, str]:
        return {SECRET_ENV: self.secret, PORT_ENV: str(self.port), RESTARTS_ENV: str(self.restarts),
                LAST_EXIT_ENV: self.last_exit}

    @classmethod
    def from_env(cls, environ: dict[str, str] | os._Environ[str] = os.environ) -> Launch:
        """Read and remove the secret from the environment, so no child process inherits it."""
        secret = environ.pop(SECRET_ENV, "")
        if len(secret) < 32:
            raise ChannelError(f"{SECRET_ENV} must hold the launch secret (at least 32 characters); the desktop "
                               "shell sets it when it starts the engine")
        try:
            port = int(environ.get(PORT_ENV) or 0)
            restarts = int(environ.get(RESTARTS_ENV) or 0)
        except ValueError as exc:
            raise ChannelError(f"bad launch setting from the shell: {exc}") from None
        return cls(secret, port, restarts, environ.get(LAST_EXIT_ENV, ""))


@dataclass(frozen=True)
class SavedServer:
    """The gateway every start of the app uses, chosen in Settings or by `stella run --server URL`; none saved:
    the embedded default. A small file beside the encrypted store, not in it: the launcher chooses the server
    before the store can be opened (a passphrase is typed in the window, once it shows)."""

    path: Path

    @classmethod
    def beside(cls, store: Path) -> SavedServer:
        return cls(Path(store).with_name("server.json"))

    def load(self) -> str | None:
        """The saved address, None when there is none; ValueError, in words for the user, for a damaged file."""
        try:
            saved = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ValueError(f"the saved server in {self.path} cannot be read ({exc})") from None
        url = saved.get("server_url") if isinstance(saved, dict) else None
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"{self.path} holds no server address (http://… or https://…)")
        return url

    def save(self, url: str | None) -> None:
        """Keep `url` for the next starts; None goes back to the embedded default."""
        if url is None:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".new")
        partial.write_text(json.dumps({"server_url": url}) + "\n", encoding="utf-8")
        os.replace(partial, self.path)
