"""The eight default outfits, each as outfit + accessories + shading layers over the shared body."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from atlas import figure as F
from atlas import palette as P
from atlas.paint import (
    Canvas,
    Point,
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

CELL = F.CELL
CX = F.CX
line = F.line


@dataclass
class Piece:
    mask: np.ndarray
    strength: float


@dataclass
class Dresser:
    """Draws garment pieces and remembers their silhouettes, so the shading layer can be derived."""

    cloth: Canvas = field(default_factory=lambda: Canvas(CELL))
    acc: Canvas = field(default_factory=lambda: Canvas(CELL))
    pieces: list[Piece] = field(default_factory=list)

    def piece(
        self,
        pts: list[Point],
        color,
        *,
        acc: bool = False,
        width: float = 2.2,
        strength: float = 0.3,
        outline=None,
    ) -> list[Point]:
        (self.acc if acc else self.cloth).fill(pts, color, outline or line(color), width)
        self.pieces.append(Piece(as_float(shape_mask(CELL, [pts])), strength))
        return pts

    def detail(self, pts: list[Point], color, width: float = 1.8, acc: bool = False) -> None:
        (self.acc if acc else self.cloth).stroke(pts, color, width)

    def dot(self, x: float, y: float, r: float, color, acc: bool = False, outline=None) -> None:
        (self.acc if acc else self.cloth).fill(ellipse(x, y, r, r, 24), color, outline, 1.2)

    def pattern(self, shapes: list[list[Point]], draw: Callable[[Canvas], None]) -> None:
        """Print a motif on cloth: drawn freely, then clipped to the garment's silhouette."""
        print_ = Canvas(CELL)
        draw(print_)
        print_.clip_to(shape_mask(CELL, shapes, hi=True))
        self.cloth.paste(print_.img)

    def shading(self) -> Image.Image:
        """Form shadows on each piece plus the shadows each piece casts on what lies beneath it."""
        head = as_float(shape_mask(CELL, [F.FACE, F.FRONT_HAIR]))
        skin = [as_float(shape_mask(CELL, [F.leg(s), F.arm(s), F.NECK])) for s in (-1, 1)]
        under = np.maximum(skin[0], skin[1])
        above_all = [np.zeros_like(head)]
        for p in reversed(self.pieces):
            above_all.append(np.maximum(above_all[-1], p.mask))
        above_all = above_all[::-1][1:]
        alpha = np.zeros_like(head)
        for p, above in zip(self.pieces, above_all, strict=True):
            visible = 1 - above
            alpha = np.maximum(alpha, p.strength * form_shadow(p.mask) * p.mask * visible)
            alpha = np.maximum(alpha, 0.3 * cast_shadow(p.mask, under, (2, 5), 3) * visible)
            under = np.maximum(under, p.mask)
        alpha = np.maximum(alpha, 0.3 * cast_shadow(head, under, (0, 9), 6))
        return shading_layer(np.clip(alpha, 0, 0.6), P.SHADOW)


# ---- garment shapes -------------------------------------------------------------------------------


def top(hem_y: float, hem_half: float, neck_depth: float, waist_half: float = 44) -> list[Point]:
    return smooth(
        [
            (205, 295),
            (224, 295 + neck_depth),
            (243, 295),
            (276, 303),
            (289, 322),
            (283, 356),
            (CX + waist_half, 394),
            (CX + hem_half, hem_y),
            (CX, hem_y + 3),
            (CX - hem_half, hem_y),
            (CX - waist_half, 394),
            (165, 356),
            (159, 322),
            (172, 303),
        ],
        steps=8,
    )


def sleeve(side: int, t_end: float, widths: list[float]) -> list[Point]:
    path = [(178, 314), F.ARM_L[1], F.ARM_L[2]]
    end = F.along(path, t_end)
    pts = [path[0], end] if t_end <= 0.5 else [path[0], path[1], end]
    shape = limb(pts, widths)
    return shape if side < 0 else mirror(shape, CX)


def pant_leg(side: int, t_end: float, widths: list[float]) -> list[Point]:
    path = F.LEG_L
    end = F.along(path, t_end)
    pts = [(206, 432), end] if t_end <= 0.5 else [(206, 432), path[1], end]
    shape = limb(pts, widths)
    return shape if side < 0 else mirror(shape, CX)


