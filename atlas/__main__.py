"""Command line: ``python -m atlas {art,build,contact-sheet}``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from atlas.errors import AtlasError
from atlas.manifest import DEFAULT_DIR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m atlas", description="Stella's character art and texture atlas."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    art = sub.add_parser("art", help="draw the default character's layer PNGs into SRC_DIR")
    art.add_argument("src", type=Path, metavar="SRC_DIR")
    build = sub.add_parser("build", help="pack the outfits of SRC into OUT/atlas.png + OUT/manifest.json")
    build.add_argument("src", type=Path, metavar="SRC")
    build.add_argument("out", type=Path, metavar="OUT")
    build.add_argument(
        "--max-size", type=int, default=4096, help="largest atlas side in pixels (default 4096)"
    )
    sheet = sub.add_parser("contact-sheet", help="render every outfit into one PNG, to judge the art")
    sheet.add_argument("out", type=Path, metavar="OUT.png")
    sheet.add_argument(
        "--atlas", type=Path, default=DEFAULT_DIR, help="atlas folder (default: the built-in one)"
    )
    args = parser.parse_args(argv)

    try:
        if args.command == "art":
            from atlas.art import write_sources

            write_sources(args.src)
            print(f"wrote the default character's layers to {args.src}")
        elif args.command == "build":
            from atlas.builder import build as build_atlas

            manifest = build_atlas(args.src, args.out, max_size=args.max_size)
            w, h = manifest.size
            print(f"{args.out}: {len(manifest.outfits)} outfits in a {w}x{h} atlas")
        else:
            from atlas.contact_sheet import write_contact_sheet

            write_contact_sheet(args.atlas, args.out)
            print(f"wrote {args.out}")
    except AtlasError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
