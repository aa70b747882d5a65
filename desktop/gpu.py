"""Is this machine's OpenGL software (llvmpipe)? And the Chromium flags that let Qt WebEngine draw the
character with WebGL2 on it.

The page paces its idle frames by it; WebKitGTK masks the WebGL renderer's name ("Apple GPU"), so the
shell tells the page what this probe found (desktop/shell.py: `gl=software` in the URL).

Chromium blocklists software OpenGL (Mesa's llvmpipe: virtual machines, remote desktops, Xvfb)
for WebGL, and on such a driver its GPU compositing shows a blank page. The same driver gives
the page a working WebGL2 when the blocklist is ignored and pages are composited on the CPU,
which is what these flags ask for; on a real GPU nothing changes. The renderer's name comes
from a throw-away moderngl context on its own GL thread, never the Qt GUI thread (a context
current there turns the webview black).
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "swiftshader", "software rasterizer")
SOFTWARE_GL_FLAGS = ("--ignore-gpu-blocklist", "--disable-gpu-compositing")


def gl_renderer() -> str | None:
    """GL_RENDERER of the default OpenGL driver, or None if there is no usable OpenGL."""
    from shaders.glthread import GLThread

    try:
        gl = GLThread(name="stella-gl-probe")
    except RuntimeError as exc:
        log.warning("no OpenGL for the probe: %s", exc)
        return None
    try:
        return gl.call(lambda: gl.ctx.info["GL_RENDERER"])
    finally:
        gl.close()


def is_software(renderer: str | None) -> bool:
    return renderer is not None and any(name in renderer.lower() for name in SOFTWARE_RENDERERS)


def webkit_env(renderer: str | None) -> dict[str, str]:
    """WebKitGTK on software OpenGL: pages composited on the CPU. WebGL2 still draws in its own GL context;
    compositing the whole page in GL on llvmpipe cost the web process 90 MiB and twice the idle CPU
    (measured under Xvfb: 401 -> 311 MiB, 17 -> 8 % of a core)."""
    if is_software(renderer):
        log.info("software OpenGL (%s): WebKitGTK composites on the CPU", renderer)
        return {"WEBKIT_DISABLE_COMPOSITING_MODE": "1"}
    return {}


def webengine_flags(renderer: str | None) -> list[str]:
    if is_software(renderer):
        log.info("software OpenGL (%s): WebGL2 runs on it with CPU compositing", renderer)
        return list(SOFTWARE_GL_FLAGS)
    return []
