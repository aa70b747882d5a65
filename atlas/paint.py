"""Supersampled vector drawing on Pillow: smooth shapes, limbs and soft shading.

Everything is drawn at ``SS``× the cell size and box-reduced at the end, which is what gives the
procedural art anti-aliased edges without any hand-made textures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

SS = 4
Point = tuple[float, float]
Color = tuple[int, int, int] | tuple[int, int, int, int]


def smooth(points: Sequence[Point], closed: bool = True, steps: int = 10) -> list[Point]:
    """Catmull-Rom curve through the control points, so a shape needs only a handful of them."""
    pts = list(points)
    n = len(pts)
    out: list[Point] = []
    segments = n if closed else n - 1
    for i in range(segments):
        p0 = pts[(i - 1) % n] if closed or i > 0 else pts[0]
        p1, p2 = pts[i], pts[(i + 1) % n]
        p3 = pts[(i + 2) % n] if closed or i + 2 < n else pts[-1]
        for s in range(steps):
            t = s / steps
            t2, t3 = t * t, t * t * t
            out.append(
                tuple(  # type: ignore[arg-type]
                    0.5
                    * (
                        2 * p1[k]
                        + (-p0[k] + p2[k]) * t
                        + (2 * p0[k] - 5 * p1[k] + 4 * p2[k] - p3[k]) * t2
                        + (-p0[k] + 3 * p1[k] - 3 * p2[k] + p3[k]) * t3
                    )
                    for k in (0, 1)
                )
            )
    if not closed:
        out.append(pts[-1])
    return out


def ellipse(cx: float, cy: float, rx: float, ry: float, n: int = 64) -> list[Point]:
    return [
        (cx + rx * math.cos(2 * math.pi * i / n), cy + ry * math.sin(2 * math.pi * i / n)) for i in range(n)
    ]


def limb(path: Sequence[Point], widths: Sequence[float], steps: int = 8) -> list[Point]:
    """Outline of a tapered stroke along ``path`` (shoulder→elbow→wrist), with rounded ends."""
    centre = smooth(path, closed=False, steps=steps)
    w = np.interp(np.linspace(0, len(widths) - 1, len(centre)), np.arange(len(widths)), widths)
    left, right = [], []
    for i, (x, y) in enumerate(centre):
        a = centre[max(i - 1, 0)]
        b = centre[min(i + 1, len(centre) - 1)]
        dx, dy = b[0] - a[0], b[1] - a[1]
        norm = math.hypot(dx, dy) or 1.0
        nx, ny = -dy / norm * w[i] / 2, dx / norm * w[i] / 2
        left.append((x + nx, y + ny))
        right.append((x - nx, y - ny))
    end_cap = _cap(centre[-1], centre[-2], w[-1] / 2)
    start_cap = _cap(centre[0], centre[1], w[0] / 2)
    return left + end_cap + right[::-1] + start_cap


def _cap(tip: Point, before: Point, r: float) -> list[Point]:
    ang = math.atan2(tip[1] - before[1], tip[0] - before[0])
    return [
        (tip[0] + r * math.cos(ang + a), tip[1] + r * math.sin(ang + a))
        for a in np.linspace(-math.pi / 2, math.pi / 2, 9)[1:-1][::-1]
    ]


def mirror(points: Sequence[Point], cx: float) -> list[Point]:
    return [(2 * cx - x, y) for x, y in points]


def shade(color: Color, k: float) -> tuple[int, int, int]:
    """Darken (k < 1) or lighten (k > 1, toward white) a colour: outlines and highlights of a fill."""
    r, g, b = color[:3]
    if k <= 1:
        return (round(r * k), round(g * k), round(b * k))
    t = k - 1
    return (round(r + (255 - r) * t), round(g + (255 - g) * t), round(b + (255 - b) * t))


class Canvas:
    """One cell-sized RGBA layer, drawn supersampled."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.size = size
        self.img = Image.new("RGBA", (size[0] * SS, size[1] * SS), (0, 0, 0, 0))
        self._draw = ImageDraw.Draw(self.img)

    def fill(self, pts: Sequence[Point], color: Color, line: Color | None = None, width: float = 2.2) -> None:
        """Filled shape with a coloured outline (a darker tone of the fill reads softer than black)."""
        scaled = [(x * SS, y * SS) for x, y in pts]
        self._draw.polygon(scaled, fill=_rgba(color))
        if line is not None:
            self.stroke(list(pts) + [pts[0]], line, width)

    def stroke(self, pts: Sequence[Point], color: Color, width: float = 2.2) -> None:
        """Polyline with round joins and caps."""
        w = max(1, round(width * SS))
        scaled = [(x * SS, y * SS) for x, y in pts]
        self._draw.line(scaled, fill=_rgba(color), width=w, joint="curve")
        r = w / 2
        for x, y in (scaled[0], scaled[-1]):
            self._draw.ellipse((x - r, y - r, x + r, y + r), fill=_rgba(color))

    def paste(self, layer: Image.Image) -> None:
        """Composite a full-resolution (SS×) RGBA image over this canvas."""
        self.img.alpha_composite(layer)

    def clip_to(self, mask: Image.Image) -> None:
        """Keep only what lies inside ``mask`` (SS resolution), e.g. patterns printed on cloth."""
        a = np.asarray(self.img.getchannel("A"), np.uint16) * np.asarray(mask, np.uint16) // 255
        self.img.putalpha(Image.fromarray(a.astype(np.uint8)))

    def result(self) -> Image.Image:
        """The cell-sized layer; a premultiplied box reduce, so edges get no dark fringe."""
        return self.img.resize(self.size, Image.Resampling.BOX)


