"""The Stella window: pywebview showing the local UI, the engine supervised beside it. On Linux the web view
is the system's WebKitGTK, Qt WebEngine a fallback (desktop/webview_backend.py says which and why).

At launch, in this order, so the window shows while the engine is still starting:

1. the GL probe starts in a child process (desktop/gpu.py: software OpenGL or not, for the page's frame
   pacing and Qt WebEngine's GL flags);
2. the store is opened for the window geometry (the engine opens the same file for the rest;
   opening it here first means a first run creates the database and its key exactly once) —
   with the keyring's key only, asked by a forked child (desktop/keyring_child.py: the keyring's client stays
   out of the shell): in passphrase mode the engine asks the page for the passphrase, and the window does not
   keep its size and place;
3. the atlas to show is chosen: the user's own (`stella outfits`), else the built-in one;
4. the engine starts under the supervisor, with a fresh secret and a free loopback port;
5. the web view is chosen (WebKitGTK is loaded to see that it is there);
6. the window opens on the page from `AssetServer`, the port and secret in the URL fragment.

The page connects to the engine by itself and reconnects after an engine restart. Closing the
window stops the engine and waits for it, so nothing is left running.
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from atlas.user import choose_atlas
from desktop import gpu, webview_backend
from desktop.assets import AssetServer
from desktop.geometry import MIN_SIZE, GeometryKeeper
from desktop.keyring_child import KeyringKeyInChild
from desktop.page_automation import PageAutomation
from desktop.pywebview import webview
from desktop.supervisor import EngineStatus, Supervisor, engine_command
from remote_api.shared.config_loader import ConfigError
from remote_api.shared.processes import free_port
from sidecar.config import WindowConfig, load_app_config
from sidecar.launch import Launch
from sidecar.store import Store, StoreConfig, StoreError

log = logging.getLogger(__name__)

# icon.svg drawn at 128 px (build/icon.py): GTK loads a PNG itself, an SVG through librsvg (5.6 MiB more in the shell)
ICON = Path(__file__).resolve().parent / "web" / "icon.png"
BACKGROUND = "#f4f1fb"  # the page's own background, shown before it paints
DISPLAY_PATIENCE_S = 5.0  # how long a display that does not answer at once is asked again


@dataclass(frozen=True)
class WindowOptions:
    server: str | None = None
    config: Path | None = None
    store: Path = field(default_factory=lambda: StoreConfig().path)
    voice: str = "auto"
    title: str = "Stella"
    debug_timeline: bool = False  # show each turn's timeline in a panel of the window
    webview: str | None = None  # "auto" | "gtk" | "qt": overrides [window] backend
    language: str | None = None  # "en" | "zh": overrides voice.language and the saved setting

    def engine_args(self) -> list[str]:
        args = ["--store", str(self.store), "--voice", self.voice]
        if self.server:
            args += ["--server", self.server]
        if self.config:
            args += ["--config", str(self.config)]
        if self.language:
            args += ["--language", self.language]
        return args


def _open_store(path: Path) -> Store | None:
    try:
        return Store.open(path, KeyringKeyInChild(service=StoreConfig().keyring_service))
    except StoreError as exc:
        log.warning("the window will not remember its size and place: %s", exc)  # the page says why
        return None


def _settings(config: Path | None) -> tuple[str, WindowConfig]:
    """The atlas setting and the window's settings."""
    try:
        app = load_app_config(config)
    except (ConfigError, ValueError):
        return "", WindowConfig()  # the engine reads the same file and reports what is wrong with it
    return app.atlas_dir, app.window


# The page is a light UI: JavaScriptCore's JIT compilers would only add their code and profiling data to the
# web process (measured under Xvfb: 186 -> 180 MiB, and no more idle CPU).
WEBKIT_PAGE_ENV = {"JSC_useJIT": "0"}


def _webengine_env(flags: list[str]) -> None:
    """Set before Qt starts: QtWebEngine reads these once."""
    if flags:
        current = os.environ.get("QTWEBENGINE_CHROMIUM_FLAGS", "")
        os.environ["QTWEBENGINE_CHROMIUM_FLAGS"] = " ".join([current, *flags]).strip()
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.environ.setdefault("QTWEBENGINE_DISABLE_SANDBOX", "1")  # Chromium's sandbox refuses to run as root


