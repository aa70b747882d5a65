"""Offscreen moderngl renderer of the character, running the same shaders as the WebGL2 UI.

Used for golden tests, outfit thumbnails, ``--selftest``, benchmarks, and as a PNG frame stream
when the webview has no WebGL. All GL work happens on a ``GLThread``; public methods may be
called from any thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import moderngl
import numpy as np
from PIL import Image

from atlas.manifest import DEFAULT_DIR, Manifest, OutfitEntry
from shaders import glsl
from shaders.glthread import GLThread
from shaders.pixels import png_bytes

CROSSFADE_S = 0.15
# Idle blinking: gaps between blinks (s), cycled, and how long one blink lasts. Mirrored in character.js.
BLINK_GAPS = (3.7, 4.6, 2.9, 5.3)
BLINK_S = 0.16
T = TypeVar("T")


@dataclass(frozen=True)
class FrameState:
    """Everything one frame depends on, so a frame can be reproduced exactly (tests, parity)."""

    outfit: str
    previous: str | None = None  # outfit fading out; None = no crossfade
    progress: float = 1.0  # 0 shows ``previous``, 1 shows ``outfit``
    mouth: float = 0.0
    blink: float = 0.0
    time: float = 0.0


def auto_blink(t: float) -> float:
    """Eyelid closure (0..1) of the idle blink at time ``t``: a quick close, a slower open."""
    t %= sum(BLINK_GAPS)
    end = 0.0
    for gap in BLINK_GAPS:
        end += gap
        phase = t - (end - BLINK_S)
        if 0.0 <= phase < BLINK_S:
            close = BLINK_S * 0.4
            return phase / close if phase < close else 1.0 - (phase - close) / (BLINK_S - close)
    return 0.0


class _Scene:
    """The GL objects. Constructed and used only on the GL thread."""

    def __init__(self, ctx: moderngl.Context, manifest: Manifest, atlas_path: Path) -> None:
        self.ctx = ctx
        self.manifest = manifest
        self.prog = ctx.program(
            vertex_shader=glsl.for_desktop(glsl.load("character.vert")),
            fragment_shader=glsl.for_desktop(glsl.load("character.frag")),
        )
        with Image.open(atlas_path) as img:
            # Rows go up unflipped: v = 0 is the PNG's top row, as in the manifest (and in WebGL).
            data = img.convert("RGBA").tobytes()
            size = img.size
        self.texture = ctx.texture(size, 4, data)
        self.texture.build_mipmaps(0, manifest.max_mip_level)
        self.texture.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        self.texture.repeat_x = self.texture.repeat_y = False
        corners = np.array([0, 0, 1, 0, 0, 1, 1, 1], np.float32)
        self.vbo = ctx.buffer(corners.tobytes())
        self.vao = ctx.vertex_array(self.prog, [(self.vbo, "2f", "a_corner")])
        self.fbos: dict[tuple[int, int], moderngl.Framebuffer] = {}
        self._set("u_atlas", 0)
        self._set("u_eyes_region", manifest.region_uv("eyes"))
        self._set("u_mouth_region", manifest.region_uv("mouth"))

    def _set(self, name: str, value: object) -> None:
        if name in self.prog:  # the GLSL compiler drops unused uniforms
            self.prog[name].value = value

    def set_outfits(self, current: OutfitEntry, previous: OutfitEntry) -> None:
        """The whole cost of an outfit switch: six uniform writes, no texture traffic."""
        size = self.manifest.size
        for prefix, o in (("u_cur", current), ("u_prev", previous)):
            self._set(f"{prefix}_rect", o.rect.uv(size))
            self._set(f"{prefix}_eyes", o.eyes_closed.uv(size))
            self._set(f"{prefix}_mouth", o.mouth_open.uv(size))

    def set_animation(self, progress: float, mouth: float, blink: float, t: float) -> None:
        self._set("u_progress", float(np.clip(progress, 0, 1)))
        self._set("u_mouth", float(np.clip(mouth, 0, 1)))
        self._set("u_blink", float(np.clip(blink, 0, 1)))
        self._set("u_time", float(t))

    def draw(self, size: tuple[int, int]) -> moderngl.Framebuffer:
        fbo = self.fbos.get(size)
        if fbo is None:
            fbo = self.fbos[size] = self.ctx.simple_framebuffer(size, components=4)
        fbo.use()
        fbo.clear(0.0, 0.0, 0.0, 0.0)
        self._set("u_resolution", (float(size[0]), float(size[1])))
        self.texture.use(0)
        self.vao.render(moderngl.TRIANGLE_STRIP)
        return fbo

    def draw_and_read(self, size: tuple[int, int]) -> np.ndarray:
        """Premultiplied RGBA frame, top row first (GL reads bottom-up)."""
        data = self.draw(size).read(components=4, alignment=1)
        return np.frombuffer(data, np.uint8).reshape(size[1], size[0], 4)[::-1].copy()

    def draw_and_finish(self, size: tuple[int, int]) -> None:
        self.draw(size)
        self.ctx.finish()

    def release(self) -> None:
        for obj in (*self.fbos.values(), self.vao, self.vbo, self.texture, self.prog):
            obj.release()


class CharacterRenderer:
    """The character, offscreen. Live state (``set_*`` + ``frame``) or explicit ``FrameState``s."""

    def __init__(
        self,
        atlas_dir: Path = DEFAULT_DIR,
        *,
        crossfade: float = CROSSFADE_S,
        idle_blink: bool = True,
        gl: GLThread | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.manifest = Manifest.load(atlas_dir)
        self.crossfade = crossfade
        self.idle_blink = idle_blink
        self._clock = clock
        self._gl = gl or GLThread()
        self._owns_gl = gl is None
        self._lock = threading.Lock()
        first = self.manifest.outfits[0]
        self._outfit = self._previous = first.id
        self._switched_at = self._t0 = clock()
        self._fade = 0.0
        self._mouth = self._blink = 0.0
        self._scene = self._gl.call(
            _Scene, self._gl.ctx, self.manifest, Path(atlas_dir) / self.manifest.image
        )
        self._gl.call(self._scene.set_outfits, first, first)

    @property
    def outfit_ids(self) -> list[str]:
        return [o.id for o in self.manifest.outfits]

    @property
    def outfit(self) -> str:
        return self._outfit

    def set_outfit(self, outfit_id: str, crossfade: float | None = None) -> None:
        """Switch outfit: queues a uniform update (no upload, no wait); the next frame shows it."""
        current = self.manifest.outfit(outfit_id)
        with self._lock:
            previous = self.manifest.outfit(self._outfit)
            self._previous, self._outfit = self._outfit, outfit_id
            self._switched_at = self._clock()
            self._fade = self.crossfade if crossfade is None else crossfade
            # Queued under the lock so concurrent switches reach the GL thread in the order they won.
            self._gl.submit(self._scene.set_outfits, current, previous)

    def set_mouth(self, openness: float) -> None:
        self._mouth = float(openness)

    def set_blink(self, closure: float) -> None:
        self._blink = float(closure)

    def frame(self, size: tuple[int, int] = (512, 512)) -> np.ndarray:
        """The live frame now: crossfade progress, idle breathing and blinking from the clock."""
        return self._gl.call(self._live, self._scene.draw_and_read, size)

    def draw(self, size: tuple[int, int] = (512, 512)) -> None:
        """Draw the live frame offscreen and wait for it, without reading it back (benchmarks, selftest)."""
        self._gl.call(self._live, self._scene.draw_and_finish, size)

    def _live(self, draw: Callable[[tuple[int, int]], T], size: tuple[int, int]) -> T:
        """On the GL thread: animation uniforms from the clock, then ``draw``."""
        now = self._clock()
        with self._lock:
            fade, since = self._fade, now - self._switched_at
        progress = 1.0 if fade <= 0 else min(1.0, since / fade)
        t = now - self._t0
        blink = max(self._blink, auto_blink(t)) if self.idle_blink else self._blink
        self._scene.set_animation(progress, self._mouth, blink, t)
        return draw(size)

    def frame_png(self, size: tuple[int, int] = (512, 512)) -> bytes:
        """One frame of the fallback stream for a webview without WebGL."""
        return png_bytes(self.frame(size))

    def render(self, state: FrameState, size: tuple[int, int] = (512, 512)) -> np.ndarray:
        """Premultiplied RGBA (H, W, 4) of exactly ``state``; leaves the live state alone."""
        current = self.manifest.outfit(state.outfit)
        previous = self.manifest.outfit(state.previous or state.outfit)

        def job() -> np.ndarray:
            with self._lock:  # read on the GL thread, so a set_outfit queued meanwhile is not undone
                live = (self.manifest.outfit(self._outfit), self.manifest.outfit(self._previous))
            self._scene.set_outfits(current, previous)
            self._scene.set_animation(state.progress, state.mouth, state.blink, state.time)
            try:
                return self._scene.draw_and_read(size)
            finally:
                self._scene.set_outfits(*live)

        return self._gl.call(job)

    def render_png(self, state: FrameState, size: tuple[int, int] = (512, 512)) -> bytes:
        return png_bytes(self.render(state, size))

    def thumbnail_png(self, outfit_id: str, size: tuple[int, int] = (96, 144)) -> bytes:
        """Button icon for an outfit, at whatever size (and pixel ratio) the UI needs."""
        return self.render_png(FrameState(outfit_id), size)

    def close(self) -> None:
        self._gl.call(self._scene.release)
        if self._owns_gl:
            self._gl.close()

    def __enter__(self) -> CharacterRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
