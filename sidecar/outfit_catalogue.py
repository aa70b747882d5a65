"""The outfits the engine knows: ids and display names, from the atlas manifest it shows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atlas.manifest import DEFAULT_DIR, Manifest


@dataclass(frozen=True)
class Outfit:
    id: str
    name: str


def catalogue_of(manifest: Manifest) -> tuple[Outfit, ...]:
    """The outfits an atlas manifest offers."""
    return tuple(Outfit(o.id, o.name) for o in manifest.outfits)


def load_catalogue(atlas_dir: str = "") -> tuple[Outfit, ...]:
    """The outfits of the atlas in `atlas_dir` ("" = the bundled default atlas)."""
    return catalogue_of(Manifest.load(Path(atlas_dir) if atlas_dir else DEFAULT_DIR))
