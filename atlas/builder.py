"""``python -m atlas build SRC OUT``: composites every outfit and packs one premultiplied atlas.

Each outfit gets a full cell plus two small overlay cells — its face region with the eyes closed
and with the mouth open — so the shader animates the face by blending only inside those regions.
Gutters are filled by extruding the cell's edge pixels, and cells sit on a 16-pixel grid, so
LINEAR filtering and mip levels 0..4 never reach a neighbouring cell.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from atlas.errors import AtlasError
from atlas.manifest import Manifest, OutfitEntry, Rect
from atlas.packing import Item, pack
from atlas.source import VARIANTS, CharacterSource, Region, load_source, read_layer, save_png

GUTTER = 16
MAX_MIP_LEVEL = 4  # 2**4 == GUTTER == grid: the coarsest level that still cannot bleed
MAX_SIZE = 4096
THUMBNAIL = (80, 120)


@dataclass(frozen=True)
class Built:
    manifest: Manifest
    atlas: Image.Image  # premultiplied RGBA, exactly as written to atlas.png


def build(src: Path, out: Path, *, max_size: int = MAX_SIZE, gutter: int = GUTTER) -> Manifest:
    """Build and write ``out/atlas.png`` + ``out/manifest.json``."""
    built = compose(Path(src), max_size=max_size, gutter=gutter)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_png(built.atlas, out / built.manifest.image)
    (out / "manifest.json").write_text(built.manifest.to_json(), encoding="utf-8")
    return built.manifest


def compose(src: Path, *, max_size: int = MAX_SIZE, gutter: int = GUTTER) -> Built:
    source = load_source(src)
    variants = {name: _variant_layer(source, name) for name in VARIANTS}
    cells: dict[str, np.ndarray] = {}
    overlay_keys: dict[str, dict[str, str]] = {}
    by_pixels: dict[bytes, str] = {}  # identical face overlays are stored once
    for outfit in source.outfits:
        layers = [read_layer(p, source.cell) for p in outfit.layers]
        cells[outfit.id] = _premultiply(_composite(layers))
        overlay_keys[outfit.id] = {}
        for name, region_key in VARIANTS.items():
            with_variant = _composite(_insert_after_body(layers, outfit.layers, variants[name]))
            r = source.regions[region_key]
            crop = _premultiply(with_variant.crop((r.x, r.y, r.x + r.w, r.y + r.h)))
            key = by_pixels.setdefault(crop.tobytes() + bytes(crop.shape[:2]), f"{outfit.id}/{name}")
            cells.setdefault(key, crop)
            overlay_keys[outfit.id][name] = key

    items = [Item(k, a.shape[1], a.shape[0]) for k, a in cells.items()]
    packed = pack(items, gutter, max_size)
    if packed is None:
        raise AtlasError(
            source.root / "outfits",
            f"too many outfits for the maximum atlas size {max_size}x{max_size}: "
            f"{len(source.outfits)} outfits of {source.cell[0]}x{source.cell[1]} "
            "do not fit; remove some or use a smaller cell",
        )
    size, where = packed
    atlas = np.zeros((size[1], size[0], 4), np.uint8)
    rects = {}
    for key, pixels in cells.items():
        x, y = where[key]
        _blit_extruded(atlas, pixels, x, y, gutter)
        rects[key] = Rect(x, y, pixels.shape[1], pixels.shape[0])

    entries = tuple(
        OutfitEntry(
            id=o.id,
            name=o.name,
            rect=rects[o.id],
            eyes_closed=rects[overlay_keys[o.id]["eyes_closed"]],
            mouth_open=rects[overlay_keys[o.id]["mouth_open"]],
            layers=tuple(p.relative_to(source.root).as_posix() for p in o.layers),
            thumbnail=_thumbnail(cells[o.id]),
            names=o.names,
        )
        for o in source.outfits
    )
    manifest = Manifest(
        character=source.name,
        size=size,
        cell=source.cell,
        gutter=gutter,
        max_mip_level=MAX_MIP_LEVEL,
        regions={k: Rect(r.x, r.y, r.w, r.h) for k, r in source.regions.items()},
        outfits=entries,
    )
    return Built(manifest, Image.fromarray(atlas, "RGBA"))


def _variant_layer(source: CharacterSource, name: str) -> Image.Image:
    path = source.variants[name]
    img = read_layer(path, source.cell)
    r: Region = source.regions[VARIANTS[name]]
    alpha = np.asarray(img.getchannel("A")).copy()
    alpha[r.y : r.y + r.h, r.x : r.x + r.w] = 0
    if alpha.any():
        ys, xs = np.nonzero(alpha)
        raise AtlasError(
            path,
            f"draws outside the {VARIANTS[name]} region {[r.x, r.y, r.w, r.h]} of character.json "
            f"(first stray pixel at x={xs[0]}, y={ys[0]}); keep face variants inside it",
        )
    return img


def _insert_after_body(
    layers: list[Image.Image], paths: tuple[Path, ...], variant: Image.Image
) -> list[Image.Image]:
    """Face variants sit right above the body, below clothes and accessories (glasses, helmets)."""
    i = next((i + 1 for i, p in enumerate(paths) if p.parent.name == "base" and p.stem == "body"), 0)
    return layers[:i] + [variant] + layers[i:]


def _composite(layers: list[Image.Image]) -> Image.Image:
    out = Image.new("RGBA", layers[0].size, (0, 0, 0, 0))
    for layer in layers:
        out.alpha_composite(layer)
    return out


def _premultiply(img: Image.Image) -> np.ndarray:
    a = np.asarray(img, np.uint16)
    out = a.copy()
    out[..., :3] = (a[..., :3] * a[..., 3:4] + 127) // 255
    return out.astype(np.uint8)


def _blit_extruded(atlas: np.ndarray, pixels: np.ndarray, x: int, y: int, gutter: int) -> None:
    h, w = pixels.shape[:2]
    padded = np.pad(pixels, ((gutter, gutter), (gutter, gutter), (0, 0)), mode="edge")
    atlas[y - gutter : y + h + gutter, x - gutter : x + w + gutter] = padded


def _thumbnail(premultiplied: np.ndarray) -> str:
    img = Image.fromarray(premultiplied, "RGBa").resize(THUMBNAIL, Image.Resampling.LANCZOS).convert("RGBA")
    buf = io.BytesIO()
    img.save(buf, "PNG", compress_level=9)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
