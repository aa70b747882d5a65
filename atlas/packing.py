"""Deterministic shelf packing of cells into the smallest power-of-two atlas that holds them."""

from __future__ import annotations

from dataclasses import dataclass


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
            return (width, height), placed
    return None


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