def skirt(top_y: float, hem_y: float, top_half: float, hem_half: float, waves: int = 5) -> list[Point]:
    hem = []
    for i in range(waves * 2 + 1):
        t = i / (waves * 2)
        x = CX + hem_half - 2 * hem_half * t
        hem.append((x, hem_y + (4 if i % 2 else -2) + 6 * np.sin(np.pi * t)))
    return smooth(
        [
            (CX - top_half, top_y),
            (CX, top_y + 2),
            (CX + top_half, top_y),
            (CX + (top_half + hem_half) / 2 + 4, (top_y + hem_y) / 2),
        ]
        + hem
        + [(CX - (top_half + hem_half) / 2 - 4, (top_y + hem_y) / 2)],
        steps=6,
    )


def hips(bottom: float = 476) -> list[Point]:
    return smooth(
        [
            (179, 408),
            (224, 404),
            (269, 408),
            (272, 452),
            (250, bottom),
            (224, bottom + 4),
            (198, bottom),
            (176, 452),
        ]
    )


def foot_x(side: int) -> float:
    return CX + side * 24 + 4 * side


def shoe(side: int, rx: float = 22, ry: float = 13, y: float = 622) -> list[Point]:
    return ellipse(foot_x(side), y, rx, ry)


def star(cx: float, cy: float, r: float, rot: float = 0.0) -> list[Point]:
    a0 = np.deg2rad(rot) - np.pi / 2
    return [
        (
            cx + (r if i % 2 == 0 else r * 0.46) * np.cos(a0 + i * np.pi / 5),
            cy + (r if i % 2 == 0 else r * 0.46) * np.sin(a0 + i * np.pi / 5),
        )
        for i in range(10)
    ]


def hand_cover(d: Dresser, color, rx: float = 15, ry: float = 17) -> None:
    for side in (-1, 1):
        x = 150 if side < 0 else 2 * CX - 150
        d.piece(ellipse(x, 472, rx, ry), color)


# ---- outfits ------------------------------------------------------------------------------------


def hoodie() -> Dresser:
    d = Dresser()
    for side in (-1, 1):
        d.piece(pant_leg(side, 0.97, [54, 40, 34]), P.DENIM)
        d.detail(
            smooth([(CX + side * 14, 470), (CX + side * 17, 540), (CX + side * 18, 600)], closed=False),
            shade(P.DENIM, 0.8),
            1.5,
        )
    d.piece(hips(), P.DENIM)
    for side in (-1, 1):
        d.piece(shoe(side, 23, 14), P.WHITE)
        d.detail(
            smooth([(foot_x(side) - 12, 620), (foot_x(side), 614), (foot_x(side) + 12, 620)], closed=False),
            P.TEAL,
            3.0,
        )
        d.detail([(foot_x(side) - 21, 628), (foot_x(side) + 21, 628)], P.GREY, 2.0)
    d.piece(top(456, 66, 14, 52), P.TEAL)
    d.piece(
        smooth([(176, 440), (224, 446), (272, 440), (276, 458), (224, 462), (172, 458)]), shade(P.TEAL, 0.9)
    )
    d.piece(
        smooth([(192, 396), (256, 396), (266, 436), (182, 436)], steps=3), shade(P.TEAL, 1.08), strength=0.2
    )
    d.piece(smooth([(194, 292), (224, 304), (254, 292), (266, 304), (224, 322), (182, 304)]), P.MINT)
    for x0, x1 in ((214, 211), (234, 237)):
        d.detail([(x0, 316), (x1 + (x1 - x0) * 0.5, 356)], P.WHITE, 2.4)
        d.dot(x1 + (x1 - x0) * 0.5, 360, 3.2, P.WHITE, outline=P.GREY)
    for side in (-1, 1):
        d.piece(sleeve(side, 0.92, [42, 34, 32]), P.TEAL)
        cuff = F.along(F.ARM_L, 0.86)
        cx = cuff[0] if side < 0 else 2 * CX - cuff[0]
        d.piece(ellipse(cx, cuff[1] + 2, 17, 9), shade(P.TEAL, 0.9))
    # A gold star pin on the chest.
    d.piece(star(252, 350, 9, 8), P.GOLD, acc=True, strength=0.05)
    d.dot(250, 348, 2.0, shade(P.GOLD, 1.6), acc=True)
    return d


