"""Deterministic shelf packing of cells into the smallest power-of-two atlas that holds them, then cropped
to the grid cells they use.

The crop: WebGL2 and OpenGL 3.3 take textures of any size, and the texture is memory the window holds for as
long as she is on screen (the default atlas 2048x2048 -> 1920x1408: 21 -> 14 MiB with its mip levels, in the
web process on software GL). Cropped on the `GRID`, every mip level up to 4 is the uncropped one's, texel for
texel (each level halves an even size), so she is drawn as before.
"""

from __future__ import annotations

from dataclasses import dataclass

GRID = 16  # 2 ** the coarsest mip level the renderers use (builder.MAX_MIP_LEVEL)


@dataclass(frozen=True)
class Item:
    key: str
    w: int
    h: int


def atlas_sizes(max_size: int) -> list[tuple[int, int]]:
    """Candidate atlas sizes, smallest area first: square, or twice as wide as tall."""
    sizes = []
    s = 64
    while s <= max_size:
        sizes += [(s, s // 2), (s, s)]
        s *= 2
    return sizes[1:]


def pack(
    items: list[Item], gutter: int, max_size: int
) -> tuple[tuple[int, int], dict[str, tuple[int, int]]] | None:
    """Top-left of each item's cell (inside its gutter), or None if nothing up to ``max_size`` fits."""
    order = sorted(items, key=lambda it: (-it.h, -it.w))  # stable: ties keep the caller's order
    for width, height in atlas_sizes(max_size):
        placed = _shelves(order, gutter, width, height)
        if placed is not None:
            right = max(placed[it.key][0] + it.w + gutter for it in order)
            bottom = max(placed[it.key][1] + it.h + gutter for it in order)
            return (_on_grid(right), _on_grid(bottom)), placed
    return None


def _on_grid(extent: int) -> int:
    return -(-extent // GRID) * GRID


def _shelves(items: list[Item], gutter: int, width: int, height: int) -> dict[str, tuple[int, int]] | None:
    x = y = shelf_h = 0
    out = {}
    for it in items:
        w, h = it.w + 2 * gutter, it.h + 2 * gutter
        if w > width:
            return None
        if x + w > width:
            x, y, shelf_h = 0, y + shelf_h, 0
        if y + h > height:
            return None
        out[it.key] = (x + gutter, y + gutter)
        x += w
        shelf_h = max(shelf_h, h)
    return out
