"""`stella`: the desktop app's single entry point (app, models, embedded default)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from desktop import launcher
from remote_api.logs import setup_logging
from sidecar.models import cli as models_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stella", description="Stella, a desktop AI companion")
    parser.add_argument("--log-level", default="INFO")
    sub = parser.add_subparsers(dest="cmd")
    models_cli.add_parser(sub)
    run = sub.add_parser("run", help="start Stella (default: the embedded local server + app)")
    run.add_argument("--server", help="use this gateway URL instead of starting the embedded default")
    run.add_argument("--config", type=Path, help="TOML config for the embedded gateway")
    run.set_defaults(func=lambda a: launcher.run(a.server, a.config))
    args = parser.parse_args(argv)
    setup_logging(args.log_level)
    if args.cmd is None:
        parser.print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