def red_dress() -> Dresser:
    d = Dresser()
    for side in (-1, 1):
        d.piece(shoe(side, 21, 12), P.WINE)
        d.detail([(foot_x(side) - 12, 612), (foot_x(side) + 12, 612)], shade(P.WINE, 0.7), 2.6)
    sk = d.piece(skirt(386, 528, 44, 104), P.RED, strength=0.35)
    for x in (-64, -30, 6, 40, 74):
        d.detail(
            smooth([(CX + x * 0.35, 396), (CX + x * 0.75, 470), (CX + x * 1.05, 524)], closed=False),
            shade(P.RED, 0.8),
            1.6,
        )
    d.pattern(
        [sk],
        lambda c: c.fill(
            smooth([(100, 512), (348, 512), (348, 560), (100, 560)], steps=2), shade(P.RED, 0.88)
        ),
    )
    d.piece(top(396, 44, 18, 42), P.RED)
    d.piece(smooth([(180, 380), (224, 384), (268, 380), (268, 398), (224, 402), (180, 398)], steps=4), P.WINE)
    for side in (-1, 1):
        d.piece(sleeve(side, 0.26, [50, 44]), P.RED)
        d.detail(
            smooth([(CX + side * 60, 352), (CX + side * 72, 350), (CX + side * 82, 344)], closed=False),
            shade(P.RED, 0.75),
            1.6,
        )
    # Ribbon bow in the hair and a small gold heart pendant.
    for side in (-1, 1):
        d.piece(
            smooth([(160, 104), (160 + side * 26, 84), (160 + side * 30, 110), (160 + side * 6, 112)]),
            P.RED,
            acc=True,
        )
    d.piece(ellipse(160, 106, 8, 8), P.WINE, acc=True)
    d.detail(smooth([(208, 300), (224, 322), (240, 300)], closed=False), P.GOLD_LINE, 1.4, acc=True)
    heart = smooth([(224, 322), (230, 318), (233, 323), (224, 333), (215, 323), (218, 318)])
    d.piece(heart, P.GOLD, acc=True, strength=0.1)
    return d


def school() -> Dresser:
    d = Dresser()
    for side in (-1, 1):
        sock = [F.along(F.LEG_L if side < 0 else F.LEG_R, t) for t in (0.6, 0.8, 0.98)]
        d.piece(limb(sock, [31, 28, 25]), P.NAVY)
        d.piece(shoe(side, 22, 13), P.BROWN)
        d.detail([(foot_x(side) - 10, 614), (foot_x(side) + 10, 614)], shade(P.BROWN, 0.7), 2.0)
    sk = d.piece(skirt(396, 506, 46, 88, waves=7), P.NAVY, strength=0.35)
    d.pattern(
        [sk],
        lambda c: [
            c.stroke([(CX + x * 0.5, 400), (CX + x, 512)], shade(P.NAVY, 0.7), 1.6)
            for x in range(-80, 81, 20)
        ],
    )
    d.piece(top(412, 52, 30, 44), P.WHITE)
    collar = smooth(
        [
            (170, 306),
            (200, 294),
            (224, 356),
            (248, 294),
            (278, 306),
            (286, 330),
            (250, 326),
            (224, 372),
            (198, 326),
            (162, 330),
        ],
        steps=6,
    )
    d.piece(collar, P.NAVY)
    for side in (-1, 1):
        d.detail(smooth([(CX + side * 28, 304), (CX + side * 8, 350), (CX, 360)], closed=False), P.WHITE, 1.6)
        d.piece(sleeve(side, 0.9, [40, 33, 31]), P.WHITE)
        cuff = F.along(F.ARM_L, 0.86)
        d.piece(ellipse(cuff[0] if side < 0 else 2 * CX - cuff[0], cuff[1] + 2, 16, 8), P.NAVY)
    # Neckerchief bow.
    for side in (-1, 1):
        d.piece(smooth([(224, 356), (224 + side * 22, 344), (224 + side * 24, 368)]), P.RED, acc=True)
        d.piece(
            smooth([(224 + side * 2, 362), (224 + side * 14, 394), (224 + side * 6, 396)]), P.RED, acc=True
        )
    d.piece(ellipse(224, 358, 7, 7), shade(P.RED, 0.85), acc=True)
    return d


