"""The outfits the engine knows: ids and display names, from the atlas manifest it shows, and for
the built-in wardrobe the occasions each suits ("dress up for a trip to the moon" is the space suit)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atlas.manifest import DEFAULT_DIR, Manifest


@dataclass(frozen=True)
class Outfit:
    id: str
    name: str
    occasions: tuple[str, ...] = ()  # words of a request that this outfit suits (sidecar.intents)
    chinese: tuple[str, ...] = ()  # its names in Chinese


# The built-in wardrobe's occasions, written from what each outfit is for (not from the bench's prompts).
OCCASIONS: dict[str, tuple[str, ...]] = {
    "hoodie": ("casual", "comfy", "comfortable", "cosy", "cozy", "relaxed", "chill", "lazy", "walk", "park",
               "weekend", "hiking", "gaming"),
    "red_dress": ("party", "date", "dance", "dancing", "birthday", "celebration", "celebrate", "concert", "pretty"),
    "school": ("class", "classes", "study", "studying", "lesson", "lessons", "homework", "student", "exam",
               "campus"),
    "space": ("moon", "mars", "planet", "planets", "rocket", "astronaut", "spaceship", "stars", "galaxy", "orbit",
              "spacewalk", "cosmos"),
    "pyjamas": ("bed", "bedtime", "sleep", "sleepy", "night", "nap", "sleepover", "tired", "sleepwear", "nightwear",
                "nightgown", "pajamas"),
    "formal": ("fancy", "elegant", "smart", "wedding", "gala", "interview", "office", "business", "meeting",
               "opera", "ceremony", "evening", "gown", "tuxedo"),
}


# The built-in wardrobe's Chinese names: a Mandarin request ("换上宇航服") names its outfit by them.
CHINESE_NAMES: dict[str, tuple[str, ...]] = {
    "hoodie": ("卫衣", "连帽衫"),
    "red_dress": ("红裙子", "红色连衣裙", "红裙", "连衣裙"),
    "school": ("校服",),
    "space": ("宇航服", "太空服", "航天服"),
    "pyjamas": ("睡衣",),
    "formal": ("礼服", "正装"),
}


def catalogue_of(manifest: Manifest) -> tuple[Outfit, ...]:
    """The outfits an atlas manifest offers."""
    return tuple(Outfit(o.id, o.name, OCCASIONS.get(o.id, ()), CHINESE_NAMES.get(o.id, ())) for o in manifest.outfits)


def load_catalogue(atlas_dir: str = "") -> tuple[Outfit, ...]:
    """The outfits of the atlas in `atlas_dir` ("" = the bundled default atlas)."""
    return catalogue_of(Manifest.load(Path(atlas_dir) if atlas_dir else DEFAULT_DIR))
