"""The moderngl renderer: golden frames per outfit, no bleeding between atlas cells, crossfade,
face overlays confined to their regions, and outfit switches that are uniform writes only.

Golden tolerance: every channel of every pixel (premultiplied) within ``GOLDEN_TOLERANCE`` of the
checked-in PNG. Regenerate after an intended art change with
``STELLA_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/character/test_render.py``.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import moderngl
import numpy as np
import pytest
from PIL import Image

from atlas.builder import build
from atlas.manifest import DEFAULT_DIR, Manifest
from shaders import CharacterRenderer, FrameState
from shaders.pixels import premultiply, unpremultiply

GOLDEN_DIR = Path(__file__).parent / "golden"
GOLDEN_SIZE = (256, 384)
GOLDEN_TOLERANCE = 2  # of 255; un-premultiplying for the PNG alone can cost 1
OUTFITS = [o.id for o in Manifest.load(DEFAULT_DIR).outfits]


def _diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.astype(np.int16) - b.astype(np.int16))


@pytest.mark.parametrize("outfit", OUTFITS)
def test_outfit_matches_its_golden_image(renderer: CharacterRenderer, outfit: str) -> None:
    frame = renderer.render(FrameState(outfit), GOLDEN_SIZE)
    path = GOLDEN_DIR / f"{outfit}.png"
    if os.environ.get("STELLA_UPDATE_GOLDEN") == "1":
        Image.fromarray(unpremultiply(frame), "RGBA").save(path, compress_level=9)
    golden = premultiply(np.asarray(Image.open(path).convert("RGBA")))
    worst = int(_diff(frame, golden).max())
    assert worst <= GOLDEN_TOLERANCE, f"{outfit}: a pixel differs by {worst}/255 from {path}"
    assert frame[..., 3].mean() > 40  # a character is actually there


def test_outfits_look_distinct(renderer: CharacterRenderer) -> None:
    frames = {o: renderer.render(FrameState(o), GOLDEN_SIZE) for o in OUTFITS}
    for i, a in enumerate(OUTFITS):
        for b in OUTFITS[i + 1 :]:
            changed = (_diff(frames[a], frames[b]).max(axis=-1) > 24).mean()
            assert changed > 0.04, f"{a} and {b} differ in only {changed:.1%} of pixels"


SOLIDS = [(255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255), (255, 255, 0, 255), (0, 255, 255, 255)]


def _solid_atlas(make_source, tmp_path: Path, gutter: int) -> Path:
    out = tmp_path / f"atlas-g{gutter}"
    build(make_source(SOLIDS, cell=(128, 192)), out, gutter=gutter)
    return out


# Cell-to-screen scales from magnified to 1/32: exercises LINEAR and every mip level (and past them).
SCALES = [2.0, 1.0, 0.7, 0.5, 0.3, 0.25, 0.125, 1 / 16, 1 / 32]


def _bleeding_pixels(renderer: CharacterRenderer, scale: float) -> int:
    size = (max(2, round(128 * scale)), max(2, round(192 * scale)))
    bad = 0
    for outfit, color in zip(renderer.outfit_ids, SOLIDS, strict=True):
        frame = renderer.render(FrameState(outfit, mouth=1.0, blink=1.0), size)
        covered = frame[..., 3] > 0
        assert covered.mean() > 0.9  # ~same aspect: the quad reaches the viewport's edges
        bad += int((frame[covered] != color).any(axis=-1).sum())
    return bad


def test_no_pixel_of_a_neighbouring_cell_at_any_scale(gl_thread, make_source, tmp_path: Path) -> None:
    with CharacterRenderer(_solid_atlas(make_source, tmp_path, 16), gl=gl_thread, idle_blink=False) as r:
        for scale in SCALES:
            assert _bleeding_pixels(r, scale) == 0, f"neighbour colour at scale {scale}"


def test_the_bleed_check_catches_an_atlas_without_gutters(gl_thread, make_source, tmp_path: Path) -> None:
    with CharacterRenderer(_solid_atlas(make_source, tmp_path, 0), gl=gl_thread, idle_blink=False) as r:
        assert sum(_bleeding_pixels(r, s) for s in SCALES) > 0


def test_crossfade_midpoint_is_the_blend_of_both_outfits(renderer: CharacterRenderer) -> None:
    a = renderer.render(FrameState("hoodie"), (320, 480)).astype(np.int16)
    b = renderer.render(FrameState("red_dress"), (320, 480)).astype(np.int16)
    mid = renderer.render(FrameState("red_dress", previous="hoodie", progress=0.5), (320, 480)).astype(
        np.int16
    )
    assert np.abs(mid - (a + b) / 2).max() <= 1
    assert np.abs(a - b).max() > 100  # the outfits do differ, so the blend is not trivially equal


def _changed_box(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int, int, int]:
    ys, xs = np.nonzero(_diff(a, b).max(axis=-1) > 0)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1, len(xs)


@pytest.mark.parametrize("feature", ["eyes", "mouth"])
@pytest.mark.parametrize("outfit", ["hoodie", "space"])
def test_blink_and_mouth_change_only_their_region(
    renderer: CharacterRenderer, feature: str, outfit: str
) -> None:
    cell = renderer.manifest.cell
    region = renderer.manifest.regions[feature]
    rest = renderer.render(FrameState(outfit), cell)  # 1:1 with the cell, so regions are in pixels
    key = "blink" if feature == "eyes" else "mouth"
    moved = renderer.render(FrameState(outfit, **{key: 1.0}), cell)
    x0, y0, x1, y1, count = _changed_box(rest, moved)
    assert (x0, y0) >= (region.x, region.y) and x1 <= region.x + region.w and y1 <= region.y + region.h
    assert count > 150  # and something visible did change there
    half = renderer.render(FrameState(outfit, **{key: 0.5}), cell).astype(np.int16)
    assert np.abs(half - (rest.astype(np.int16) + moved) / 2).max() <= 1


def test_breathing_moves_the_head_but_not_the_feet(renderer: CharacterRenderer) -> None:
    def extent(frame: np.ndarray) -> tuple[int, int]:
        rows = np.nonzero((frame[..., 3] > 128).any(axis=1))[0]
        return int(rows[0]), int(rows[-1])

    top, bottom = extent(renderer.render(FrameState("hoodie", time=0.0), (448, 672)))
    inhaled = max(
        (extent(renderer.render(FrameState("hoodie", time=t), (448, 672))) for t in (0.5, 1.0, 1.5)),
        key=lambda e: top - e[0],
    )
    assert top - inhaled[0] >= 2  # the head rises a few pixels
    assert inhaled[1] == bottom  # the feet stay planted


def test_outfit_switch_is_uniforms_only_and_shows_on_the_next_frame(gl_thread, monkeypatch) -> None:
    now = [100.0]
    with CharacterRenderer(gl=gl_thread, idle_blink=False, clock=lambda: now[0]) as r:
        expected_dress = r.render(FrameState("red_dress"), (256, 256))
        expected_mid = r.render(FrameState("school", previous="red_dress", progress=0.5), (256, 256))
        uploads = []
        for cls, name in (
            (moderngl.Texture, "write"),
            (moderngl.Texture, "build_mipmaps"),
            (moderngl.Context, "texture"),
        ):
            original = getattr(cls, name)
            monkeypatch.setattr(
                cls, name, lambda *a, _o=original, _n=name, **k: uploads.append(_n) or _o(*a, **k)
            )
        r.set_outfit("red_dress", crossfade=0)
        assert (r.frame((256, 256)) == expected_dress).all()
        r.set_outfit("school")  # default crossfade
        now[0] += r.crossfade / 2
        halfway = r.frame((256, 256))
        breathing = r.render(
            FrameState("school", previous="red_dress", progress=0.5, time=now[0] - 100.0), (256, 256)
        )
        assert (halfway == breathing).all()
        assert _diff(halfway, expected_dress).max() > 100 and _diff(halfway, expected_mid).mean() < 1
        assert uploads == []


def test_png_outputs_are_straight_alpha_images(renderer: CharacterRenderer) -> None:
    thumb = Image.open(io.BytesIO(renderer.thumbnail_png("formal", (96, 144))))
    assert thumb.size == (96, 144) and thumb.mode == "RGBA"
    frame = Image.open(io.BytesIO(renderer.frame_png((200, 300))))
    assert frame.size == (200, 300) and np.asarray(frame)[..., 3].max() == 255


def test_unknown_outfit_is_a_clear_error(renderer: CharacterRenderer) -> None:
    with pytest.raises(KeyError, match="unknown outfit 'ballgown'.*hoodie"):
        renderer.set_outfit("ballgown")
