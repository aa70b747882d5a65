"""``python -m atlas contact-sheet OUT.png``: every outfit (and the face states) rendered by the
moderngl renderer onto one sheet, so the art can be judged as the app will show it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from shaders import CharacterRenderer, FrameState
from shaders.pixels import unpremultiply

COLUMNS = 3
LABEL_H = 44
PAD = 16
TOP, BOTTOM = (246, 242, 252), (222, 214, 240)


def write_contact_sheet(atlas_dir: Path, out: Path) -> None:
    with CharacterRenderer(atlas_dir, idle_blink=False) as renderer:
        cell = renderer.manifest.cell
        ids = renderer.outfit_ids
        first, second = ids[0], ids[1 % len(ids)]
        cards = [(o.name, FrameState(o.id)) for o in renderer.manifest.outfits] + [
            ("Blinking", FrameState(first, blink=1.0)),
            ("Talking", FrameState(first, mouth=1.0)),
            ("Crossfade 50%", FrameState(second, previous=first, progress=0.5)),
        ]
        images = [(name, renderer.render(state, cell)) for name, state in cards]

    rows = -(-len(images) // COLUMNS)
    card_w, card_h = cell[0] + PAD, cell[1] + LABEL_H + PAD
    sheet = _gradient((COLUMNS * card_w + PAD, rows * card_h + PAD))
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=24)
    for i, (name, pixels) in enumerate(images):
        x = PAD + (i % COLUMNS) * card_w
        y = PAD + (i // COLUMNS) * card_h
        draw.rounded_rectangle((x, y, x + cell[0], y + cell[1] + LABEL_H), 18, fill=(255, 255, 255, 150))
        sheet.alpha_composite(Image.fromarray(unpremultiply(pixels), "RGBA"), (x, y))
        draw.text(
            (x + cell[0] / 2, y + cell[1] + LABEL_H / 2 - 4), name, fill=(70, 52, 100), font=font, anchor="mm"
        )
    sheet.convert("RGB").save(out)


def _gradient(size: tuple[int, int]) -> Image.Image:
    t = np.linspace(0, 1, size[1])[:, None, None]
    rows = (np.array(TOP) * (1 - t) + np.array(BOTTOM) * t).astype(np.uint8)
    rgb = np.broadcast_to(rows, (size[1], size[0], 3))
    return Image.fromarray(np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)]), "RGBA")
