"""What the window's local web server hands out, and where the window comes back."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from desktop.assets import AssetServer
from desktop.geometry import MIN_SIZE, Geometry, GeometryKeeper


@pytest.fixture(scope="module")
def window_server() -> Iterator[str]:
    with AssetServer() as server:
        yield server.url


@pytest.mark.parametrize("path, kind", [("desktop/web/index.html", "text/html"),
                                        ("desktop/web/app.js", "text/javascript"),
                                        ("desktop/web/strings.js", "text/javascript"),
                                        ("atlas/default/manifest.json", "application/json"),
                                        ("shaders/character.frag", "text/plain")])
def test_the_window_gets_its_page_atlas_and_shaders(window_server: str, path: str, kind: str) -> None:
    answer = httpx.get(f"{window_server}/{path}")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith(kind)
    assert answer.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("path", ["README.md", "sidecar/config.py", "desktop/web/", "desktop/web/../../README.md",
                                  "desktop/web/%2e%2e/%2e%2e/pyproject.toml", "atlas/",
                                  "shaders/renderer.py", "shaders/"])
def test_nothing_else_of_the_app_is_served(window_server: str, path: str) -> None:
    assert httpx.get(f"{window_server}/{path}").status_code == 404


def test_a_saved_geometry_comes_back_and_a_bad_one_gives_the_default() -> None:
    saved = {"width": 900, "height": 640, "x": 30, "y": 20, "maximized": False}
    assert Geometry.from_setting(saved) == Geometry(900, 640, 30, 20)
    assert Geometry.from_setting({"width": 100, "height": 50}) == Geometry(*MIN_SIZE)
    for bad in ("big", {"width": "900"}, {"depth": 3}, None):
        assert Geometry.from_setting(bad) == Geometry()


def test_a_window_left_on_an_unplugged_monitor_comes_back_on_one_that_is_there() -> None:
    laptop = (0, 0, 1366, 768)
    on_external = Geometry(1200, 800, 2000, 100)
    assert on_external.on_screens([laptop]) == Geometry(1200, 768, None, None)
    assert Geometry(900, 640, 30, 20).on_screens([laptop, (1366, 0, 1920, 1080)]) == Geometry(900, 640, 30, 20)


def test_at_close_the_window_s_own_measure_wins_over_a_resize_it_never_reported() -> None:
    """GTK reports a resize at its next layout: a window closed just after one never said so."""
    keeper = GeometryKeeper(None, Geometry(), delay=60)
    keeper.moved(60, 40)
    keeper.closing((60, 40, 980, 660))
    assert keeper.geometry == Geometry(980, 660, 60, 40)

    keeper.closing(None)  # a platform that cannot be asked: what the events said stays
    assert keeper.geometry == Geometry(980, 660, 60, 40)

    keeper.maximized()  # a maximized window is not measured: its restored size is what to keep
    keeper.closing((0, 0, 1920, 1080))
    assert keeper.geometry == Geometry(980, 660, 60, 40, maximized=True)


def test_the_window_icon_is_the_svg_drawn(tmp_path):
    """The shell gives GTK a PNG (an SVG would load librsvg into it); the PNG must be the current icon.svg.
    Drawn in a child process: Qt's renderer sets QT_QPA_PLATFORM and starts a QGuiApplication."""
    import subprocess
    import sys
    from pathlib import Path

    import numpy as np
    from PIL import Image

    root = Path(__file__).resolve().parents[2]
    drawn_png = tmp_path / "drawn.png"
    code = (f"import sys; sys.path.insert(0, {str(root / 'build')!r}); from icon import render; "
            f"render(__import__('pathlib').Path({str(root / 'desktop' / 'web' / 'icon.svg')!r}), 128)"
            f".save({str(drawn_png)!r})")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=60)
    drawn = np.asarray(Image.open(drawn_png).convert("RGBA"), np.int16)
    stored = np.asarray(Image.open(root / "desktop" / "web" / "icon.png").convert("RGBA"), np.int16)
    assert stored.shape == drawn.shape and np.abs(stored - drawn).max() <= 2, \
        "desktop/web/icon.png is not icon.svg: redraw it with build/icon.py's render(svg, 128)"
