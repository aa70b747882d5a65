"""Is this machine's OpenGL software (llvmpipe)? And the Chromium flags that let Qt WebEngine draw the
character with WebGL2 on it.

The page paces its idle frames by it; WebKitGTK masks the WebGL renderer's name ("Apple GPU"), so the
shell tells the page what this probe found (desktop/shell.py: `gl=software` in the URL).

Chromium blocklists software OpenGL (Mesa's llvmpipe: virtual machines, remote desktops, Xvfb)
for WebGL, and on such a driver its GPU compositing shows a blank page. The same driver gives
the page a working WebGL2 when the blocklist is ignored and pages are composited on the CPU,
which is what these flags ask for; on a real GPU nothing changes. The renderer's name comes
from a throw-away moderngl context on its own GL thread, never the Qt GUI thread (a context
current there turns the webview black); on Linux the shell asks it in a forked child
(`RendererProbe`), because the driver stays loaded once a context was made.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from concurrent.futures import Future

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


class RendererProbe:
    """GL_RENDERER, asked as the app starts and read when the window opens.

    On Linux a forked child asks, so the driver it loads leaves with it: Mesa's llvmpipe stays mapped
    once loaded (measured in the shell under Xvfb: LLVM and the driver, 24 MiB of its PSS). Start it
    before any other thread: a fork copies only the calling thread, and the locks others held stay held.
    Elsewhere the probe runs on a thread of this process.
    """

    def __init__(self) -> None:
        self._answer: Future[str | None] = Future()
        self._child: tuple[int, int] | None = None  # (pid, the pipe's read end)
        if sys.platform.startswith("linux"):
            try:
                self._child = self._fork()
                return
            except OSError as exc:
                log.warning("could not fork the OpenGL probe (%s); asking here", exc)
        threading.Thread(target=self._ask_here, name="gl-probe", daemon=True).start()

    @staticmethod
    def _fork() -> tuple[int, int]:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: answer on the pipe, leave without the parent's exit handlers
            status = 1
            try:
                os.close(read)
                os.write(write, (gl_renderer() or "").encode())
                status = 0
            finally:
                os._exit(status)
        os.close(write)
        return pid, read

    def _ask_here(self) -> None:
        try:
            self._answer.set_result(gl_renderer())
        except Exception as exc:  # noqa: BLE001 - a broken GL driver: the webview decides on its own
            log.warning("could not probe OpenGL (%s); the webview picks its own settings", exc)
            self._answer.set_result(None)

    def result(self) -> str | None:
        """The renderer's name (None: no usable OpenGL), waiting for the probe if it is still asking."""
        if self._child is not None:
            pid, read = self._child
            self._child = None
            with os.fdopen(read, "rb") as answer:
                renderer = answer.read().decode(errors="replace")
            status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            if status != 0:
                log.warning("could not probe OpenGL (its process ended with status %d); the webview picks its "
                            "own settings", status)
            self._answer.set_result(renderer or None)
        return self._answer.result()


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