def _gtk_ready(patience_s: float = DISPLAY_PATIENCE_S) -> None:
    """GTK with a display, and WM_CLASS "stella", "stella" as with Qt (what the desktop entry's StartupWMClass
    matches: GTK would name the window after the script, or capitalise the bundle's name).

    GTK connects to the display once, when it is loaded, and stays without one if the display did not answer
    then (a session still starting when the app is autostarted, an X server resetting as its last client
    left): ask again for a while, then say plainly what is wrong."""
    import gi

    gi.require_version("Gtk", "3.0")
    gi.require_version("Gdk", "3.0")
    from gi.repository import Gdk, GLib, Gtk

    deadline = time.monotonic() + patience_s
    tries = 0
    while Gdk.Display.get_default() is None:
        if time.monotonic() > deadline:
            raise webview_backend.NoWebView(
                f"the display {os.environ.get('DISPLAY', '')!r} did not answer for {patience_s:g} s: is the desktop "
                "session running? (Without DISPLAY, Stella starts its terminal chat instead.)")
        tries += 1
        time.sleep(0.1)
        if Gtk.init_check(sys.argv)[0]:
            import gi.overrides.Gtk

            gi.overrides.Gtk.initialized = True  # what PyGObject noted on loading GTK, which its windows check
    if tries:
        log.warning("the display %s answered after %d more tries", os.environ.get("DISPLAY", ""), tries)
    GLib.set_prgname("stella")
    Gdk.set_program_class("stella")


def run_window(options: WindowOptions) -> int:
    renderer = gpu.RendererProbe()  # first: it forks
    store = _open_store(options.store)
    keeper = GeometryKeeper.load(store)
    secret = secrets.token_hex(32)
    atlas_setting, settings = _settings(options.config)
    atlas = choose_atlas(atlas_setting)  # the engine makes the same choice and says why
    with AssetServer(user_atlas=atlas.folder if atlas.user else None) as assets:
        window: webview.Window | None = None
        shown_port = free_port()
        software_gl = False

        def page_url(port: int) -> str:
            return (assets.page_url(port, secret) + ("&debug=timeline" if options.debug_timeline else "")
                    + ("&gl=software" if software_gl else ""))

        def follow_engine(status: EngineStatus) -> None:
            nonlocal shown_port
            if status.state == "running" and status.port != shown_port and window is not None:
                shown_port = status.port  # the engine could not keep its port: point the page at the new one
                window.load_url(page_url(shown_port))

        supervisor = Supervisor(engine_command(*options.engine_args()), Launch(secret, shown_port),
                                on_status=follow_engine)
        supervisor.start()
        automation: PageAutomation | None = None
        try:
            gui = webview_backend.choose(options.webview or settings.backend).gui
            software_gl = gpu.is_software(renderer.result())
            if gui == "qt":
                _webengine_env(gpu.webengine_flags(renderer.result()))
            elif gui == "gtk":
                for name, value in {**WEBKIT_PAGE_ENV, **gpu.webkit_env(renderer.result())}.items():
                    os.environ.setdefault(name, value)  # read when WebKitGTK starts its web process
                _gtk_ready()
            geometry = keeper.geometry.on_screens([(s.x, s.y, s.width, s.height) for s in webview.screens])
            window = webview.create_window(
                options.title, page_url(shown_port), width=geometry.width, height=geometry.height,
                x=geometry.x, y=geometry.y, maximized=geometry.maximized, min_size=MIN_SIZE,
                background_color=BACKGROUND, text_select=True)
            window.events.moved += keeper.moved
            window.events.resized += keeper.resized
            window.events.maximized += keeper.maximized
            window.events.restored += keeper.restored

            def closing(window: webview.Window) -> None:
                """pywebview passes a parameter named `window`, on the GUI thread: the toolkit can be asked."""
                keeper.closing(webview_backend.measure(gui, window.native))

            window.events.closing += closing
            if settings.automation_socket:
                automation = PageAutomation(Path(settings.automation_socket), window.run_js)
            webview.start(gui=gui, icon=str(ICON), private_mode=True)
        finally:
            if automation is not None:
                automation.close()
            supervisor.stop()
            keeper.save()
            if store is not None:
                store.close()
    return 0
