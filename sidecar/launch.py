"""How the shell starts the engine and reaches its channel: the launch secret and port in the engine's
environment, the port on its first line of output, the WebSocket handshake's names; and the choices saved for
every start (`SavedServer`, `SavedModel`).

Both sides import this, and nothing heavier: the shell starts without the engine's code (its frames,
numpy, websockets) — 0.2 s sooner to the window, and less memory.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Self

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
class SavedChoice:
    """A choice every start of the app uses, kept in a small file beside the encrypted store, not in it: the
    launcher acts on it before the store can be opened (a passphrase is typed in the window, once it shows)."""

    path: Path
    FILE: ClassVar[str]
    KEY: ClassVar[str]
    WHAT: ClassVar[str]  # "server": "the saved server in … cannot be read"
    EXPECTED: ClassVar[str]  # "a server address (http://… or https://…)": "… holds no …"

    @classmethod
    def beside(cls, store: Path) -> Self:
        return cls(Path(store).with_name(cls.FILE))

    def valid(self, value: str) -> bool:
        return bool(value)

    def load(self) -> str | None:
        """The saved value, None when there is none; ValueError, in words for the user, for a damaged file."""
        try:
            saved = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ValueError(f"the saved {self.WHAT} in {self.path} cannot be read ({exc})") from None
        value = saved.get(self.KEY) if isinstance(saved, dict) else None
        if not isinstance(value, str) or not self.valid(value):
            raise ValueError(f"{self.path} holds no {self.EXPECTED}")
        return value

    def save(self, value: str | None) -> None:
        """Keep `value` for the next starts; None forgets it (the default again)."""
        if value is None:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".new")
        partial.write_text(json.dumps({self.KEY: value}) + "\n", encoding="utf-8")
        os.replace(partial, self.path)


class SavedServer(SavedChoice):
    """The gateway every start uses, chosen in Settings or by `stella run --server URL`; none saved: the
    embedded default."""

    FILE, KEY, WHAT = "server.json", "server_url", "server"
    EXPECTED = "server address (http://… or https://…)"

    def valid(self, value: str) -> bool:
        return value.startswith(("http://", "https://"))


class SavedModel(SavedChoice):
    """The model the embedded default runs, chosen in Settings (a catalogue LLM's name); none saved: the
    catalogue's default. The launcher hands it to the embedded gateway (`llama.model_name`)."""

    FILE, KEY, WHAT, EXPECTED = "embedded-model.json", "model_name", "model", "model name"

    def valid(self, value: str) -> bool:
        return bool(re.fullmatch(r"[\w.-]{1,64}", value))
