"""The outfits the engine knows: ids and display names, from the atlas manifest it shows, and for
the built-in wardrobe the occasions each suits ("dress up for a trip to the moon" is the space suit)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atlas.manifest import DEFAULT_DIR, Manifest, OutfitEntry


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
    "hanfu": ("festival", "lantern", "lanterns", "tea", "teahouse", "traditional", "ancient", "dynasty", "poetry",
              "calligraphy", "temple", "guqin", "zither", "chinese"),
    "cyberpunk": ("neon", "city", "downtown", "arcade", "hacker", "hacking", "cyber", "futuristic", "future",
                  "scifi", "rave", "club", "clubbing", "nightlife", "android", "robot", "robots", "game", "games"),
}


# Other Chinese names of the built-in outfits, beside the label each has in the atlas (its "zh" name): a
# Mandarin request ("换上宇航服", "换上太空服") names its outfit by any of them.
CHINESE_NAMES: dict[str, tuple[str, ...]] = {
    "hoodie": ("连帽衫",),
    "red_dress": ("红色连衣裙", "红裙", "连衣裙"),
    "space": ("太空服", "航天服"),
    "formal": ("正装",),
    "hanfu": ("汉服", "古装"),
    "cyberpunk": ("赛博",),
}


def catalogue_of(manifest: Manifest) -> tuple[Outfit, ...]:
    """The outfits an atlas manifest offers."""
    return tuple(Outfit(o.id, o.name, OCCASIONS.get(o.id, ()), chinese_names(o)) for o in manifest.outfits)


def chinese_names(outfit: OutfitEntry) -> tuple[str, ...]:
    """An outfit's Chinese names: its label in the atlas first, then the others it is known by."""
    label = (outfit.names["zh"],) if "zh" in outfit.names else ()
    return tuple(dict.fromkeys(label + CHINESE_NAMES.get(outfit.id, ())))


def load_catalogue(atlas_dir: str = "") -> tuple[Outfit, ...]:
    """The outfits of the atlas in `atlas_dir` ("" = the bundled default atlas)."""
    return catalogue_of(Manifest.load(Path(atlas_dir) if atlas_dir else DEFAULT_DIR))
