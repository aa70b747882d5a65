"""The web view choice (desktop/webview_backend.py) and the page automation protocol (desktop/page_automation.py),
without a window: what is chosen for each setting and what is missing, and what a request is answered."""

from __future__ import annotations

import json

import pytest

from desktop.page_automation import answer, script
from desktop.webview_backend import NoWebView, decide, gtk_problem


def usable() -> None:
    return None


def missing(why: str):  # noqa: ANN201 - a probe
    return lambda: why


def test_auto_takes_the_system_webkitgtk_and_never_looks_at_qt() -> None:
    def qt_must_not_be_probed() -> str:
        raise AssertionError("Qt probed although WebKitGTK is there")

    assert decide("auto", usable, qt_must_not_be_probed, "linux").gui == "gtk"


def test_auto_falls_back_to_qt_and_says_why_and_what_to_install() -> None:
    choice = decide("auto", missing("WebKitGTK 4.1 is not installed"), usable, "linux")
    assert choice.gui == "qt"
    assert "WebKitGTK 4.1 is not installed" in choice.reason and "gir1.2-webkit2-4.1" in choice.reason


def test_a_forced_web_view_is_used_or_refused_with_what_to_do() -> None:
    assert decide("qt", usable, usable, "linux").gui == "qt"
    assert decide("gtk", usable, usable, "linux").gui == "gtk"
    with pytest.raises(NoWebView, match="WebKitGTK was asked for.*apt install gir1.2-webkit2-4.1"):
        decide("gtk", missing("no typelib"), usable, "linux")
    with pytest.raises(NoWebView, match="Qt WebEngine was asked for.*PyQt6-WebEngine is not installed"):
        decide("qt", usable, missing("PyQt6-WebEngine is not installed"), "linux")
    with pytest.raises(NoWebView, match="WebKitGTK cannot be used.*Qt WebEngine neither"):
        decide("auto", missing("no gi"), missing("no PyQt6"), "linux")
    with pytest.raises(NoWebView, match="unknown web view 'chromium': choose one of auto, gtk, qt"):
        decide("chromium", usable, usable, "linux")


def test_macos_and_windows_use_their_own_web_view_whatever_the_setting() -> None:
    for platform in ("darwin", "win32"):
        assert decide("qt", missing("x"), missing("x"), platform).gui is None


def test_this_machine_has_the_system_web_view() -> None:
    assert gtk_problem() is None  # build/apt-packages.txt installs it, pyproject builds PyGObject


def test_automation_answers_with_the_value_or_the_error_of_the_expression() -> None:
    assert answer(json.dumps({"js": "1 + 1"}).encode(), lambda js: json.dumps({"value": 2})) == {"value": 2}
    assert answer(b'{"js": "x"}', lambda js: json.dumps({"error": "ReferenceError: x"})) == {
        "error": "ReferenceError: x"}
    assert answer(b'{"js": "undefined"}', lambda js: "{}") == {"value": None}
    assert "syntax error" in answer(b'{"js": "1 +"}', lambda js: None)["error"]
    assert "bad request" in answer(b"not json", lambda js: "{}")["error"]
    assert "bad request" in answer(b'{"js": 3}', lambda js: "{}")["error"]


def test_the_wrapped_expression_keeps_a_trailing_line_comment_harmless() -> None:
    wrapped = script("document.title // the title")
    assert wrapped.count("// the title\n)") == 1, wrapped
