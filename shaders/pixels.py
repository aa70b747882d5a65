"""Conversions between the renderer's premultiplied frames and ordinary PNGs."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def unpremultiply(rgba: np.ndarray) -> np.ndarray:
    """Straight alpha for image files; fully transparent pixels become (0, 0, 0, 0)."""
    a = rgba[..., 3:4].astype(np.uint32)
    rgb = (rgba[..., :3].astype(np.uint32) * 255 + a // 2) // np.maximum(a, 1)
    out = np.concatenate([np.minimum(rgb, 255), a], axis=-1).astype(np.uint8)
    out[rgba[..., 3] == 0] = 0
    return out


def premultiply(rgba: np.ndarray) -> np.ndarray:
    a = rgba[..., 3:4].astype(np.uint32)
    rgb = (rgba[..., :3].astype(np.uint32) * a + 127) // 255
    return np.concatenate([rgb, a], axis=-1).astype(np.uint8)


def png_bytes(premultiplied: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(unpremultiply(premultiplied), "RGBA").save(buf, "PNG", compress_level=1)
    return buf.getvalue()
