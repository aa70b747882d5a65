"""Render Stella's icon (desktop/web/icon.svg) to the files desktops want: PNG, ICO, ICNS.

    python build/icon.py OUT_DIR      # OUT_DIR/stella.png (256 px), stella-512.png, stella.ico, stella.icns

Qt's own SVG renderer draws it (PyQt6 is already a dependency; no cairo), Pillow writes the ICO and ICNS.
"""

from __future__ import annotations

import os
import sys
from io import BytesIO
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "desktop" / "web" / "icon.svg"


def render(svg: Path, size: int) -> Image.Image:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PyQt6.QtCore import QBuffer, QIODevice
    from PyQt6.QtGui import QGuiApplication, QImage, QPainter
    from PyQt6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 - QPainter needs one
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(0)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return Image.open(BytesIO(bytes(buffer.data()))).convert("RGBA")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    big = render(SVG, 1024)
    big.resize((256, 256), Image.LANCZOS).save(out / "stella.png")
    big.resize((512, 512), Image.LANCZOS).save(out / "stella-512.png")
    big.save(out / "stella.ico", sizes=[(16, 16), (24, 24), (32, 32), (48, 48), (64, 64), (128, 128), (256, 256)])
    big.save(out / "stella.icns")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "pyinstaller-work" / "icons")
