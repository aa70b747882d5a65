"""Which atlas the app shows: the user's own (built into the user data folder by `stella outfits`)
when it loads, else the built-in one — with the reason, so the window can say why.

The user's character lives beside the app's other data, never inside the installed app::

    <user data>/character/   layer sources, the layout of `python -m atlas art` (edit, then rebuild)
    <user data>/atlas/       atlas.png + manifest.json built from them (what the app loads)

The shell (to serve the texture) and the engine (for the outfit catalogue) both call
`choose_atlas`; it reads only files, so the two come to the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import platformdirs

from atlas.errors import AtlasError
from atlas.manifest import DEFAULT_DIR, Manifest, Rect

FIX = "run `stella outfits build` to rebuild it, or `stella outfits reset` to go back to the built-in character"


@dataclass(frozen=True)
class UserFolders:
    """Where the user's character is kept (`data` is the platform's user data folder for Stella)."""

    data: Path

    @classmethod
    def default(cls) -> UserFolders:
        return cls(Path(platformdirs.user_data_dir("stella")))

    @property
    def source(self) -> Path:
        return self.data / "character"

    @property
    def atlas(self) -> Path:
        return self.data / "atlas"


@dataclass(frozen=True)
class AtlasChoice:
    folder: Path
    manifest: Manifest
    user: bool  # the user's own atlas (not the built-in one)
    problem: str = ""  # why the user's atlas is not shown, in words for the window


def choose_atlas(configured: str = "", folders: UserFolders | None = None) -> AtlasChoice:
    """`configured` (the app config's `atlas_dir`) or else the user's atlas, if it loads; else the built-in."""
    folder = Path(configured) if configured else (folders or UserFolders.default()).atlas
    if configured or (folder / "manifest.json").exists():
        try:
            return AtlasChoice(folder, check_atlas(folder), user=True)
        except AtlasError as exc:
            problem = (f"Your own character could not be loaded, so the built-in one is shown. {exc}. "
                       f"To fix it, {FIX}.")
            return AtlasChoice(DEFAULT_DIR, Manifest.load(DEFAULT_DIR), user=False, problem=problem)
    return AtlasChoice(DEFAULT_DIR, Manifest.load(DEFAULT_DIR), user=False)


def check_atlas(folder: Path) -> Manifest:
    """The manifest, once its texture is there, a whole RGBA PNG of the size it says, every cell inside it."""
    manifest = Manifest.load(folder)
    image = Path(folder) / manifest.image
    if manifest.image != "atlas.png":  # the window fetches it by that name, beside the manifest
        raise AtlasError(folder / "manifest.json", f'"image" must be "atlas.png", got {manifest.image!r}')
    if not manifest.outfits:
        raise AtlasError(folder / "manifest.json", "the manifest lists no outfits")
    if not image.is_file():
        raise AtlasError(image, "missing texture: the manifest names it but the file is not there")
    from PIL import Image, UnidentifiedImageError  # here: the window's launch does not pay for it without a user atlas

    try:
        with Image.open(image) as img:
            found = (img.format, img.mode, img.size)
            img.verify()  # every chunk there with its checksum: a truncated file fails here, not in the window
    except (UnidentifiedImageError, OSError) as exc:
        raise AtlasError(image, f"the texture is not a readable PNG image ({exc})") from None
    if found != ("PNG", "RGBA", manifest.size):
        raise AtlasError(image, f"the texture is a {found[0]} {found[1]} image of {found[2][0]}x{found[2][1]}, but "
                                f"the manifest expects an RGBA PNG of {manifest.size[0]}x{manifest.size[1]}")
    for outfit in manifest.outfits:
        for rect in (outfit.rect, outfit.eyes_closed, outfit.mouth_open):
            if not _inside(rect, manifest.size):
                raise AtlasError(folder / "manifest.json",
                                 f"outfit {outfit.id!r} points outside the texture ({[*vars(rect).values()]})")
    return manifest


def _inside(r: Rect, size: tuple[int, int]) -> bool:
    return r.w > 0 and r.h > 0 and r.x >= 0 and r.y >= 0 and r.x + r.w <= size[0] and r.y + r.h <= size[1]
