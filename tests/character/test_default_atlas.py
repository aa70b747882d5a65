"""The committed default atlas is exactly what the art + builder produce, so it cannot go stale,
and the CLI turns it into a contact sheet of every outfit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from atlas.art import write_sources
from atlas.builder import compose
from atlas.manifest import DEFAULT_DIR, Manifest
from shaders import glsl


def test_committed_default_atlas_is_rebuilt_byte_identically(tmp_path: Path) -> None:
    write_sources(tmp_path / "src")
    built = compose(tmp_path / "src")
    committed = Image.open(DEFAULT_DIR / "atlas.png")
    assert np.array_equal(np.asarray(built.atlas), np.asarray(committed)), (
        "atlas/default is stale: run `python -m atlas art SRC && python -m atlas build SRC atlas/default`"
    )
    assert built.manifest.to_json() == (DEFAULT_DIR / "manifest.json").read_text(encoding="utf-8")
    built.atlas.save(tmp_path / "atlas.png", compress_level=9)
    assert (tmp_path / "atlas.png").read_bytes() == (DEFAULT_DIR / "atlas.png").read_bytes()


def test_default_character_has_eight_outfits_labelled_in_english_and_chinese_in_a_small_atlas() -> None:
    manifest = Manifest.load(DEFAULT_DIR)
    assert {o.id: (o.name, o.names) for o in manifest.outfits} == {
        "hoodie": ("Hoodie", {"zh": "卫衣"}), "red_dress": ("Red dress", {"zh": "红裙子"}),
        "school": ("School uniform", {"zh": "校服"}), "space": ("Space suit", {"zh": "宇航服"}),
        "pyjamas": ("Pyjamas", {"zh": "睡衣"}), "formal": ("Formal", {"zh": "礼服"}),
        "hanfu": ("Hanfu robe", {"zh": "古风汉服"}), "cyberpunk": ("Cyberpunk jacket", {"zh": "赛博朋克"})}
    assert max(manifest.size) <= 2048
    assert len({o.rect for o in manifest.outfits}) == len(manifest.outfits)


def test_contact_sheet_shows_every_outfit(tmp_path: Path) -> None:
    out = tmp_path / "sheet.png"
    subprocess.run(
        [sys.executable, "-m", "atlas", "contact-sheet", str(out)], check=True, capture_output=True
    )
    sheet = Image.open(out)
    manifest = Manifest.load(DEFAULT_DIR)
    cards = len(manifest.outfits) + 3  # plus blinking, talking, crossfade
    assert sheet.width >= 3 * manifest.cell[0] and sheet.height >= -(-cards // 3) * manifest.cell[1]


def test_both_renderers_load_the_same_single_shader_source() -> None:
    js = (Path(__file__).resolve().parents[2] / "desktop" / "web" / "character.js").read_text()
    for name in ("character.vert", "character.frag"):
        source = glsl.load(name)
        assert source.startswith("#version 300 es\n") and f"{{base}}{name}" in js
        desktop = glsl.for_desktop(source)
        assert desktop.splitlines()[0] == "#version 330 core"
        assert desktop.splitlines()[1:] == source.splitlines()[1:]
