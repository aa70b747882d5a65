"""The atlas manifest: what the renderers need to find each outfit and face overlay in atlas.png.

Rects are pixels ``[x, y, w, h]`` with the origin at the top left of atlas.png; ``uv`` is the same
rect normalised to ``[u0, v0, u1, v1]`` (v grows downwards: upload the PNG rows unflipped).
Pixel values are premultiplied by alpha.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from atlas.errors import AtlasError

FORMAT = "stella-atlas/1"
DEFAULT_DIR = Path(__file__).resolve().parent / "default"


@dataclass(frozen=True)
class Rect:
    x: int
    y: int
    w: int
    h: int

    def uv(self, size: tuple[int, int]) -> tuple[float, float, float, float]:
        return (self.x / size[0], self.y / size[1], (self.x + self.w) / size[0], (self.y + self.h) / size[1])


@dataclass(frozen=True)
class OutfitEntry:
    id: str
    name: str
    rect: Rect
    eyes_closed: Rect
    mouth_open: Rect
    layers: tuple[str, ...]
    thumbnail: str  # data: URI of a small straight-alpha PNG, for outfit buttons
    names: dict[str, str] = field(default_factory=dict)  # the label in other languages, by code ("zh")


@dataclass(frozen=True)
class Manifest:
    character: str
    size: tuple[int, int]
    cell: tuple[int, int]
    gutter: int
    max_mip_level: int
    regions: dict[str, Rect]  # face regions inside a cell: "eyes", "mouth"
    outfits: tuple[OutfitEntry, ...]
    image: str = "atlas.png"

    def outfit(self, outfit_id: str) -> OutfitEntry:
        for o in self.outfits:
            if o.id == outfit_id:
                return o
        raise KeyError(f"unknown outfit {outfit_id!r}; known: {', '.join(o.id for o in self.outfits)}")

    def region_uv(self, key: str) -> tuple[float, float, float, float]:
        """A face region in cell coordinates (0..1), as the shader wants it."""
        return self.regions[key].uv(self.cell)

    def to_json(self) -> str:
        def cell(r: Rect) -> dict:
            return {"rect": [r.x, r.y, r.w, r.h], "uv": list(r.uv(self.size))}

        data = {
            "format": FORMAT,
            "image": self.image,
            "size": list(self.size),
            "alpha": "premultiplied",
            "origin": "top-left",
            "character": self.character,
            "cell": list(self.cell),
            "gutter": self.gutter,
            "max_mip_level": self.max_mip_level,
            "regions": {
                k: {"rect": [r.x, r.y, r.w, r.h], "uv": list(r.uv(self.cell))}
                for k, r in self.regions.items()
            },
            "default_outfit": self.outfits[0].id,
            "outfits": [
                {
                    "id": o.id,
                    "name": o.name,
                    **cell(o.rect),
                    "eyes_closed": cell(o.eyes_closed),
                    "mouth_open": cell(o.mouth_open),
                    "layers": list(o.layers),
                    "thumbnail": o.thumbnail,
                    **({"names": o.names} if o.names else {}),
                }
                for o in self.outfits
            ],
        }
        text = json.dumps(data, indent=1)
        return (
            re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
            + "\n"
        )

    @classmethod
    def load(cls, folder: Path = DEFAULT_DIR) -> Manifest:
        path = Path(folder) / "manifest.json"
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
            if d.get("format") != FORMAT:
                raise AtlasError(
                    path, f"unsupported manifest format {d.get('format')!r}, expected {FORMAT!r}"
                )
            return cls(
                character=d["character"],
                size=tuple(d["size"]),
                cell=tuple(d["cell"]),
                gutter=d["gutter"],
                max_mip_level=d["max_mip_level"],
                regions={k: Rect(*v["rect"]) for k, v in d["regions"].items()},
                outfits=tuple(
                    OutfitEntry(
                        o["id"],
                        o["name"],
                        Rect(*o["rect"]),
                        Rect(*o["eyes_closed"]["rect"]),
                        Rect(*o["mouth_open"]["rect"]),
                        tuple(o["layers"]),
                        o["thumbnail"],
                        dict(o.get("names", {})),
                    )
                    for o in d["outfits"]
                ),
                image=d["image"],
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise AtlasError(
                path,
                f"unreadable atlas manifest ({type(exc).__name__}: {exc}); rebuild it with "
                "`python -m atlas build`",
            ) from None
