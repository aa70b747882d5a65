"""Fixtures for the character tests: a shared GL thread and renderer, tiny atlas sources, and a
headless Chromium page serving the repository over 127.0.0.1."""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from shaders import CharacterRenderer, GLThread
from tests import services

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def gl_thread() -> Iterator[GLThread]:
    gl = GLThread(name="test-gl")
    yield gl
    gl.close()


@pytest.fixture(scope="session")
def renderer(gl_thread: GLThread) -> Iterator[CharacterRenderer]:
    """The default atlas, with idle blinking off so frames depend only on the state given."""
    r = CharacterRenderer(gl=gl_thread, idle_blink=False)
    yield r
    r.close()


def solid(size: tuple[int, int], color: tuple[int, int, int, int] = (0, 0, 0, 0)) -> Image.Image:
    return Image.new("RGBA", size, color)


def write_source(
    root: Path, colors: list[tuple[int, int, int, int]], cell: tuple[int, int] = (64, 96)
) -> Path:
    """A minimal valid source: one solid-coloured outfit per colour over a transparent body."""
    (root / "base").mkdir(parents=True, exist_ok=True)
    (root / "character.json").write_text(
        json.dumps(
            {
                "name": "Test",
                "cell": list(cell),
                "regions": {"eyes": [16, 16, 32, 16], "mouth": [16, 48, 32, 16]},
            }
        )
    )
    for name in ("body", "eyes_closed", "mouth_open"):
        solid(cell).save(root / "base" / f"{name}.png")
    for i, color in enumerate(colors):
        folder = root / "outfits" / f"o{i}"
        folder.mkdir(parents=True, exist_ok=True)
        solid(cell, color).save(folder / "outfit.png")
    return root


@pytest.fixture
def make_source(tmp_path: Path) -> Callable[..., Path]:
    return functools.partial(write_source, tmp_path / "src")


@pytest.fixture(scope="session")
def http_root() -> Iterator[str]:
    """The repository over HTTP on 127.0.0.1 (module scripts and fetch() need http://)."""
    with services.static_http(REPO) as url:
        yield url


@pytest.fixture(scope="module")
def chromium_page(http_root: str):
    """tests/character/parity_page.html in headless Chromium, with the WebGL2 renderer loaded."""
    with services.chromium() as browser:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{http_root}/tests/character/parity_page.html")
        page.wait_for_function("window.stella !== undefined")
        assert page.evaluate("window.stella.ready"), errors
        yield page


@pytest.fixture(scope="module")
def webgl_render(chromium_page) -> Callable[[dict, tuple[int, int]], np.ndarray]:
    """Render a state with the WebGL2 renderer: premultiplied RGBA (H, W, 4), top row first."""

    def render(state: dict, size: tuple[int, int]) -> np.ndarray:
        b64 = chromium_page.evaluate(
            "([s, w, h]) => window.stella.render(s, w, h)", [state, size[0], size[1]]
        )
        return np.frombuffer(base64.b64decode(b64), np.uint8).reshape(size[1], size[0], 4)

    return render