def space() -> Dresser:
    d = Dresser()
    for side in (-1, 1):
        d.piece(pant_leg(side, 0.8, [60, 50, 48]), P.WHITE)
        knee = F.along(F.LEG_L, 0.55)
        d.piece(ellipse(knee[0] if side < 0 else 2 * CX - knee[0], knee[1] - 4, 18, 14), P.ORANGE)
        d.piece(
            smooth(
                [
                    (foot_x(side) - 22, 566),
                    (foot_x(side) + 20, 566),
                    (foot_x(side) + 26, 620),
                    (foot_x(side) + 24, 636),
                    (foot_x(side) - 24, 636),
                    (foot_x(side) - 24, 620),
                ],
                steps=4,
            ),
            P.GREY,
        )
        d.detail([(foot_x(side) - 24, 628), (foot_x(side) + 24, 628)], P.SLATE, 2.4)
    d.piece(hips(480), P.WHITE)
    d.piece(top(466, 68, 4, 58), P.WHITE)
    d.piece(
        smooth([(176, 436), (224, 442), (272, 436), (272, 454), (224, 460), (176, 454)], steps=4), P.SLATE
    )
    d.piece(smooth([(196, 350), (252, 350), (254, 396), (194, 396)], steps=2), P.GREY, width=2.0)
    for i, col in enumerate((P.RED, P.TEAL, P.GOLD)):
        d.dot(208 + i * 16, 366, 4.5, col, outline=line(col))
    d.detail([(204, 384), (244, 384)], P.SLATE, 3.0)
    d.piece(star(262, 324, 9), P.GOLD, strength=0.05)
    for side in (-1, 1):
        d.piece(sleeve(side, 0.86, [48, 42, 40]), P.WHITE)
        elbow = F.ARM_L[1]
        d.piece(ellipse(elbow[0] if side < 0 else 2 * CX - elbow[0], elbow[1], 23, 9), P.ORANGE)
    hand_cover(d, P.GREY, 17, 19)
    d.piece(smooth([(180, 296), (224, 286), (268, 296), (270, 312), (224, 320), (178, 312)]), P.SLATE)
    # Bubble helmet: tinted glass with a rim and glints.
    glass = ellipse(224, 186, 150, 156, 96)
    d.acc.fill(glass, (*P.SKY, 60), (*shade(P.SKY, 1.3), 220), 3.0)
    d.acc.stroke(smooth([(120, 150), (140, 104), (180, 70)], closed=False), (255, 255, 255, 200), 7)
    d.acc.stroke(smooth([(328, 240), (318, 276), (296, 302)], closed=False), (255, 255, 255, 140), 4)
    return d


def pyjamas() -> Dresser:
    d = Dresser()

    def stars(c: Canvas) -> None:
        for j, y in enumerate(range(300, 640, 34)):
            for x in range(150 + (j % 2) * 20, 310, 40):
                c.fill(star(x, y, 6, (x * 7 + y) % 40), P.WHITE)

    legs = [d.piece(pant_leg(side, 0.94, [56, 42, 38]), P.SKY) for side in (-1, 1)]
    hp = d.piece(hips(), P.SKY)
    d.pattern(legs + [hp], stars)
    for side in (-1, 1):
        x = foot_x(side)
        for ex in (-9, 9):
            d.piece(ellipse(x + ex, 600, 6, 14), P.PINK)
            d.detail([(x + ex, 592), (x + ex, 606)], shade(P.PINK, 0.85), 3)
        d.piece(ellipse(x, 622, 26, 16), P.PINK)
        d.dot(x - 7, 618, 2.2, P.LASH)
        d.dot(x + 7, 618, 2.2, P.LASH)
    body = d.piece(top(452, 64, 26, 52), P.SKY)
    d.pattern([body], stars)
    for y in range(336, 446, 26):
        d.dot(CX, y, 3.6, P.WHITE, outline=line(P.SKY))
    for side in (-1, 1):
        sl = d.piece(sleeve(side, 0.92, [42, 35, 33]), P.SKY)
        d.pattern([sl], stars)
        cuff = F.along(F.ARM_L, 0.87)
        d.piece(ellipse(cuff[0] if side < 0 else 2 * CX - cuff[0], cuff[1] + 2, 17, 8), P.WHITE)
        d.piece(
            smooth(
                [(CX + side * 2, 324), (CX + side * 20, 294), (CX + side * 44, 300), (CX + side * 30, 318)]
            ),
            P.WHITE,
        )
    # Nightcap flopping to the side, with a pom-pom.
    cap = smooth(
        [
            (132, 138),
            (150, 90),
            (206, 56),
            (266, 58),
            (318, 86),
            (350, 130),
            (372, 190),
            (356, 196),
            (330, 144),
            (314, 130),
        ],
        steps=8,
    )
    d.piece(cap, P.SKY, acc=True)
    d.piece(
        smooth([(128, 150), (136, 126), (224, 108), (316, 118), (324, 142), (224, 132)]), P.WHITE, acc=True
    )
    d.piece(ellipse(366, 198, 15, 15), P.WHITE, acc=True)
    return d


