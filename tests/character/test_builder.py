"""The atlas builder: deterministic output, sound packing, and a clear error for each bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from atlas.builder import GUTTER, build, compose
from atlas.errors import AtlasError
from atlas.manifest import Manifest
from atlas.packing import Item, pack

RED, GREEN, BLUE = (255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255)


def test_same_source_gives_byte_identical_atlas_and_manifest(make_source, tmp_path: Path) -> None:
    src = make_source([RED, GREEN, BLUE])
    build(src, tmp_path / "a")
    build(src, tmp_path / "b")
    for name in ("atlas.png", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_atlas_is_cropped_to_the_grid_premultiplied_with_extruded_gutters(make_source, tmp_path: Path) -> None:
    half_red = (255, 0, 0, 128)
    src = make_source([half_red, GREEN])
    manifest = build(src, tmp_path / "out")
    w, h = manifest.size
    assert w % 16 == 0 and h % 16 == 0 and max(w, h) <= 4096  # every mip level up to 4 halves an even size
    cells = [r for o in manifest.outfits for r in (o.rect, o.eyes_closed, o.mouth_open)]
    assert w - 16 < max(r.x + r.w + GUTTER for r in cells) <= w  # no empty grid column or row kept
    assert h - 16 < max(r.y + r.h + GUTTER for r in cells) <= h
    atlas = np.asarray(Image.open(tmp_path / "out" / "atlas.png"))
    r = manifest.outfit("o0").rect
    cell = atlas[r.y : r.y + r.h, r.x : r.x + r.w]
    assert (cell == (128, 0, 0, 128)).all()  # premultiplied: 255 * 128/255
    ring = atlas[r.y - GUTTER : r.y + r.h + GUTTER, r.x - GUTTER : r.x + r.w + GUTTER]
    assert (ring == (128, 0, 0, 128)).all()  # gutter = the edge pixels, extruded


def test_manifest_names_every_outfit_with_rects_uvs_layers_and_thumbnail(make_source, tmp_path: Path) -> None:
    src = make_source([RED, GREEN])
    (src / "outfits" / "o1" / "outfit.json").write_text(json.dumps({"name": "Green thing", "order": -1}))
    build(src, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert [o["id"] for o in data["outfits"]] == ["o1", "o0"]  # "order" first, then id
    o = data["outfits"][0]
    assert o["name"] == "Green thing" and data["default_outfit"] == "o1"
    x, y, w, h = o["rect"]
    W, H = data["size"]
    assert o["uv"] == [x / W, y / H, (x + w) / W, (y + h) / H]
    assert o["layers"] == ["base/body.png", "outfits/o1/outfit.png"]
    assert o["thumbnail"].startswith("data:image/png;base64,")
    assert data["alpha"] == "premultiplied" and data["max_mip_level"] == 4
    assert Manifest.load(tmp_path / "out").outfit("o1").rect.w == 64


def test_an_outfits_labels_in_other_languages_reach_the_manifest(make_source, tmp_path: Path) -> None:
    src = make_source([RED, GREEN])
    (src / "outfits" / "o1" / "outfit.json").write_text(json.dumps({"name": "Hanfu", "names": {"zh": " 汉服 "}}))
    build(src, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert {o["id"]: o.get("names") for o in data["outfits"]} == {"o0": None, "o1": {"zh": "汉服"}}
    assert Manifest.load(tmp_path / "out").outfit("o1").names == {"zh": "汉服"}


@pytest.mark.parametrize("names", [["汉服"], {"chinese": "汉服"}, {"zh": ""}, {"zh": 3}])
def test_a_bad_names_field_says_what_it_must_be(make_source, names) -> None:
    src = make_source([RED, GREEN])
    (src / "outfits" / "o1" / "outfit.json").write_text(json.dumps({"names": names}))
    err = _error(src)
    assert err.path == src / "outfits" / "o1" / "outfit.json"
    assert '"names" must map language codes to button labels, e.g. {"zh": "汉服"}' in str(err)


def test_identical_face_overlays_are_stored_once(make_source, tmp_path: Path) -> None:
    manifest = build(make_source([RED, RED]), tmp_path / "out")
    a, b = manifest.outfits
    assert a.eyes_closed == b.eyes_closed and a.mouth_open == b.mouth_open and a.rect != b.rect


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=30),
    st.sampled_from([0, 16]),
)
def test_packing_never_overlaps_and_keeps_the_grid(sizes: list[tuple[int, int]], gutter: int) -> None:
    items = [Item(f"k{i}", w * 16, h * 16) for i, (w, h) in enumerate(sizes)]
    packed = pack(items, gutter, 4096)
    if packed is None:
        assert sum(it.w * it.h for it in items) > 0
        return
    (W, H), where = packed
    boxes = []
    for it in items:
        x, y = where[it.key]
        assert x % 16 == 0 and y % 16 == 0
        x0, y0, x1, y1 = x - gutter, y - gutter, x + it.w + gutter, y + it.h + gutter
        assert 0 <= x0 and 0 <= y0 and x1 <= W and y1 <= H
        boxes.append((x0, y0, x1, y1))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


# ---- one test per kind of bad input -----------------------------------------------------------


def _error(src: Path, **kw) -> AtlasError:
    with pytest.raises(AtlasError) as info:
        compose(src, **kw)
    return info.value


def test_missing_layer_names_the_file(make_source) -> None:
    src = make_source([RED, GREEN])
    (src / "outfits" / "o1" / "outfit.json").write_text(json.dumps({"layers": ["outfit", "hat"]}))
    err = _error(src)
    assert err.path == src / "outfits" / "o1" / "hat.png"
    assert "missing layer 'hat'" in str(err)


def test_size_mismatch_names_the_file_and_both_sizes(make_source) -> None:
    src = make_source([RED, GREEN])
    Image.new("RGBA", (64, 80)).save(src / "outfits" / "o0" / "outfit.png")
    err = _error(src)
    assert err.path == src / "outfits" / "o0" / "outfit.png"
    assert "size mismatch" in str(err) and "64x80" in str(err) and "64x96" in str(err)


def test_too_many_outfits_for_the_max_size(make_source) -> None:
    src = make_source([RED] * 5, cell=(224, 224))
    err = _error(src, max_size=512)
    assert err.path == src / "outfits"
    assert "too many outfits" in str(err) and "512x512" in str(err)


def test_non_rgba_layer_is_rejected(make_source) -> None:
    src = make_source([RED, GREEN])
    Image.new("RGB", (64, 96), (1, 2, 3)).save(src / "outfits" / "o1" / "outfit.png")
    err = _error(src)
    assert err.path == src / "outfits" / "o1" / "outfit.png"
    assert "mode RGB" in str(err) and "RGBA" in str(err)


def test_bad_json_reports_file_line_and_column(make_source) -> None:
    src = make_source([RED])
    (src / "outfits" / "o0" / "outfit.json").write_text('{"name": "Red",\n "order": }')
    err = _error(src)
    assert err.path == src / "outfits" / "o0" / "outfit.json"
    assert "bad json at line 2 column" in str(err)


def test_face_variant_drawing_outside_its_region_is_rejected(make_source) -> None:
    src = make_source([RED])
    img = Image.new("RGBA", (64, 96))
    img.putpixel((5, 90), (255, 255, 255, 255))
    img.save(src / "base" / "mouth_open.png")
    err = _error(src)
    assert err.path == src / "base" / "mouth_open.png" and "outside the mouth region" in str(err)


def test_cli_prints_the_error_and_exits_non_zero(make_source, tmp_path: Path) -> None:
    src = make_source([RED])
    (src / "outfits" / "o0" / "outfit.png").write_bytes(b"not a png")
    proc = subprocess.run(
        [sys.executable, "-m", "atlas", "build", str(src), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.startswith("error: ")
        and "o0/outfit.png" in proc.stderr
        and "not a readable PNG" in proc.stderr
    )
    assert not (tmp_path / "out" / "atlas.png").exists()


def test_dropping_a_folder_of_layer_pngs_adds_an_outfit(make_source, tmp_path: Path) -> None:
    src = make_source([RED])
    folder = src / "outfits" / "witch_hat"
    folder.mkdir()
    Image.new("RGBA", (64, 96), (20, 0, 40, 255)).save(folder / "outfit.png")
    Image.new("RGBA", (64, 96), (0, 0, 0, 0)).save(folder / "accessories.png")
    manifest = build(src, tmp_path / "out")
    added = manifest.outfit("witch_hat")
    assert added.name == "Witch hat"
    assert added.layers == (
        "base/body.png",
        "outfits/witch_hat/outfit.png",
        "outfits/witch_hat/accessories.png",
    )
    atlas = np.asarray(Image.open(tmp_path / "out" / "atlas.png"))
    assert (atlas[added.rect.y + 40, added.rect.x + 30] == (20, 0, 40, 255)).all()
