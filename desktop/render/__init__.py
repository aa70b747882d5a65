"""Offscreen character rendering with moderngl, on a dedicated GL thread."""

from desktop.render.glthread import GLThread
from desktop.render.renderer import CharacterRenderer, FrameState, auto_blink

__all__ = ["CharacterRenderer", "FrameState", "GLThread", "auto_blink"]