def formal() -> Dresser:
    d = Dresser()
    for side in (-1, 1):
        d.piece(pant_leg(side, 0.96, [54, 40, 34]), P.CHARCOAL)
        d.detail([(CX + side * 20, 470), (CX + side * 21, 604)], shade(P.CHARCOAL, 1.25), 1.4)
        d.piece(shoe(side, 23, 13), shade(P.CHARCOAL, 0.7))
        d.detail([(foot_x(side) - 12, 616), (foot_x(side) - 2, 614)], (255, 255, 255, 150), 2.4)
    d.piece(hips(), P.CHARCOAL)
    d.piece(top(474, 62, 4, 50), P.CHARCOAL)
    shirt = smooth([(205, 296), (243, 296), (224, 384)], steps=3)
    d.piece(shirt, P.WHITE, strength=0.1)
    for side in (-1, 1):
        lapel = smooth(
            [(CX + side * 19, 296), (CX + side * 40, 312), (CX + side * 30, 330), (CX + side * 2, 386)],
            closed=False,
        ) + [(CX + side * 2, 390), (CX + side * 12, 350), (CX + side * 19, 300)]
        d.piece(lapel, shade(P.CHARCOAL, 0.75), strength=0.15)
        d.piece(sleeve(side, 0.9, [40, 33, 31]), P.CHARCOAL)
        cuff = F.along(F.ARM_L, 0.94)
        d.piece(ellipse(cuff[0] if side < 0 else 2 * CX - cuff[0], cuff[1], 12, 5), P.WHITE)
    for y in (404, 428):
        d.dot(CX, y, 4, shade(P.CHARCOAL, 0.6), outline=shade(P.CHARCOAL, 1.4))
    d.piece(smooth([(246, 344), (266, 340), (264, 350), (248, 352)], steps=2), P.WHITE, strength=0.05)
    # Bow tie and a rose on the lapel.
    for side in (-1, 1):
        d.piece(
            smooth([(224, 306), (224 + side * 20, 296), (224 + side * 20, 318)], steps=4), P.WINE, acc=True
        )
    d.piece(ellipse(224, 307, 6, 6), shade(P.WINE, 0.8), acc=True)
    d.piece(ellipse(196, 334, 8, 8), P.RED, acc=True)
    d.detail(smooth([(192, 333), (197, 330), (200, 336)], closed=False), P.WINE, 1.4, acc=True)
    return d


