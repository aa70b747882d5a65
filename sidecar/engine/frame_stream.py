"""The character as PNG frames from the moderngl renderer, for a page without WebGL2."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from websockets.asyncio.server import ServerConnection

from sidecar.channel import Channel
from sidecar.voice.mouth import HOP_S

MOUTH_HOLD_S = 4 * HOP_S  # the mouth's level arrives every hop; a late one keeps it open meanwhile

if TYPE_CHECKING:
    from shaders import CharacterRenderer


class FrameStream:
    """Frames at each subscriber's size; the renderer (and its GL thread) starts on the first subscription."""

    def __init__(self, channel: Channel, outfit: str, atlas_dir: Path, fps: float = 15.0) -> None:
        self.channel = channel
        self.atlas_dir = atlas_dir
        self.fps = fps
        self.outfit = outfit
        self._sizes: dict[ServerConnection, tuple[int, int]] = {}
        self._mouth = (0.0, 0.0)  # (level, when it came)
        self._task: asyncio.Task[None] | None = None
        self._renderer: CharacterRenderer | None = None

    def subscribe(self, ws: ServerConnection, width: int, height: int) -> None:
        if width <= 0 or height <= 0:
            self._sizes.pop(ws, None)
            return
        self._sizes[ws] = (min(width, 1024), min(height, 1024))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="frame-stream")

    def set_outfit(self, outfit: str) -> None:
        self.outfit = outfit
        if self._renderer is not None:
            self._renderer.set_outfit(outfit)

    def set_mouth(self, level: float) -> None:
        self._mouth = (level, time.monotonic())

    def _mouth_now(self) -> float:
        level, at = self._mouth
        return level if time.monotonic() - at < MOUTH_HOLD_S else 0.0

    async def _run(self) -> None:
        if self._renderer is None:
            from shaders import CharacterRenderer  # moderngl only when a page needs it

            self._renderer = await asyncio.to_thread(CharacterRenderer, self.atlas_dir)
            self._renderer.set_outfit(self.outfit, crossfade=0)
        while True:
            for ws in [ws for ws in self._sizes if ws not in self.channel.clients]:
                del self._sizes[ws]
            if not self._sizes:
                return
            began = time.monotonic()
            self._renderer.set_mouth(self._mouth_now())
            for size in set(self._sizes.values()):
                png = await asyncio.to_thread(self._renderer.frame_png, size)
                self.channel.send_binary(png, [ws for ws, s in self._sizes.items() if s == size])
            await asyncio.sleep(max(0.0, 1 / self.fps - (time.monotonic() - began)))

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._renderer is not None:
            self._renderer.close()
