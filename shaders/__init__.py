"""Character rendering: the one GLSL ES 3.00 source (`character.vert`, `character.frag`, loaded by
`glsl`), the offscreen moderngl renderer on its own GL thread, and pixel helpers.

Twinned with `desktop/web/character.js` (WebGL2, same shaders). The art pipeline (`atlas/`), the
engine's frame stream and the window's self-test import it; it imports only the atlas format it
draws from (`atlas.manifest`).
"""

from shaders.glthread import GLThread
from shaders.renderer import CharacterRenderer, FrameState, auto_blink

__all__ = ["CharacterRenderer", "FrameState", "GLThread", "auto_blink"]
