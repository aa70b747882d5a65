"""`stella run`: the window (or, with no display, the terminal chat) on a gateway — the one given with
`--server` or saved in Settings (`SavedServer`: a server given once is the one every later start uses), else
the embedded default: a local gateway that starts its own llama-server with the bundled model, all stopped
together.

The gateway runs as a child process tied to ours (it dies with us, and takes llama-server with
it), so closing the app never leaves an orphan behind. The window does not wait for it: it
shows at once and its link indicator says "Connecting…" until the gateway answers.

The terminal chat (desktop/terminal.py) is the window's conversation, typed. Its stdout is the
conversation only: every log line (ours, the gateway's, the engine's) goes to the log file,
`log_path()`, unless `verbose` asks for them on stderr.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import urlsplit

import platformdirs

from desktop.shell import WindowOptions, run_window
from desktop.webview_backend import NoWebView
from remote_api.shared.config_loader import ConfigError
from remote_api.shared.logs import setup_logging
from remote_api.shared.processes import NotHealthy, die_with_parent, free_port, running, wait_healthy
from sidecar.config import load_app_config, server_environment
from sidecar.launch import SavedModel, SavedServer
from sidecar.outfit_catalogue import load_catalogue

if TYPE_CHECKING:  # the terminal chat is imported when it runs: the window starts sooner without it
    from desktop.terminal import TerminalOptions

log = logging.getLogger(__name__)


class LaunchError(RuntimeError):
    """The embedded default could not start; the message says why and what to do."""


def has_display(env: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")) or sys.platform in ("darwin", "win32")


def log_path() -> Path:
    """The app's log file (~/.local/state/stella/log/stella.log on Linux)."""
    return platformdirs.user_log_path("stella") / "stella.log"