def shape_mask(size: tuple[int, int], shapes: Sequence[Sequence[Point]], hi: bool = False) -> Image.Image:
    """Coverage mask of the union of shapes, at SS resolution (``hi``) or at cell resolution."""
    m = Image.new("L", (size[0] * SS, size[1] * SS), 0)
    d = ImageDraw.Draw(m)
    for pts in shapes:
        d.polygon([(x * SS, y * SS) for x, y in pts], fill=255)
    return m if hi else m.resize(size, Image.Resampling.BOX)


def _rgba(c: Color) -> tuple[int, int, int, int]:
    return (c[0], c[1], c[2], c[3] if len(c) == 4 else 255)


def _shift(a: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """``out[y, x] = a[y + dy, x + dx]``, zero outside."""
    out = np.zeros_like(a)
    h, w = a.shape
    ys, yd = (slice(dy, h), slice(0, h - dy)) if dy >= 0 else (slice(0, h + dy), slice(-dy, h))
    xs, xd = (slice(dx, w), slice(0, w - dx)) if dx >= 0 else (slice(0, w + dx), slice(-dx, w))
    out[yd, xd] = a[ys, xs]
    return out


def blur(a: np.ndarray, radius: float) -> np.ndarray:
    img = Image.fromarray(np.clip(a * 255, 0, 255).astype(np.uint8))
    return np.asarray(img.filter(ImageFilter.GaussianBlur(radius)), np.float32) / 255


def as_float(mask: Image.Image) -> np.ndarray:
    return np.asarray(mask, np.float32) / 255


def form_shadow(mask: np.ndarray, offset: tuple[int, int] = (5, 7), radius: float = 6) -> np.ndarray:
    """Soft shadow along the edges of a shape facing away from a light at the top left."""
    return mask * (1 - blur(_shift(mask, offset[0], offset[1]), radius))


def cast_shadow(
    caster: np.ndarray, receiver: np.ndarray, offset: tuple[int, int], radius: float
) -> np.ndarray:
    """Shadow that ``caster`` (e.g. the head) throws onto ``receiver`` (e.g. the collar) just below it."""
    return receiver * (1 - caster) * blur(_shift(caster, -offset[0], -offset[1]), radius)


def shading_layer(alpha: np.ndarray, color: Color) -> Image.Image:
    """A translucent shading layer in ``color`` with the given coverage (0..1)."""
    h, w = alpha.shape
    out = np.zeros((h, w, 4), np.uint8)
    out[..., :3] = color[:3]
    out[..., 3] = np.clip(alpha * 255 + 0.5, 0, 255).astype(np.uint8)
    return Image.fromarray(out, "RGBA")
