"""The outfits on offer (the atlas's) and the one she wears: shown in the frames, kept in the store."""

from __future__ import annotations

from collections.abc import Callable

from atlas.manifest import Manifest
from sidecar.channel_messages import Outfit
from sidecar.engine.frame_stream import FrameStream
from sidecar.engine.stored import EngineStore


class Wardrobe:
    """Wearing an outfit: the window's event (for a choice made here), the frames, the store."""

    def __init__(self, manifest: Manifest, frames: FrameStream, kept: EngineStore,
                 send: Callable[[Outfit], None]) -> None:
        self.offered = frozenset(o.id for o in manifest.outfits)
        self.worn = manifest.outfits[0].id
        self.frames = frames
        self.kept = kept
        self.send = send

    def __contains__(self, outfit: object) -> bool:
        return outfit in self.offered

    def restore(self, outfit: str | None) -> None:
        """The outfit the store remembers, if the atlas still offers it (pages hear it in their greeting)."""
        if outfit in self.offered:
            self.worn = outfit
            self.frames.set_outfit(outfit)

    def choose(self, outfit: str, source: str) -> None:
        """The user picked `outfit` (`source` says how): every page hears it, then she wears it."""
        self.send(Outfit(outfit, source))
        self.wear(outfit)

    def wear(self, outfit: str) -> None:
        """An outfit the pipeline already reported (asked for aloud, or tagged in a reply)."""
        self.worn = outfit
        self.frames.set_outfit(outfit)
        self.kept.save_outfit(outfit)

    def event(self) -> Outfit:
        """What a page hears when it connects."""
        return Outfit(self.worn, "store")
