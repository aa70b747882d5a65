"""`stella outfits`: the user's own outfits, built into an atlas in the user data folder.

The first change copies the built-in character's layers (what `python -m atlas art` draws) into
the user's character folder, so the user's atlas holds the built-in outfits and theirs. Every
change is made on a staged copy and built there; only a build that succeeded replaces the
user's folders, so a bad layer leaves the atlas the app shows as it was. The app picks the new
atlas up at its next start (atlas/user.py); the installed app is never written to.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from atlas.errors import AtlasError
from atlas.manifest import DEFAULT_DIR, Manifest
from atlas.source import DEFAULT_LAYERS, OUTFIT_ID, load_source, read_layer
from atlas.user import UserFolders, choose_atlas

LAYER_FILES = tuple(f"{n}.png" for n in DEFAULT_LAYERS)
LAYER_HELP = ("outfit.png (the clothes, required), accessories.png and shading.png (optional), each an RGBA "
              "PNG of the character's cell size")


def add(outfit_id: str, layers: Path, name: str | None = None, folders: UserFolders | None = None) -> Manifest:
    """Add the outfit whose layer PNGs are in `layers` and rebuild; errors name the user's file."""
    folders = folders or UserFolders.default()
    layers = Path(layers)
    if not OUTFIT_ID.match(outfit_id):
        raise AtlasError(folders.source / "outfits" / outfit_id,
                         f"{outfit_id!r} cannot be an outfit id: use lowercase letters, digits, '_' or '-' "
                         "(at most 40, e.g. red_hat); the button label comes from --name")
    if name is not None and not name.strip():
        raise AtlasError(layers, "--name must not be empty: it is the outfit button's label")
    found = _layer_files(layers)
    if (folders.source / "character.json").is_file():
        mine = load_source(folders.source)
        cell, taken = mine.cell, {o.id: o.name for o in mine.outfits}
    else:  # the first add starts from the built-in character
        from atlas.figure import CELL  # numpy: only when an outfit is added

        cell, taken = CELL, {o.id: o.name for o in Manifest.load(DEFAULT_DIR).outfits}
    if outfit_id in taken:
        raise AtlasError(folders.source / "outfits" / outfit_id,
                         f"duplicate id: your character already has an outfit {outfit_id!r} ({taken[outfit_id]!r}); "
                         f"pick another id, or remove it first with `stella outfits remove {outfit_id}`")
    for path in found:
        read_layer(path, cell)  # PNG, RGBA, exactly the cell: the user's own file is named, before any work

    def change(src: Path) -> None:
        meta: dict[str, object] = {"order": max(o.order for o in load_source(src).outfits) + 1}  # after the others
        target = src / "outfits" / outfit_id
        target.mkdir(parents=True)
        for path in found:
            shutil.copyfile(path, target / path.name)
        if name is not None:
            meta["name"] = name.strip()
        (target / "outfit.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    return _rebuilt(folders, change)


def remove(outfit_id: str, folders: UserFolders | None = None) -> Manifest:
    """Take an outfit out of the user's character (a built-in one too: the user's copy only)."""
    folders = folders or UserFolders.default()

    def change(src: Path) -> None:
        target = src / "outfits" / outfit_id
        if not target.is_dir():
            ids = ", ".join(o.id for o in load_source(src).outfits)
            raise AtlasError(folders.source / "outfits" / outfit_id,
                             f"no outfit {outfit_id!r} in your character (it has: {ids}); "
                             "`stella outfits list` shows them")
        shutil.rmtree(target)

    return _rebuilt(folders, change)


def rebuild(folders: UserFolders | None = None) -> Manifest:
    """Build the atlas again from the user's character folder, after PNGs were edited or dropped in
    by hand (the first time, the folder is made from the built-in character)."""
    return _rebuilt(folders or UserFolders.default(), None)


def reset(folders: UserFolders | None = None) -> bool:
    """Remove the user's character and atlas: the app shows the built-in one again. False if there was none."""
    folders = folders or UserFolders.default()
    there = [p for p in (folders.atlas, folders.source) if p.exists()]
    for path in there:
        shutil.rmtree(path)
    return bool(there)


def _layer_files(layers: Path) -> list[Path]:
    """The layer PNGs of an outfit folder, refusing what looks like a layer but is not one."""
    if not layers.is_dir():
        raise AtlasError(layers, f"not a folder: --layers names the folder holding {LAYER_HELP}")
    for path in sorted(layers.iterdir()):
        stem, suffix = path.stem.lower(), path.suffix.lower()
        if path.name in LAYER_FILES or not path.is_file():
            continue
        if stem in DEFAULT_LAYERS:
            raise AtlasError(path, f"layers must be PNG files named exactly {', '.join(LAYER_FILES)}: "
                                   f"save this one as {stem}.png")
        if suffix == ".png":
            raise AtlasError(path, f"unknown layer: an outfit's layers are {LAYER_HELP}; rename or remove it")
    if not (layers / "outfit.png").is_file():
        raise AtlasError(layers / "outfit.png", f"missing layer 'outfit': every outfit needs it ({LAYER_HELP})")
    return [layers / n for n in LAYER_FILES if (layers / n).is_file()]


def _rebuilt(folders: UserFolders, change: Callable[[Path], None] | None) -> Manifest:
    staged_source, staged_atlas = folders.data / ".character.new", folders.data / ".atlas.new"
    for path in (staged_source, staged_atlas):
        shutil.rmtree(path, ignore_errors=True)
    try:
        if folders.source.is_dir():
            shutil.copytree(folders.source, staged_source)
        else:
            from atlas.art import write_sources  # draws the built-in character: only on the first change

            write_sources(staged_source)
        try:
            if change is not None:
                change(staged_source)
            from atlas.builder import build  # numpy and the renderer: only when an outfit changes, not for `stella run`

            manifest = build(staged_source, staged_atlas)
        except AtlasError as exc:
            raise _named_in_place(exc, staged_source, folders.source) from None
        _swap(staged_source, folders.source)
        _swap(staged_atlas, folders.atlas)
    finally:
        for path in (staged_source, staged_atlas):
            shutil.rmtree(path, ignore_errors=True)
    return manifest


def _named_in_place(exc: AtlasError, staged: Path, real: Path) -> AtlasError:
    """The error as the user will find the file: in their character folder, not the staged copy."""
    if exc.path.is_relative_to(staged):
        return AtlasError(real / exc.path.relative_to(staged), exc.problem)
    return exc


def _swap(new: Path, target: Path) -> None:
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    new.rename(target)
    shutil.rmtree(old, ignore_errors=True)


# --- the command line -----------------------------------------------------------------------------


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("outfits", help="your own outfits: list, add, remove, build, reset",
                              description="Outfits of your own, built into your user data folder "
                                          f"({UserFolders.default().data}); the app shows them after a restart.")
    sub = p.add_subparsers(dest="outfits_cmd", required=True)
    sub.add_parser("list", help="the outfits the app shows, and which atlas it uses")
    a = sub.add_parser("add", help="add an outfit from a folder of layer PNGs and rebuild")
    a.add_argument("id", metavar="ID", help="the outfit's id: lowercase letters, digits, '_' or '-' (e.g. red_hat)")
    a.add_argument("--layers", type=Path, required=True, metavar="DIR", help=f"the folder holding {LAYER_HELP}")
    a.add_argument("--name", help="the button label (default: from the id, 'red_hat' -> 'Red hat')")
    r = sub.add_parser("remove", help="take an outfit out of your character and rebuild")
    r.add_argument("id", metavar="ID")
    sub.add_parser("build", help="rebuild your atlas from your character folder, after adding or editing PNGs there "
                                 "(the first time, the folder is made from the built-in character)")
    sub.add_parser("reset", help="remove your character and atlas: the built-in one is shown again")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    folders = UserFolders.default()
    try:
        if args.outfits_cmd == "list":
            return _list(folders)
        if args.outfits_cmd == "reset":
            print("Removed your character: Stella wears the built-in outfits after a restart." if reset(folders)
                  else "You have no character of your own: the built-in one is in use.")
            return 0
        if args.outfits_cmd == "add":
            manifest = add(args.id, args.layers, args.name, folders)
            done = f"added {args.id!r}"
        elif args.outfits_cmd == "remove":
            manifest = remove(args.id, folders)
            done = f"removed {args.id!r}"
        else:
            manifest = rebuild(folders)
            done = f"built your atlas from {folders.source}"
    except AtlasError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    w, h = manifest.size
    print(f"{done}: {len(manifest.outfits)} outfits in a {w}x{h} atlas in {folders.atlas}. "
          "Restart Stella to see them.")
    return 0


def _list(folders: UserFolders) -> int:
    choice = choose_atlas(folders=folders)
    built_in = {o.id for o in Manifest.load(DEFAULT_DIR).outfits}
    where = f"yours, {choice.folder}" if choice.user else f"the built-in one, {choice.folder}"
    print(f"The app shows this atlas: {where}")
    if choice.problem:
        print(choice.problem, file=sys.stderr)
    for o in choice.manifest.outfits:
        print(f"  {o.id:20} {o.name:24} {'built-in' if o.id in built_in else 'yours'}")
    if choice.user and _edited_since_build(folders):
        print("Your character's files changed after the last build: run `stella outfits build`.")
    return 1 if choice.problem else 0


def _edited_since_build(folders: UserFolders) -> bool:
    built = (folders.atlas / "manifest.json").stat().st_mtime
    return any(p.stat().st_mtime > built for p in folders.source.rglob("*") if p.is_file())
