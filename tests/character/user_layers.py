"""A user's own outfit as a person would make it: layer PNGs drawn at the character's cell size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from atlas.figure import CELL

TEAL = (0, 150, 150)
GOLD = (230, 180, 20)


def write_cape_layers(folder: Path, size: tuple[int, int] = CELL) -> Path:
    """A teal cape over the body (outfit.png) and a gold crown (accessories.png)."""
    folder.mkdir(parents=True, exist_ok=True)
    w, h = size
    cape = Image.new("RGBA", size, (0, 0, 0, 0))
    ImageDraw.Draw(cape).polygon([(0.27 * w, 0.45 * h), (0.73 * w, 0.45 * h), (0.85 * w, 0.98 * h),
                                  (0.15 * w, 0.98 * h)], fill=(*TEAL, 255))
    cape.save(folder / "outfit.png")
    crown = Image.new("RGBA", size, (0, 0, 0, 0))
    ImageDraw.Draw(crown).polygon([(0.36 * w, 0.13 * h), (0.64 * w, 0.13 * h), (0.62 * w, 0.05 * h),
                                   (0.5 * w, 0.1 * h), (0.38 * w, 0.05 * h)], fill=(*GOLD, 255))
    crown.save(folder / "accessories.png")
    return folder


def share_of(pixels: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 40) -> float:
    """The share of pixels (an RGB or RGBA array) within `tolerance` of `rgb` on every channel."""
    close = (np.abs(pixels[..., :3].astype(int) - np.array(rgb)) <= tolerance).all(axis=-1)
    return float(close.mean())
