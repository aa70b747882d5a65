"""Loads the shared GLSL ES 3.00 sources and adapts them for desktop OpenGL 3.3."""

from __future__ import annotations

from pathlib import Path

SHADER_DIR = Path(__file__).resolve().parent


def load(name: str, shader_dir: Path = SHADER_DIR) -> str:
    """The file as WebGL2 gets it."""
    return (shader_dir / name).read_text(encoding="utf-8")


def for_desktop(source: str) -> str:
    """Only the version line differs: GLSL 3.30 accepts (and ignores) ES precision statements."""
    first, _, rest = source.partition("\n")
    if first.strip() != "#version 300 es":
        raise ValueError(f"shader must start with '#version 300 es', found {first!r}")
    return "#version 330 core\n" + rest
