"""Reads and validates an atlas source folder; every failure names the file and the fix.

Layout (what ``python -m atlas art`` writes, and what a user copies to add an outfit)::

    character.json            {"name": ..., "cell": [w, h], "regions": {"eyes": [x, y, w, h], "mouth": [...]}}
    base/body.png             shared body: skin, face (eyes open, mouth closed), front hair
    base/back.png             optional: drawn behind everything (back hair)
    base/eyes_closed.png      face variants, drawn over the body and only inside their region
    base/mouth_open.png
    outfits/<id>/outfit.json  optional: {"name": ..., "names": {"zh": ...}, "order": n, "base": ["back", "body"],
                              "layers": [...]}
    outfits/<id>/<layer>.png  default layers: outfit.png (required), accessories.png, shading.png
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from atlas.errors import AtlasError

if TYPE_CHECKING:
    from PIL import Image

ALIGN = 16  # cell sizes and face regions sit on the coarsest mip level's grid
DEFAULT_LAYERS = ("outfit", "accessories", "shading")
BASE_LAYERS = ("back", "body")
VARIANTS = {"eyes_closed": "eyes", "mouth_open": "mouth"}
OUTFIT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
LANGUAGE = re.compile(r"^[a-z]{2}$")  # a label's language: an ISO 639-1 code ("zh")


@dataclass(frozen=True)
class Region:
    x: int
    y: int
    w: int
    h: int


@dataclass(frozen=True)
class OutfitSource:
    id: str
    name: str
    order: int
    layers: tuple[Path, ...]  # bottom to top, base layers included
    names: dict[str, str] = field(default_factory=dict)  # the button label in other languages ("zh": "汉服")


@dataclass(frozen=True)
class CharacterSource:
    root: Path
    name: str
    cell: tuple[int, int]
    regions: dict[str, Region]
    variants: dict[str, Path]  # variant name -> file
    outfits: tuple[OutfitSource, ...]


def load_source(root: Path) -> CharacterSource:
    root = Path(root)
    spec_path = root / "character.json"
    spec = _read_json(spec_path)
    name = spec.get("name", "Character")
    cell = _ints(spec_path, spec.get("cell"), 2, "cell")
    if not isinstance(name, str) or min(cell) <= 0 or any(v % ALIGN for v in cell):
        raise AtlasError(
            spec_path, f'"cell" must be [width, height], positive multiples of {ALIGN}, got {cell}'
        )
    regions = {}
    raw_regions = spec.get("regions")
    if not isinstance(raw_regions, dict):
        raise AtlasError(spec_path, '"regions" must map "eyes" and "mouth" to [x, y, w, h] rectangles')
    for key in VARIANTS.values():
        r = Region(*_ints(spec_path, raw_regions.get(key), 4, f"regions.{key}"))
        if (
            min(r.w, r.h) <= 0
            or r.x < 0
            or r.y < 0
            or r.x + r.w > cell[0]
            or r.y + r.h > cell[1]
            or any(v % ALIGN for v in (r.x, r.y, r.w, r.h))
        ):
            raise AtlasError(
                spec_path,
                f"regions.{key} {list(vars(r).values())} must lie inside the cell "
                f"and use multiples of {ALIGN}",
            )
        regions[key] = r
    base = root / "base"
    for required in ("body", *VARIANTS):
        if not (base / f"{required}.png").is_file():
            raise AtlasError(
                base / f"{required}.png", f"missing layer '{required}': every character needs it"
            )
    available_base = {n for n in BASE_LAYERS if (base / f"{n}.png").is_file()}
    outfits_dir = root / "outfits"
    folders = sorted(p for p in outfits_dir.iterdir() if p.is_dir()) if outfits_dir.is_dir() else []
    if not folders:
        raise AtlasError(outfits_dir, "no outfits: add at least one folder outfits/<id>/ with an outfit.png")
    outfits = [_load_outfit(folder, base, available_base) for folder in folders]
    outfits.sort(key=lambda o: (o.order, o.id))
    return CharacterSource(
        root, name, (cell[0], cell[1]), regions, {v: base / f"{v}.png" for v in VARIANTS}, tuple(outfits)
    )


def _load_outfit(folder: Path, base: Path, available_base: set[str]) -> OutfitSource:
    oid = folder.name
    if not OUTFIT_ID.match(oid):
        raise AtlasError(
            folder, "outfit folder names are ids: lowercase letters, digits, '_' or '-' (max 40)"
        )
    meta_path = folder / "outfit.json"
    meta = _read_json(meta_path) if meta_path.exists() else {}
    name = meta.get("name", oid.replace("_", " ").replace("-", " ").capitalize())
    order = meta.get("order", 1000)
    base_layers = meta.get("base", [n for n in BASE_LAYERS if n in available_base])
    layers = meta.get("layers", [n for n in DEFAULT_LAYERS if (folder / f"{n}.png").is_file()] or ["outfit"])
    if not isinstance(name, str) or not name.strip():
        raise AtlasError(meta_path, '"name" must be a non-empty string (the button label)')
    if not isinstance(order, int) or isinstance(order, bool):
        raise AtlasError(meta_path, '"order" must be an integer')
    names = meta.get("names", {})
    if not isinstance(names, dict) or not all(
        isinstance(k, str) and LANGUAGE.match(k) and isinstance(v, str) and v.strip() for k, v in names.items()
    ):
        raise AtlasError(meta_path, '"names" must map language codes to button labels, e.g. {"zh": "汉服"}')
    if not isinstance(layers, list) or not layers or not all(isinstance(n, str) and n for n in layers):
        raise AtlasError(
            meta_path, '"layers" must be a non-empty list of layer names (PNG files in this folder)'
        )
    if not isinstance(base_layers, list) or not set(base_layers) <= set(BASE_LAYERS):
        raise AtlasError(meta_path, f'"base" must be a list drawn from {list(BASE_LAYERS)}')
    paths = []
    for n in base_layers:
        if n not in available_base:
            raise AtlasError(base / f"{n}.png", f"missing layer '{n}', which {meta_path} asks for")
        paths.append(base / f"{n}.png")
    for n in layers:
        if not (folder / f"{n}.png").is_file():
            raise AtlasError(folder / f"{n}.png", f"missing layer '{n}' of outfit '{oid}'")
        paths.append(folder / f"{n}.png")
    return OutfitSource(oid, name.strip(), order, tuple(paths), {k: v.strip() for k, v in names.items()})


def read_layer(path: Path, cell: tuple[int, int]) -> Image.Image:
    """One layer, checked to be an RGBA PNG of exactly the cell size."""
    from PIL import Image, UnidentifiedImageError  # here: the window's launch (`stella` reads this module) needs no PIL

    try:
        with Image.open(path) as img:
            if img.format != "PNG":
                raise AtlasError(path, f"is a {img.format} file; layers must be PNG")
            if img.mode != "RGBA":
                raise AtlasError(
                    path,
                    f"has mode {img.mode}, but layers must be 8-bit RGBA (with an alpha "
                    "channel); re-export it with transparency",
                )
            if img.size != cell:
                raise AtlasError(
                    path,
                    f"size mismatch: {img.size[0]}x{img.size[1]}, but character.json sets the "
                    f"cell to {cell[0]}x{cell[1]}; every layer must be exactly that size",
                )
            img.load()
            return img.copy()
    except (UnidentifiedImageError, OSError) as exc:
        raise AtlasError(path, f"is not a readable PNG image ({exc})") from None


def save_png(img: Image.Image, path: Path) -> None:
    """Deterministic PNG: fixed compression and no metadata, so rebuilds are byte-identical."""
    img.save(path, "PNG", compress_level=9)


def _read_json(path: Path) -> dict:
    if not path.is_file():
        raise AtlasError(path, "missing file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise AtlasError(path, "bad json: the file is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise AtlasError(path, f"bad json at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise AtlasError(path, "bad json: expected an object {...} at the top level")
    return data


def _ints(path: Path, value: object, n: int, what: str) -> list[int]:
    if not (
        isinstance(value, list)
        and len(value) == n
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise AtlasError(path, f'"{what}" must be a list of {n} integers, got {json.dumps(value)}')
    return value
