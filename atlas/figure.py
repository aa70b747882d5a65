"""The default character's shared layers: back hair, body with face, and the two face variants.

Coordinates are pixels of the 448×672 cell; ``paint`` scales them up for supersampling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFilter

from atlas import palette as P
from atlas.paint import (
    SS,
    Canvas,
    as_float,
    cast_shadow,
    ellipse,
    form_shadow,
    limb,
    mirror,
    shade,
    shading_layer,
    shape_mask,
    smooth,
)

CELL = (448, 672)
CX = CELL[0] / 2
# Face regions (x, y, w, h), multiples of 16 so the overlay cells share the body's mip grid.
EYES_REGION = (160, 160, 128, 64)
MOUTH_REGION = (192, 224, 64, 48)

EYE_L = (190.0, 198.0)
EYE_R = (258.0, 198.0)
MOUTH_AT = (224.0, 244.0)

FACE = smooth(
    [
        (142, 178),
        (150, 128),
        (188, 102),
        (224, 97),
        (260, 102),
        (298, 128),
        (306, 178),
        (301, 222),
        (282, 256),
        (252, 276),
        (224, 282),
        (196, 276),
        (166, 256),
        (147, 222),
    ]
)
NECK = [(207, 250), (241, 250), (243, 306), (205, 306)]
TORSO = smooth(
    [
        (206, 298),
        (242, 298),
        (272, 305),
        (283, 320),
        (279, 352),
        (268, 392),
        (272, 424),
        (276, 452),
        (224, 462),
        (172, 452),
        (176, 424),
        (180, 392),
        (169, 352),
        (165, 320),
        (176, 305),
    ]
)
ARM_L = [(176, 318), (160, 392), (152, 456)]
ARM_R = mirror(ARM_L, CX)
ARM_W = [32, 26, 22]
LEG_L = [(204, 440), (202, 540), (204, 612)]
LEG_R = mirror(LEG_L, CX)
LEG_W = [46, 31, 23]


def hand(side: int) -> list[tuple[float, float]]:
    x = 150 if side < 0 else 2 * CX - 150
    return ellipse(x, 472, 13, 16)


def foot(side: int) -> list[tuple[float, float]]:
    x = 200 if side < 0 else 2 * CX - 200
    return ellipse(x + 4 * side, 624, 19, 11)


def arm(side: int) -> list[tuple[float, float]]:
    return limb(ARM_L if side < 0 else ARM_R, ARM_W)


def leg(side: int) -> list[tuple[float, float]]:
    return limb(LEG_L if side < 0 else LEG_R, LEG_W)


def along(path: list[tuple[float, float]], t: float) -> tuple[float, float]:
    """Point at fraction ``t`` of a two-segment limb path (0 = shoulder/hip, 1 = wrist/ankle)."""
    seg = 0 if t <= 0.5 else 1
    u = t * 2 - seg
    (x0, y0), (x1, y1) = path[seg], path[seg + 1]
    return (x0 + (x1 - x0) * u, y0 + (y1 - y0) * u)


BACK_HAIR = smooth(
    [
        (130, 196),
        (128, 128),
        (156, 86),
        (200, 66),
        (248, 66),
        (292, 86),
        (320, 128),
        (318, 196),
        (324, 262),
        (334, 314),
        (316, 338),
        (288, 330),
        (224, 318),
        (160, 330),
        (132, 338),
        (114, 314),
        (124, 262),
    ]
)
FRONT_HAIR = smooth(
    [
        (134, 200),
        (132, 134),
        (160, 92),
        (204, 72),
        (248, 72),
        (290, 92),
        (316, 134),
        (314, 200),
        (312, 252),
        (318, 300),
        (298, 272),
        (292, 214),
        (286, 172),
        (276, 156),
        (262, 168),
        (248, 150),
        (230, 166),
        (212, 150),
        (196, 164),
        (180, 152),
        (166, 176),
        (156, 214),
        (150, 272),
        (130, 300),
        (136, 252),
    ],
    steps=8,
)
AHOGE = limb([(222, 76), (230, 50), (252, 44)], [8, 5, 2])


@dataclass(frozen=True)
class BaseLayers:
    back: Image.Image
    body: Image.Image
    eyes_closed: Image.Image
    mouth_open: Image.Image


def line(color: tuple[int, int, int]) -> tuple[int, int, int]:
    """Outline tone for a fill: darker and a little toward the shared ink, so it reads soft."""
    r, g, b = shade(color, 0.62)
    return ((r * 3 + P.LASH[0]) // 4, (g * 3 + P.LASH[1]) // 4, (b * 3 + P.LASH[2]) // 4)


def draw_base() -> BaseLayers:
    back = Canvas(CELL)
    back.fill(BACK_HAIR, P.HAIR_DARK, P.HAIR_LINE, 2.4)
    for x0, x1 in ((150, 142), (298, 306)):
        back.stroke(
            smooth([(x0, 250), (x1, 300), (x1 - (8 if x0 < CX else -8), 326)], closed=False),
            shade(P.HAIR_DARK, 0.8),
            2.0,
        )

    open_face = _body(eyes_open=True, mouth_open=False)
    closed = _body(eyes_open=False, mouth_open=False)
    talking = _body(eyes_open=True, mouth_open=True)
    return BaseLayers(
        back=back.result(),
        body=open_face,
        eyes_closed=_region_only(closed, EYES_REGION),
        mouth_open=_region_only(talking, MOUTH_REGION),
    )


def _region_only(img: Image.Image, region: tuple[int, int, int, int]) -> Image.Image:
    x, y, w, h = region
    out = Image.new("RGBA", img.size, (0, 0, 0, 0))
    out.paste(img.crop((x, y, x + w, y + h)), (x, y))
    return out


def _body(eyes_open: bool, mouth_open: bool) -> Image.Image:
    c = Canvas(CELL)
    skin_line = P.SKIN_LINE
    for side in (-1, 1):
        c.fill(leg(side), P.SKIN, skin_line)
        c.fill(foot(side), P.SKIN, skin_line)
    c.fill(NECK, P.SKIN, skin_line)
    c.fill(TORSO, P.SKIN, skin_line)
    for side in (-1, 1):
        c.fill(arm(side), P.SKIN, skin_line)
        c.fill(hand(side), P.SKIN, skin_line)
    c.fill(FACE, P.SKIN, skin_line, 2.4)

    # Blush: soft, so it is blurred on its own layer first.
    blush = Canvas(CELL)
    for x in (168, 280):
        blush.fill(ellipse(x, 238, 16, 8), (*P.BLUSH, 120))
    c.paste(blush.img.filter(ImageFilter.GaussianBlur(4 * SS)))

    for (cx, cy), side in ((EYE_L, -1), (EYE_R, 1)):
        (_eye if eyes_open else _closed_eye)(c, cx, cy, side)
    (_open_mouth if mouth_open else _smile)(c)

    c.fill(FRONT_HAIR, P.HAIR, P.HAIR_LINE, 2.4)
    c.fill(AHOGE, P.HAIR, P.HAIR_LINE, 2.0)
    _hair_shine(c)
    _star(c, 296, 126, 15, -12)

    body = c.result()
    _shade_body(body)
    return body


def _eye(c: Canvas, cx: float, cy: float, side: int) -> None:
    eye = Canvas(CELL)
    white = ellipse(cx, cy + 2, 18, 21)
    eye.fill(white, P.EYE_WHITE)
    eye.fill(ellipse(cx - side, cy + 4, 14.5, 18.5), P.IRIS_DARK)
    eye.fill(ellipse(cx - side, cy + 9, 11.5, 12.5), P.IRIS)
    eye.fill(ellipse(cx - side, cy + 14, 8, 6), P.IRIS_LIGHT)
    eye.fill(ellipse(cx - side, cy + 5, 6.5, 8.5), P.PUPIL)
    eye.clip_to(shape_mask(CELL, [white], hi=True))
    c.paste(eye.img)
    c.fill(ellipse(cx - 5 - side, cy - 3, 5.5, 6.5), P.EYE_WHITE)
    c.fill(ellipse(cx + 6 - side, cy + 12, 2.6, 2.6), P.EYE_WHITE)
    # Upper lash: hugs the top of the eye, thin at the nose and heavier at the outer corner, with a flick.
    degrees = np.linspace(208, 332, 9)[::side]
    arc = [(cx + 19 * np.cos(np.deg2rad(a)), cy + 1 + 22 * np.sin(np.deg2rad(a))) for a in degrees]
    c.fill(limb(arc, [1.6, 3.4, 4.4, 5.0]), P.LASH)
    c.fill(limb([arc[-1], (arc[-1][0] + 6 * side, arc[-1][1] - 5)], [3.4, 1.2]), P.LASH)
    c.stroke(
        smooth(
            [(cx - 8 * side, cy + 24), (cx + 4 * side, cy + 24.5), (cx + 11 * side, cy + 22)], closed=False
        ),
        (*P.SKIN_LINE, 200),
        1.5,
    )


def _closed_eye(c: Canvas, cx: float, cy: float, side: int) -> None:
    c.fill(limb([(cx - 17 * side, cy + 3), (cx, cy + 11), (cx + 18 * side, cy + 3)], [1.6, 4.0, 4.4]), P.LASH)
    c.fill(limb([(cx + 16 * side, cy + 4), (cx + 22 * side, cy)], [3.0, 1.2]), P.LASH)


def _smile(c: Canvas) -> None:
    x, y = MOUTH_AT
    c.stroke(smooth([(x - 10, y - 2), (x, y + 4), (x + 10, y - 2)], closed=False), P.MOUTH, 2.6)


def _open_mouth(c: Canvas) -> None:
    x, y = MOUTH_AT
    shape = smooth(
        [(x - 13, y - 4), (x, y - 2), (x + 13, y - 4), (x + 10, y + 8), (x, y + 14), (x - 10, y + 8)]
    )
    inner = Canvas(CELL)
    inner.fill(shape, P.MOUTH_DARK)
    inner.fill(ellipse(x, y + 13, 9, 6), P.TONGUE)
    inner.clip_to(shape_mask(CELL, [shape], hi=True))
    c.paste(inner.img)
    c.stroke(shape + [shape[0]], P.MOUTH, 2.0)


def _hair_shine(c: Canvas) -> None:
    shine = Canvas(CELL)
    band = smooth(
        [
            (160, 112),
            (190, 92),
            (224, 86),
            (258, 92),
            (288, 112),
            (280, 120),
            (256, 104),
            (224, 99),
            (192, 104),
            (168, 120),
        ]
    )
    shine.fill(band, (*P.HAIR_LIGHT, 190))
    shine.clip_to(shape_mask(CELL, [FRONT_HAIR], hi=True))
    c.paste(shine.img)


def _star(c: Canvas, cx: float, cy: float, r: float, rot_deg: float) -> None:
    a0 = np.deg2rad(rot_deg) - np.pi / 2
    pts = [
        (
            cx + (r if i % 2 == 0 else r * 0.45) * np.cos(a0 + i * np.pi / 5),
            cy + (r if i % 2 == 0 else r * 0.45) * np.sin(a0 + i * np.pi / 5),
        )
        for i in range(10)
    ]
    c.fill(pts, P.GOLD, P.GOLD_LINE, 2.0)
    c.fill(ellipse(cx - r * 0.2, cy - r * 0.2, r * 0.16, r * 0.16), shade(P.GOLD, 1.7))


def _shade_body(body: Image.Image) -> None:
    """Bakes the skin's own soft shading: hair onto the forehead, chin onto the neck, limb edges."""
    face = as_float(shape_mask(CELL, [FACE]))
    hair = as_float(shape_mask(CELL, [FRONT_HAIR]))
    neck = as_float(shape_mask(CELL, [NECK]))
    torso = as_float(shape_mask(CELL, [TORSO]))
    arms = [as_float(shape_mask(CELL, [arm(s)])) for s in (-1, 1)]
    legs = [as_float(shape_mask(CELL, [leg(s)])) * (1 - torso) for s in (-1, 1)]
    alpha = 0.22 * cast_shadow(hair, face, (0, 5), 4) + 0.35 * cast_shadow(face, neck, (0, 10), 5)
    for m in arms + legs:
        alpha = np.maximum(alpha, 0.25 * form_shadow(m, (5, 2), 5))
    body.alpha_composite(shading_layer(np.clip(alpha, 0, 1), P.SHADOW))
