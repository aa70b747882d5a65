"""WebGL2 in headless Chromium and moderngl draw the same frames from the same shaders and atlas.

Tolerance, per pixel and channel of the premultiplied frames: at most ``MAX_DIFF``/255, and under
``MEAN_DIFF`` on average. Measured (Chromium's SwiftShader vs Mesa llvmpipe): max 4, mean <= 0.1 —
only rounding in trilinear filtering differs.
"""

from __future__ import annotations

import numpy as np
import pytest

from shaders import CharacterRenderer, FrameState

pytestmark = pytest.mark.browser

MAX_DIFF = 6
MEAN_DIFF = 0.2

STATES = [
    *(FrameState(o) for o in ("hoodie", "red_dress", "school", "space", "pyjamas", "formal", "hanfu", "cyberpunk")),
    FrameState("school", mouth=1.0, blink=1.0),
    FrameState("formal", mouth=0.4, blink=0.7),
    FrameState("pyjamas", previous="space", progress=0.5),
    FrameState("red_dress", time=1.3),
]


def _as_js(state: FrameState) -> dict:
    return {
        "outfit": state.outfit,
        "previous": state.previous,
        "progress": state.progress,
        "mouth": state.mouth,
        "blink": state.blink,
        "time": state.time,
    }


@pytest.mark.parametrize("size", [(512, 512), (300, 450)])
@pytest.mark.parametrize(
    "state", STATES, ids=lambda s: f"{s.outfit}-m{s.mouth}-b{s.blink}-p{s.progress}-t{s.time}"
)
def test_webgl_matches_moderngl(renderer: CharacterRenderer, webgl_render, state: FrameState, size) -> None:
    native = renderer.render(state, size).astype(np.int16)
    web = webgl_render(_as_js(state), size).astype(np.int16)
    diff = np.abs(native - web)
    assert web[..., 3].mean() > 20, "WebGL drew nothing"
    assert diff.max() <= MAX_DIFF, f"max diff {diff.max()} at {np.unravel_index(diff.argmax(), diff.shape)}"
    assert diff.mean() < MEAN_DIFF, f"mean diff {diff.mean():.3f}"


def test_webgl_outfit_switch_is_uniform_only_and_immediate(chromium_page) -> None:
    result = chromium_page.evaluate("""() => {
        const r = window.stella.renderer;
        const gl = r.gl;
        let uploads = 0;
        for (const name of ['texImage2D', 'texSubImage2D', 'generateMipmap', 'createTexture']) {
            const original = gl[name].bind(gl);
            gl[name] = (...args) => { uploads += 1; return original(...args); };
        }
        r.canvas.width = 64; r.canvas.height = 96;
        r.setOutfit('space', {crossfadeMs: 0});
        r.renderLive(r.epoch);  // animation time 0: no breathing offset
        const after = r.readPixels().data;
        r.renderAt({outfit: 'space'});
        const expected = r.readPixels().data;
        let same = after.length === expected.length;
        for (let i = 0; same && i < after.length; i++) same = Math.abs(after[i] - expected[i]) <= 0;
        r.setOutfit('hoodie', {crossfadeMs: 0});
        return {uploads, same};
    }""")
    assert result == {"uploads": 0, "same": True}