def hanfu() -> Dresser:
    """古风汉服: a cross-collar wrap top (her left panel over the right, 右衽), wide hanging sleeves, a long
    pleated skirt, a jade sash with a hanging pendant, and a gold hairpin with dangling beads."""
    d = Dresser()
    for side in (-1, 1):  # embroidered shoe tips under the hem
        d.piece(shoe(side, 17, 9, 632), P.WINE)
    sk = d.piece(skirt(384, 618, 50, 104, waves=6), P.ROSE, strength=0.35)
    d.pattern(
        [sk],
        lambda c: (
            c.fill(smooth([(100, 384), (348, 384), (348, 470), (100, 470)], steps=2), shade(P.ROSE, 1.35)),
            c.fill(smooth([(100, 470), (348, 470), (348, 520), (100, 520)], steps=2), shade(P.ROSE, 1.18)),
            c.fill(smooth([(90, 596), (358, 596), (358, 650), (90, 650)], steps=2), P.WINE),
            [c.stroke([(90, y), (358, y)], P.GOLD, 1.6) for y in (592, 600)],
        ),
    )
    for x in range(-84, 85, 21):  # pleats
        d.detail(
            smooth([(CX + x * 0.45, 412), (CX + x * 0.8, 510), (CX + x * 1.08, 600)], closed=False),
            shade(P.ROSE, 0.82),
            1.4,
        )
    d.piece(top(430, 56, 4, 48), P.BLUSH_SILK)
    d.piece(smooth([(206, 292), (242, 292), (226, 356)], steps=3), P.WHITE, strength=0.1)  # the inner robe
    # The cross collar: her right panel's band (the viewer's left) under, her left panel's over it, down to the sash.
    d.piece(limb([(202, 290), (216, 326), (234, 360)], [15, 15, 14]), P.RED, strength=0.15)
    d.piece(limb([(246, 290), (228, 336), (178, 396)], [15, 15, 15]), P.RED, strength=0.15)
    d.detail(smooth([(250, 292), (234, 334), (186, 396)], closed=False), P.GOLD, 1.4)
    for side in (-1, 1):  # wide sleeves hanging below the hands, with red cuff bands
        hang = smooth(
            [(188, 300), (168, 308), (152, 336), (132, 400), (108, 462), (96, 508), (112, 526), (150, 530),
             (182, 516), (190, 472), (192, 412), (196, 352)],
            steps=8,
        )
        sl = d.piece(hang if side < 0 else mirror(hang, CX), P.BLUSH_SILK, strength=0.3)
        band = [(92, 500), (112, 520), (150, 526), (186, 510), (190, 526), (150, 542), (106, 536), (86, 514)]
        d.pattern([sl], lambda c, b=band, s=side: c.fill(smooth(b if s < 0 else mirror(b, CX)), P.RED))
        fold = smooth([(172, 330), (160, 400), (146, 470)], closed=False)
        d.detail(fold if side < 0 else mirror(fold, CX), shade(P.BLUSH_SILK, 0.85), 1.6)
    # The sash, its knot and long ties, and a jade pendant on a red cord with a tassel.
    d.piece(smooth([(174, 380), (224, 384), (274, 380), (276, 410), (224, 414), (172, 410)], steps=4), P.JADE)
    d.detail([(176, 396), (272, 396)], P.GOLD, 1.6)
    for dx in (-10, 10):
        d.piece(limb([(224 + dx * 0.4, 410), (224 + dx, 470), (224 + dx * 1.6, 540)], [12, 11, 10]), P.JADE)
    d.piece(ellipse(224, 404, 11, 9), shade(P.JADE, 0.85))
    d.detail([(262, 412), (264, 470)], P.RED, 2.0, acc=True)
    d.piece(ellipse(264, 478, 9, 9), P.JADE, acc=True, strength=0.1)
    d.dot(264, 478, 3.2, P.WHITE, acc=True)
    for dx in (-3, 0, 3):
        d.detail([(264, 488), (264 + dx, 516)], P.RED, 1.8, acc=True)
    # Hairpin: a gold stick through the hair, a plum blossom, and strings of beads swaying below it.
    d.detail([(120, 88), (186, 128)], P.GOLD_LINE, 4.0, acc=True)
    for i in range(5):
        a = np.deg2rad(i * 72 - 90)
        d.piece(ellipse(146 + 10 * np.cos(a), 100 + 10 * np.sin(a), 8, 8), P.PINK, acc=True, strength=0.05)
    d.dot(146, 100, 4.5, P.GOLD, acc=True, outline=P.GOLD_LINE)
    for x, n in ((138, 3), (150, 4), (162, 3)):
        d.detail([(x, 110), (x, 110 + 12 * n)], P.GOLD_LINE, 1.2, acc=True)
        for k in range(1, n + 1):
            d.dot(x, 110 + 12 * k, 3.0, P.RED if k == n else P.GOLD, acc=True, outline=P.GOLD_LINE)
    return d