@contextlib.contextmanager
def embedded_gateway(config: Path | None = None, timeout: float = 120.0, wait: bool = True,
                     output: IO[str] | None = None, model: str | None = None) -> Iterator[str]:
    """Start `stella-server serve` on a free loopback port; yield its URL (once healthy if `wait`).

    Its output (log lines) goes to `output`, or to our own stdout/stderr when None. `model`: the catalogue LLM
    it runs (chosen in Settings, `SavedModel`); None: its config's, else the catalogue's default."""
    port = free_port()
    cmd = [sys.executable, "-m", "remote_api.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    if config is not None:
        cmd += ["--config", str(config)]
    url = f"http://127.0.0.1:{port}"
    written = output.tell() if output is not None else 0  # where its lines start in the log file
    with running(cmd, url, timeout=None, grace=15, stdin=subprocess.DEVNULL, stdout=output, stderr=output,
                 env={**server_environment(os.environ), **({"STELLA_LLAMA__MODEL_NAME": model} if model else {})},
                 preexec_fn=die_with_parent) as proc:
        if wait:
            _wait_healthy(proc, url, timeout, output, written)
        yield url


def _wait_healthy(proc: subprocess.Popen, url: str, timeout: float, output: IO[str] | None, written: int) -> None:
    elsewhere = "Or use a Stella server elsewhere: `stella run --server http://HOST:8765`."
    where = f"; see {output.name}" if output is not None else ""
    try:
        wait_healthy(url, proc, timeout)
    except NotHealthy as exc:
        if exc.returncode is None:
            raise LaunchError(f"the embedded default's server did not become ready within {timeout:.0f} s"
                              f"{where}. {elsewhere}") from None
        said = _last_words(output, written) if output is not None else ""
        raise LaunchError(f"the embedded default could not start{said}{where}. {elsewhere}") from None


def _last_words(output: IO[str], written: int) -> str:
    """The gateway's own error line in the log file (`stella-server: …`: what was wrong and what to do)."""
    try:
        with open(output.name, encoding="utf-8", errors="replace") as log_file:
            log_file.seek(written)
            said = [line.removeprefix("stella-server: ").strip() for line in log_file
                    if line.startswith("stella-server: ")]
    except (OSError, AttributeError):
        return ""
    return f": {said[-1]}" if said else ""


def _saved_model(store: Path) -> str | None:
    """The model chosen in Settings for the embedded default (None: the default one; a damaged file is said)."""
    try:
        return SavedModel.beside(store).load()
    except ValueError as exc:
        print(f"stella: {exc}; the embedded default runs its default model (choose another in Settings)",
              file=sys.stderr, flush=True)
        return None


def choose_server(given: str | None, saved: SavedServer) -> str | None:
    """The gateway this start uses: `given` (kept for the next starts), else the saved one; None: the embedded
    default. ValueError, in words for the user, for a given address that is not one."""
    if given is None:
        try:
            return saved.load()
        except ValueError as exc:
            print(f"stella: {exc}; starting the embedded default instead (choose your server again in Settings, or "
                  "start with `stella run --server URL`)", file=sys.stderr, flush=True)
            return None
    address = urlsplit(given)
    if address.scheme not in ("http", "https") or not address.hostname:
        raise ValueError(f"--server takes the address of a Stella server (the gateway), for example "
                         f"http://gpu-box:8765, not {given!r}")
    try:
        saved.save(given)
    except OSError as exc:
        print(f"stella: {given} is used this time but not kept for the next starts ({exc})", file=sys.stderr)
    return given


def run(server: str | None, config: Path | None, window: WindowOptions | None = None, *,
        verbose: bool = False, log_level: str = "INFO") -> int:
    """Start the app on `server`, else on the saved server, else on the embedded default.

    The window opens when there is a display; `window` carries its options (store, voice…),
    which the terminal chat's engine takes too.
    """
    window = window or WindowOptions()
    show_window = has_display()
    try:
        terminal = None if show_window else _terminal_options(window)
        server = choose_server(server, SavedServer.beside(window.store))
    except (ConfigError, ValueError) as exc:
        print(f"stella: {exc}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        logs: IO[str] | None = None
        if not show_window:
            print("No display found (DISPLAY / WAYLAND_DISPLAY are unset): starting the terminal chat instead of "
                  "the desktop window.", file=sys.stderr, flush=True)
            if not verbose:
                logs = stack.enter_context(_log_file(log_level))
                print(f"Logs go to {log_path()} (--verbose shows them here).", file=sys.stderr, flush=True)
        if server is None:
            print("Starting the embedded default: local llama-server with the bundled model + gateway…",
                  file=sys.stderr, flush=True)
            try:
                server = stack.enter_context(embedded_gateway(config, wait=not show_window, output=logs,
                                                              model=_saved_model(window.store)))
            except LaunchError as exc:
                print(f"stella: {exc}", file=sys.stderr)
                return 1
        else:
            print(f"Using the Stella server {server} (Settings → Use the embedded default goes back to the server on "
                  "this computer).", file=sys.stderr, flush=True)
        if terminal is None:
            try:
                return run_window(replace(window, server=server))
            except NoWebView as exc:
                print(f"stella: {exc}", file=sys.stderr)
                return 2
        from desktop.terminal import chat

        return chat(replace(terminal, server=server), logs)


@contextlib.contextmanager
def _log_file(level: str) -> Iterator[IO[str]]:
    """Our log lines, and our children's output, into the log file: the terminal is the chat's."""
    path = log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    setup_logging(level, file=path, stderr=False)
    with open(path, "a", encoding="utf-8", buffering=1) as stream:
        yield stream


def _terminal_options(window: WindowOptions) -> TerminalOptions:
    """The engine's arguments, and the persona's name and outfits for what the terminal prints
    (read first, so a bad settings file is said before anything starts)."""
    from desktop.terminal import TerminalOptions

    config = load_app_config(window.config)
    outfits = {o.id: o.name for o in load_catalogue(config.atlas_dir)}
    return TerminalOptions(window.server or "", tuple(window.engine_args()), config.persona.name, outfits)
