"""Real services the tests run against, each started on private dirs/ports and always stopped.

PulseAudio (two null sinks: a "mic" the test plays into and a "speaker" the app plays into),
D-Bus + gnome-keyring (a real Secret Service), Xvfb, Redis and llama-server. Each class is a
context manager; `tests/conftest.py` exposes them as session fixtures.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from remote_api.llama_server import LlamaServer, default_binary
from remote_api.shared.models.provision import Models
from remote_api.shared.processes import free_port, stop_process


class ServiceError(RuntimeError):
    pass


def _need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ServiceError(f"{tool} is not installed; run `make setup` (apt package {package})")
    return path


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise ServiceError(f"{what} did not come up within {timeout:.0f} s")


class _Service:
    """A test service as a context manager: `_start` it; if starting fails half-way, what was
    already started is stopped before the error goes on (no daemon left behind)."""

    def _start(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        raise NotImplementedError


@dataclass
class PulseAudio(_Service):
    """A private PulseAudio daemon with null sinks `stella_mic` and `stella_speaker` (48 kHz mono).

    A null sink nobody records from renders in 2 s blocks, and only lowers its latency for a new
    recorder at the end of the block it is in: a program that opens the microphone hears its
    first sound 0-2 s later (measured: 1.8 s in a fresh process, every time), where a real
    microphone delivers in tens of ms. `mic_awake` keeps a recorder on it, so it behaves as one.
    """

    mic: str = "stella_mic"
    speaker: str = "stella_speaker"
    mic_awake: bool = False
    env: dict[str, str] = field(default_factory=dict)
    _proc: subprocess.Popen | None = None
    _awake: subprocess.Popen | None = None
    _tmp: str = ""

    def _start(self) -> None:
        exe = _need("pulseaudio", "pulseaudio")
        self._tmp = tempfile.mkdtemp(prefix="stella-pulse-")
        runtime = Path(self._tmp, "run")
        runtime.mkdir(mode=0o700)
        socket = runtime / "native"
        script = Path(self._tmp, "stella.pa")
        script.write_text(
            f"load-module module-native-protocol-unix socket={socket} auth-anonymous=1\n"
            f"load-module module-null-sink sink_name={self.mic} rate=48000 channels=1\n"
            f"load-module module-null-sink sink_name={self.speaker} rate=48000 channels=1\n"
            f"set-default-sink {self.speaker}\n"
            f"set-default-source {self.mic}.monitor\n"
        )
        self.env = {"PULSE_SERVER": f"unix:{socket}", "XDG_RUNTIME_DIR": str(runtime),
                    "HOME": self._tmp, "PULSE_RUNTIME_PATH": str(runtime)}
        self._proc = subprocess.Popen(
            [exe, "-n", "-F", str(script), "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit",
             "--log-target=stderr", "--log-level=error"],
            env={**os.environ, **self.env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _wait_for(lambda: socket.exists() and self._pactl("info").returncode == 0, 15, "PulseAudio")
        if self.mic_awake:
            self._awake = subprocess.Popen(
                ["parec", "--raw", "--latency-msec=30", "-d", f"{self.mic}.monitor"], env={**os.environ, **self.env},
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _pactl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["pactl", *args], env={**os.environ, **self.env}, capture_output=True,
                              text=True)

    def sinks(self) -> list[str]:
        out = self._pactl("list", "short", "sinks").stdout
        return [line.split("\t")[1] for line in out.splitlines() if "\t" in line]

    def __exit__(self, *exc: object) -> None:
        for proc in (self._awake, self._proc):
            if proc is not None:
                stop_process(proc, 5)
        shutil.rmtree(self._tmp, ignore_errors=True)


@dataclass
class SecretService(_Service):
    """A private D-Bus session bus with an unlocked gnome-keyring (the Secret Service API)."""

    env: dict[str, str] = field(default_factory=dict)
    _bus: subprocess.Popen | None = None
    _tmp: str = ""

    def _start(self) -> None:
        bus_exe = _need("dbus-daemon", "dbus")
        keyring_exe = _need("gnome-keyring-daemon", "gnome-keyring")
        self._tmp = tempfile.mkdtemp(prefix="stella-keyring-")
        runtime = Path(self._tmp, "run")
        runtime.mkdir(mode=0o700)
        base = {"XDG_RUNTIME_DIR": str(runtime), "XDG_DATA_HOME": f"{self._tmp}/data",
                "XDG_CONFIG_HOME": f"{self._tmp}/config", "HOME": self._tmp}
        self._bus = subprocess.Popen(
            [bus_exe, "--session", "--nofork", "--print-address=1", "--nopidfile"],
            env={**os.environ, **base}, stdout=subprocess.PIPE, text=True,
        )
        assert self._bus.stdout is not None
        address = self._bus.stdout.readline().strip()
        self._bus.stdout.close()
        if not address:
            raise ServiceError("dbus-daemon did not print its address")
        self.env = {**base, "DBUS_SESSION_BUS_ADDRESS": address}
        unlocked = subprocess.run(
            [keyring_exe, "--unlock", "--components=secrets", "--daemonize"],
            input="stella-test\n", env={**os.environ, **self.env}, capture_output=True, text=True,
            timeout=20,
        )
        if unlocked.returncode != 0:
            raise ServiceError(f"gnome-keyring-daemon failed: {unlocked.stderr.strip()}")
        for line in unlocked.stdout.splitlines():
            key, _, value = line.partition("=")
            if key and value:
                self.env[key] = value

    def __exit__(self, *exc: object) -> None:
        if self._bus is not None:
            stop_process(self._bus, 5)  # gnome-keyring-daemon exits with its session bus
        shutil.rmtree(self._tmp, ignore_errors=True)


@dataclass
class Xvfb(_Service):
    """A virtual X screen; `display` is e.g. ':99'.

    `-noreset`: by default an X server resets itself when its last client leaves, and a client
    connecting meanwhile is turned away. A desktop always has clients (its window manager, panel);
    this screen has none between tests, so the app's first connection could land in a reset (its
    GL probe, a client of its own, had just left) and find no display."""

    size: str = "1280x800x24"
    number: int | None = None  # this display number, else the first free one
    display: str = ""
    _proc: subprocess.Popen | None = None

    def _start(self) -> None:
        exe = _need("Xvfb", "xvfb")
        read, write = os.pipe()
        self._proc = subprocess.Popen(
            [exe, *([f":{self.number}"] if self.number is not None else []), "-displayfd", str(write),
             "-screen", "0", self.size, "-nolisten", "tcp", "-noreset", "+extension", "GLX"],
            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(write)
        with os.fdopen(read) as f:
            number = f.readline().strip()
        if not number:
            raise ServiceError("Xvfb did not report a display number")
        self.display = f":{number}"

    @property
    def env(self) -> dict[str, str]:
        return {"DISPLAY": self.display}

    @staticmethod
    def free_number() -> int:
        """A display number no X server holds here (no socket, no lock)."""
        return next(n for n in range(50, 1000)
                    if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists())

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            stop_process(self._proc, 5)


@dataclass
class Redis(_Service):
    """A throw-away redis-server on a free loopback port, nothing persisted (`password`: AUTH on)."""

    port: int = 0
    password: str = ""
    _proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://{f':{self.password}@' if self.password else ''}127.0.0.1:{self.port}/0"

    def cli(self, *args: str) -> list[str]:
        """A redis-cli command line for this server (the password in its environment)."""
        return [_need("redis-cli", "redis-tools"), "-p", str(self.port), *args]

    @property
    def cli_env(self) -> dict[str, str]:
        return {**os.environ, "REDISCLI_AUTH": self.password} if self.password else dict(os.environ)

    def _start(self) -> None:
        exe = _need("redis-server", "redis-server")
        self.port = free_port()
        auth = ["--requirepass", self.password] if self.password else []
        self._proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no", *auth],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _wait_for(lambda: subprocess.run(self.cli("ping"), capture_output=True, text=True,
                                         env=self.cli_env).stdout.strip() == "PONG", 15, "redis-server")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            stop_process(self._proc, 5)


def llama_server(log_dir: Path) -> LlamaServer:
    """The embedded default's llama-server, as the tests use it (2 slots, gemma template)."""
    return LlamaServer(default_binary(), Models().path("gemma3-270m"), parallel=2, ctx=2048,
                       log_path=log_dir / "llama-server.log")


CHROMIUM = "/usr/bin/chromium"
# The flags FACTS found necessary as root on a closed network (no sandbox, no background calls).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def static_http(root: Path) -> Iterator[str]:
    """Serve `root` over HTTP on 127.0.0.1 (ES modules and fetch() need http://); yield its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_QuietHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """Debian's headless Chromium driven by Playwright, with a fresh profile; yields the context.

    Playwright's sync API runs an event loop on this thread while open, so asyncio.run() fails
    until it closes: hold it for a module at most, never for the whole session.
    """
    _need(CHROMIUM, "chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="stella-chromium-") as profile:
        context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                       args=CHROMIUM_FLAGS)
        try:
            yield context
        finally:
            context.close()