def cyberpunk() -> Dresser:
    """赛博朋克: an ink-dark jacket with neon trims over a violet top, boots with glowing soles, a
    see-through visor over the eyes and a hot-pink streak in the hair."""
    d = Dresser()
    glow_cyan = (*P.NEON_CYAN, 90)

    def neon(pts: list[Point], color, width: float = 2.4, acc: bool = False) -> None:
        d.detail(pts, (*color[:3], 80), width * 3, acc)
        d.detail(pts, color, width, acc)

    for side in (-1, 1):
        d.piece(pant_leg(side, 0.86, [56, 40, 34]), shade(P.INK, 1.1))
        neon(smooth([(CX + side * 40, 452), (CX + side * 30, 520), (CX + side * 26, 570)], closed=False),
             P.NEON_PINK, 2.0)
        x = foot_x(side)
        d.piece(smooth([(x - 22, 560), (x + 22, 560), (x + 26, 616), (x + 28, 632), (x - 28, 632), (x - 26, 616)],
                       steps=4), P.INK)
        for y in (578, 596):
            d.detail([(x - 20, y), (x + 20, y)], P.SLATE, 3.0)
        neon([(x - 28, 634), (x + 28, 634)], P.NEON_CYAN, 3.0)
    d.piece(hips(), shade(P.INK, 1.1))
    d.piece(top(452, 64, 4, 54), P.INK)  # the jacket's back and body
    inner = smooth([(210, 298), (238, 298), (244, 440), (204, 440)], steps=2)
    d.piece(inner, (84, 52, 140), strength=0.15)  # the violet top where the jacket is open
    d.pattern([inner], lambda c: (c.stroke([(204, 352), (218, 352), (226, 366), (246, 366)], glow_cyan, 6),
                                  c.stroke([(204, 352), (218, 352), (226, 366), (246, 366)], P.NEON_CYAN, 2),
                                  c.fill(ellipse(224, 400, 6, 6), P.NEON_PINK)))
    for side in (-1, 1):
        edge = smooth([(CX + side * 18, 296), (CX + side * 22, 370), (CX + side * 24, 452)], closed=False)
        neon(edge, P.NEON_CYAN, 2.4)
        collar = [(CX + side * 14, 306), (CX + side * 22, 276), (CX + side * 52, 284), (CX + side * 58, 306)]
        d.piece(smooth(collar), shade(P.INK, 1.25))
        neon(smooth(collar[:3], closed=False), P.NEON_CYAN, 1.8)
        d.piece(sleeve(side, 0.88, [46, 38, 36]), P.INK)
        cuff = F.along(F.ARM_L, 0.84)
        cx = cuff[0] if side < 0 else 2 * CX - cuff[0]
        d.piece(ellipse(cx, cuff[1] + 2, 18, 8), shade(P.INK, 1.3))
        neon([(cx - 15, cuff[1] + 2), (cx + 15, cuff[1] + 2)], P.NEON_PINK, 2.2)
        stripe = smooth([(176, 312), (166, 360), (158, 420)], closed=False)
        neon(stripe if side < 0 else mirror(stripe, CX), P.NEON_CYAN, 1.6)
    neon(smooth([(162, 450), (224, 458), (286, 450)], closed=False), P.NEON_PINK, 2.6)
    # A hot-pink streak through the fringe, and a visor whose tinted glass still shows the eyes.
    streak = limb([(192, 74), (162, 100), (146, 150), (140, 210), (142, 276)], [10, 12, 11, 10, 6])
    d.acc.fill(streak, (*P.NEON_PINK, 215), (*shade(P.NEON_PINK, 0.8), 230), 1.4)
    d.acc.stroke(smooth([(184, 80), (158, 112), (148, 170)], closed=False), (255, 200, 240, 200), 2.0)
    visor = smooth([(138, 178), (224, 172), (310, 178), (312, 206), (224, 218), (136, 206)], steps=6)
    d.acc.fill(visor, (*P.NEON_CYAN, 70), (*P.NEON_CYAN, 230), 2.6)
    d.acc.stroke(smooth([(150, 184), (224, 178), (298, 184)], closed=False), (255, 255, 255, 170), 2.0)
    d.acc.fill(smooth([(300, 176), (318, 178), (320, 210), (300, 208)], steps=2), P.INK, P.NEON_CYAN, 1.6)
    d.dot(310, 194, 3.0, P.NEON_PINK, acc=True)
    return d


@dataclass(frozen=True)
class Outfit:
    id: str
    name: str
    chinese: str  # the button label in Chinese (sidecar.outfit_catalogue adds the other Chinese names)
    draw: Callable[[], Dresser]
    base: tuple[str, ...] = ("back", "body")


OUTFITS = (
    Outfit("hoodie", "Hoodie", "卫衣", hoodie),
    Outfit("red_dress", "Red dress", "红裙子", red_dress),
    Outfit("school", "School uniform", "校服", school),
    Outfit("space", "Space suit", "宇航服", space, base=("body",)),
    Outfit("pyjamas", "Pyjamas", "睡衣", pyjamas),
    Outfit("formal", "Formal", "礼服", formal),
    Outfit("hanfu", "Hanfu robe", "古风汉服", hanfu),
    Outfit("cyberpunk", "Cyberpunk jacket", "赛博朋克", cyberpunk),
)
