"""`stella`: the desktop app's single entry point (app, models, your own outfits, embedded default)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from atlas import wardrobe
from desktop import launcher, webview_backend
from desktop.shell import WindowOptions
from remote_api.shared.logs import setup_logging
from remote_api.shared.models import cli as models_cli


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--selftest"]:
        from desktop import selftest

        return selftest.main(argv[1:])
    parser = argparse.ArgumentParser(prog="stella", description="Stella, a desktop AI companion")
    parser.add_argument("--log-level", default="INFO")
    sub = parser.add_subparsers(dest="cmd")
    models_cli.add_parser(sub)
    wardrobe.add_parser(sub)
    run = sub.add_parser("run", help="start Stella (the default command): the window, or the terminal chat "
                                      "without a display")
    run.add_argument("--server", help="use this gateway URL instead of starting the embedded default")
    run.add_argument("--config", type=Path, help="TOML config for the embedded gateway")
    run.add_argument("--app-config", type=Path, help="TOML settings of the app (voice, persona, chat)")
    run.add_argument("--store", type=Path, help="the encrypted database (default: in your user data folder)")
    run.add_argument("--voice", choices=("auto", "off"), default="auto",
                     help="auto: listen and speak when the models and sound devices allow; off: typed turns only")
    run.add_argument("--webview", choices=webview_backend.SETTINGS,
                     help="the window's web view on Linux: gtk (the system's WebKitGTK), qt (Qt WebEngine) or auto "
                          "(gtk when installed, else qt; the default, or [window] backend / STELLA_WINDOW__BACKEND)")
    run.add_argument("--debug-timeline", action="store_true",
                     help="show each turn's timeline (speech end to first audio, with the gaps) in the window")
    run.add_argument("--verbose", action="store_true",
                     help="in the terminal chat, show the log lines too (normally only in the log file)")
    run.set_defaults(func=_run)
    args = parser.parse_args(argv)
    setup_logging(args.log_level)
    if args.cmd is None:
        args = parser.parse_args(["--log-level", args.log_level, "run"])
    return args.func(args)


def _run(args: argparse.Namespace) -> int:
    window = WindowOptions(config=args.app_config, voice=args.voice, debug_timeline=args.debug_timeline,
                           webview=args.webview)
    if args.store is not None:
        window = replace(window, store=args.store)
    return launcher.run(args.server, args.config, window, verbose=args.verbose, log_level=args.log_level)


if __name__ == "__main__":
    sys.exit(main())
