"""Writes the default character's layered sources (``python -m atlas art SRC_DIR``).

The output has the same layout a user follows to add an outfit, so the default art goes through
exactly the path user art does: ``character.json``, ``base/*.png``, ``outfits/<id>/``.
"""

from __future__ import annotations

import json
from pathlib import Path

from atlas import figure
from atlas.outfits import OUTFITS
from atlas.source import save_png


def write_sources(out: Path) -> None:
    base = figure.draw_base()
    (out / "base").mkdir(parents=True, exist_ok=True)
    _write_json(
        out / "character.json",
        {
            "name": "Stella",
            "cell": list(figure.CELL),
            "regions": {"eyes": list(figure.EYES_REGION), "mouth": list(figure.MOUTH_REGION)},
        },
    )
    for name in ("back", "body", "eyes_closed", "mouth_open"):
        save_png(getattr(base, name), out / "base" / f"{name}.png")
    for order, outfit in enumerate(OUTFITS):
        folder = out / "outfits" / outfit.id
        folder.mkdir(parents=True, exist_ok=True)
        dressed = outfit.draw()
        layers = {
            "outfit": dressed.cloth.result(),
            "accessories": dressed.acc.result(),
            "shading": dressed.shading(),
        }
        for name, img in layers.items():
            save_png(img, folder / f"{name}.png")
        _write_json(
            folder / "outfit.json",
            {
                "name": outfit.name,
                "names": {"zh": outfit.chinese},
                "order": order,
                "base": list(outfit.base),
                "layers": list(layers),
            },
        )


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
