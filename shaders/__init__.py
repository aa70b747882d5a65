"""Offscreen character rendering with moderngl, on a dedicated GL thread."""

from shaders.glthread import GLThread
from shaders.renderer import CharacterRenderer, FrameState, auto_blink

__all__ = ["CharacterRenderer", "FrameState", "GLThread", "auto_blink"]
