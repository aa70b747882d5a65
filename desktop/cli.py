"""`stella`: the desktop app's single entry point — the app, its models, your own outfits, her memory of you, the
self-test, and the programs that come with it (the server, the terminal chat, the headless voice loop), so the
bundle's one executable runs them all. `stella --help` lists every command, one line each."""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import replace
from pathlib import Path

from atlas import wardrobe
from desktop import memory_cli, webview_backend
from remote_api.shared.logs import setup_logging
from remote_api.shared.models import cli as models_cli

# Commands that are programs of their own: `stella NAME ARGS…` is `main(ARGS…)` of the module (their own
# --help says the rest). Dispatched before the app's modules are imported: the server starts no sooner for them.
PROGRAMS = {
    "selftest": ("desktop.selftest", "is this machine ready? says what to fix (--selftest)"),
    "server": ("remote_api.cli", "the Stella server, stella-server: serve, devices"),
    "chat": ("remote_api.chat_cli", "a terminal chat with a Stella server (stella-chat)"),
    "voice": ("sidecar.__main__", "the voice loop without a window, WAV in and out"),
}
EPILOG = """First start: run `stella` in a terminal; it installs the models it needs (`stella models install`), then
opens the window on the embedded default (a server on this computer) or on the server you saved (`stella run
--server URL`, or Settings). `stella COMMAND --help` shows a command's options."""


def parser() -> argparse.ArgumentParser:
    from sidecar.config import LANGUAGES  # the app's settings: not imported for the programs `main` dispatches

    p = argparse.ArgumentParser(prog="stella", description="Stella, a desktop AI companion.", epilog=EPILOG)
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    sub = p.add_subparsers(dest="cmd", title="commands", metavar="COMMAND")
    run = sub.add_parser("run", help="start Stella (the default): window or terminal chat",
                         description="Start Stella: the window, or the terminal chat when there is no display.")
    run.add_argument("--server", help="the Stella server (gateway) to use, kept for later starts; default: the one "
                                      "saved, else the embedded default")
    run.add_argument("--config", type=Path, help="TOML config for the embedded gateway")
    run.add_argument("--app-config", type=Path, help="TOML settings of the app (voice, persona, chat)")
    run.add_argument("--store", type=Path, help="the encrypted database (default: in your user data folder)")
    run.add_argument("--voice", choices=("auto", "off"), default="auto",
                     help="auto: listen and speak when the models and sound devices allow; off: typed turns only")
    run.add_argument("--language", choices=LANGUAGES,
                     help="en: English; zh: Mandarin (she hears, speaks and wakes on 你好小星 in Chinese), for this "
                          "start, over the saved setting (Settings keeps a choice). Default: the saved setting, else "
                          "voice.language")
    run.add_argument("--webview", choices=webview_backend.SETTINGS,
                     help="the window's web view on Linux: gtk (the system's WebKitGTK), qt (Qt WebEngine) or auto "
                          "(gtk when installed, else qt; the default, or [window] backend / STELLA_WINDOW__BACKEND)")
    run.add_argument("--debug-timeline", action="store_true",
                     help="show each turn's timeline (speech end to first audio, with the gaps) in the window")
    run.add_argument("--verbose", action="store_true",
                     help="in the terminal chat, show the log lines too (normally only in the log file)")
    run.set_defaults(func=_run)
    models_cli.add_parser(sub)
    wardrobe.add_parser(sub)
    memory_cli.add_parser(sub)
    for name, (_, text) in PROGRAMS.items():
        sub.add_parser(name, help=text, add_help=False)  # listed here; run by `main` before parsing
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--selftest"]:
        argv = ["selftest", *argv[1:]]
    if argv[:1] and argv[0] in PROGRAMS:
        return int(importlib.import_module(PROGRAMS[argv[0]][0]).main(argv[1:]) or 0)
    p = parser()
    args = p.parse_args(argv)
    setup_logging(args.log_level)
    if args.cmd is None:
        args = p.parse_args(["--log-level", args.log_level, "run"])
    return args.func(args)


def _run(args: argparse.Namespace) -> int:
    from desktop import launcher  # the window's modules: not for `stella models`, `stella outfits`
    from desktop.shell import WindowOptions

    window = WindowOptions(config=args.app_config, voice=args.voice, debug_timeline=args.debug_timeline,
                           webview=args.webview, language=args.language)
    if args.store is not None:
        window = replace(window, store=args.store)
    return launcher.run(args.server, args.config, window, verbose=args.verbose, log_level=args.log_level)


if __name__ == "__main__":
    sys.exit(main())
