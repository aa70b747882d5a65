"""The window's size and position, remembered in the encrypted store between launches."""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass, replace
from typing import Any

from sidecar.store import Store, StoreError

log = logging.getLogger(__name__)

SETTING = "window"
MIN_SIZE = (760, 540)


@dataclass(frozen=True)
class Geometry:
    width: int = 1100
    height: int = 720
    x: int | None = None  # None: let the platform place it
    y: int | None = None
    maximized: bool = False

    @classmethod
    def from_setting(cls, value: Any) -> Geometry:
        """The saved geometry; anything unreadable gives the default window."""
        try:
            g = cls(**value)
            ok = all(isinstance(v, int) for v in (g.width, g.height)) and isinstance(g.maximized, bool) and all(
                v is None or isinstance(v, int) for v in (g.x, g.y))
        except TypeError:
            ok = False
        if not ok:
            log.warning("ignoring an unreadable saved window geometry: %r", value)
            return cls()
        return replace(g, width=max(g.width, MIN_SIZE[0]), height=max(g.height, MIN_SIZE[1]))

    def on_screens(self, screens: list[tuple[int, int, int, int]]) -> Geometry:
        """Kept on a screen that exists now: a window saved on an unplugged monitor is placed anew."""
        if not screens:
            return self
        if self.x is not None and self.y is not None:
            for sx, sy, sw, sh in screens:
                if sx <= self.x + 40 < sx + sw and sy <= self.y + 20 < sy + sh:  # its title bar is reachable
                    return replace(self, width=min(self.width, sw), height=min(self.height, sh))
        sw, sh = max((s[2], s[3]) for s in screens)
        return replace(self, x=None, y=None, width=min(self.width, sw), height=min(self.height, sh))


class GeometryKeeper:
    """Follows the window's moves and resizes and writes the latest geometry to the store.

    pywebview reports them from the GUI thread; saving waits for a pause (and happens at close
    in any case), so dragging the window does not write to the database on every pixel.

    The events alone can miss the last change: GTK reports a resize at its next layout, so a
    window closed right after being resized closed before saying so (seen: the position kept,
    the size the old one). At close the window's own measure (`closing`) therefore wins.
    """

    def __init__(self, store: Store | None, geometry: Geometry, delay: float = 0.6) -> None:
        self.store = store
        self.geometry = geometry
        self.delay = delay
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    @classmethod
    def load(cls, store: Store | None) -> GeometryKeeper:
        value = None
        if store is not None:
            try:
                value = store.get_setting(SETTING)
            except StoreError as exc:
                log.warning("cannot read the window geometry: %s", exc)
        return cls(store, Geometry() if value is None else Geometry.from_setting(value))

    def moved(self, x: int, y: int) -> None:
        if not self.geometry.maximized:
            self._update(x=int(x), y=int(y))

    def resized(self, width: int, height: int) -> None:
        if not self.geometry.maximized:
            self._update(width=int(width), height=int(height))

    def maximized(self) -> None:
        self._update(maximized=True)

    def restored(self) -> None:
        self._update(maximized=False)

    def closing(self, measured: tuple[int, int, int, int] | None) -> None:
        """Saves now, with the window's own (x, y, width, height) when the platform gave it."""
        if measured is not None and not self.geometry.maximized:
            x, y, width, height = (int(v) for v in measured)
            with self._lock:
                self.geometry = replace(self.geometry, x=x, y=y, width=width, height=height)
        self.save()

    def _update(self, **changes: Any) -> None:
        with self._lock:
            self.geometry = replace(self.geometry, **changes)
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.delay, self.save)
            self._timer.daemon = True
            self._timer.start()

    def save(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            geometry = self.geometry
        if self.store is None:
            return
        try:
            self.store.set_setting(SETTING, asdict(geometry))
        except StoreError as exc:
            log.warning("cannot save the window geometry: %s", exc)
