"""Which web view the window runs on: on Linux the system's WebKitGTK, Qt WebEngine only as a fallback.

A Tauri-style app: the operating system's web view, not a Chromium of its own. On Linux that is WebKitGTK
(Debian/Ubuntu `gir1.2-webkit2-4.1`) through PyGObject; Qt WebEngine (pywebview[qt], ~300 MB and a few
hundred MiB more per run) is used only when WebKitGTK is missing, or when `[window] backend` /
`STELLA_WINDOW__BACKEND` / `stella run --webview` asks for it. macOS and Windows use their own web view
(WKWebView, WebView2): pywebview picks it.

`decide` is the choice alone, on what the probes found (each probe returns None when its web view is usable,
else why not), so it is tested without either toolkit; `choose` runs the probes it needs.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

SETTINGS = ("auto", "gtk", "qt")
GTK_FIX = "install the system's web view (Debian/Ubuntu: sudo apt install gir1.2-webkit2-4.1)"
QT_FIX = "Qt WebEngine is not part of this install: use the system's WebKitGTK (`--webview gtk`)"


class NoWebView(RuntimeError):
    """No usable web view for the setting; the message says what is missing and what to do."""


@dataclass(frozen=True)
class Choice:
    gui: str | None  # pywebview's GUI name ("gtk", "qt"), None: the platform's own web view
    reason: str  # for the log: which one and why

    @property
    def label(self) -> str:
        return {"gtk": "WebKitGTK", "qt": "Qt WebEngine"}.get(self.gui or "", "the platform's web view")


def decide(setting: str, gtk_problem: Callable[[], str | None], qt_problem: Callable[[], str | None],
           platform: str = sys.platform) -> Choice:
    """The web view for `setting` ("auto", "gtk", "qt"); raises NoWebView when it cannot be had."""
    if setting not in SETTINGS:
        raise NoWebView(f"unknown web view {setting!r}: choose one of {', '.join(SETTINGS)}")
    if not platform.startswith("linux"):
        return Choice(None, f"{platform} has its own web view (the setting {setting!r} is for Linux)")
    if setting == "qt":
        if problem := qt_problem():
            raise NoWebView(f"Qt WebEngine was asked for but cannot be used ({problem}); {QT_FIX}")
        return Choice("qt", "Qt WebEngine, as the setting asks")
    gtk = gtk_problem()
    if gtk is None:
        return Choice("gtk", "the system's WebKitGTK" + (", as the setting asks" if setting == "gtk" else ""))
    if setting == "gtk":
        raise NoWebView(f"WebKitGTK was asked for but cannot be used ({gtk}); {GTK_FIX}")
    if qt := qt_problem():
        raise NoWebView(f"no web view for the window: WebKitGTK cannot be used ({gtk}) and Qt WebEngine neither "
                        f"({qt}); {GTK_FIX}")
    return Choice("qt", f"the system's WebKitGTK cannot be used ({gtk}), so the fallback Qt WebEngine; to use the "
                        f"lighter system web view, {GTK_FIX}")


def gtk_problem() -> str | None:
    """None when PyGObject and WebKitGTK 4.1 load, else what is missing.

    SQLCipher is loaded first, on purpose: WebKitGTK brings the system's plain libsqlite3 into the process's
    global symbol scope, and a SQLCipher extension loaded after it binds its sqlite3_* calls to that library —
    the store would be written unencrypted (measured: the bundle's self-test did exactly that)."""
    import sqlcipher3  # noqa: F401 - see above

    try:
        import gi

        gi.require_version("Gtk", "3.0")
        gi.require_version("WebKit2", "4.1")
        from gi.repository import WebKit2  # noqa: F401 - loading the library is the check
    except ImportError as exc:
        return f"PyGObject does not load: {exc}"
    except ValueError as exc:  # gi: "Namespace WebKit2 not available for version 4.1"
        return f"WebKitGTK 4.1 is not installed: {exc}"
    return None


def qt_problem() -> str | None:
    """None when PyQt6's QtWebEngine is installed, else what is missing."""
    try:
        found = importlib.util.find_spec("PyQt6.QtWebEngineWidgets") is not None
    except ImportError as exc:
        return f"PyQt6 does not load: {exc}"
    return None if found else "PyQt6-WebEngine is not installed"


def choose(setting: str) -> Choice:
    choice = decide(setting, gtk_problem, qt_problem)
    (log.warning if choice.gui == "qt" and setting == "auto" else log.info)(
        "web view: %s — %s", choice.label, choice.reason)
    return choice


def measure(gui: str | None, native: Any) -> tuple[int, int, int, int] | None:
    """The window's (x, y, width, height) from the toolkit itself, on its GUI thread; None where
    this backend is not known here (the platform's own web view) or the window is gone."""
    try:
        if gui == "gtk":
            return (*native.get_position(), *native.get_size())
        if gui == "qt":
            return native.x(), native.y(), native.width(), native.height()
    except (AttributeError, RuntimeError) as exc:
        log.warning("cannot measure the window at close: %s", exc)
    return None
