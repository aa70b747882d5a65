"""WebGL2 in the system's WebKitGTK, in a real pywebview window under Xvfb, draws the same frames as moderngl from
the same shaders and atlas — within the tolerance Chromium is held to (tests/character/test_parity.py)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from shaders import CharacterRenderer, FrameState
from tests import services
from tests.character.test_parity import MAX_DIFF, MEAN_DIFF, STATES, _as_js
from tests.desktop import screen

pytestmark = pytest.mark.display

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def webkit(xvfb: services.Xvfb, tmp_path_factory: pytest.TempPathFactory) -> Iterator[screen.Page]:
    """tests/character/parity_page.html in a WebKitGTK window, its renderer loaded."""
    socket = tmp_path_factory.mktemp("webkit") / "page.sock"
    with services.static_http(ROOT) as url:
        proc = subprocess.Popen([sys.executable, "-m", "tests.desktop.webkit_page",
                                 f"{url}/tests/character/parity_page.html", str(socket)],
                                env={**os.environ, **xvfb.env})
        page = None
        try:
            page = screen.Page(socket)
            page.wait("window.stella !== undefined && (window.stella.ready.then(() => { window.loaded = true; }),"
                      " window.loaded === true)", 30)
            yield page
        finally:
            if page is not None:
                page.close()
            proc.terminate()
            proc.wait(20)


@pytest.fixture(scope="module")
def renderer() -> Iterator[CharacterRenderer]:
    with CharacterRenderer(idle_blink=False) as r:
        yield r


@pytest.mark.parametrize("size", [(512, 512), (300, 450)])
@pytest.mark.parametrize("state", STATES, ids=lambda s: f"{s.outfit}-m{s.mouth}-b{s.blink}-p{s.progress}-t{s.time}")
def test_webkitgtk_webgl_matches_moderngl(webkit: screen.Page, renderer: CharacterRenderer, state: FrameState,
                                          size: tuple[int, int]) -> None:
    native = renderer.render(state, size).astype(np.int16)
    b64 = webkit.eval(f"window.stella.render({json.dumps(_as_js(state))}, {size[0]}, {size[1]})")
    web = np.frombuffer(base64.b64decode(b64), np.uint8).reshape(size[1], size[0], 4).astype(np.int16)
    diff = np.abs(native - web)
    assert web[..., 3].mean() > 20, "WebGL drew nothing"
    assert diff.max() <= MAX_DIFF, f"max diff {diff.max()} at {np.unravel_index(diff.argmax(), diff.shape)}"
    assert diff.mean() < MEAN_DIFF, f"mean diff {diff.mean():.3f}"
