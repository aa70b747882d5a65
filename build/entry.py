"""The one executable of the Stella bundle: the app, its engine, the gateway, the chat and the self-test.

    stella [run …] | stella models …        the app (desktop/cli.py)
    stella --selftest [--server URL]        is this machine ready? (desktop/selftest.py)
    stella sidecar …   (or --sidecar …)     the engine process the window spawns (sidecar/engine/__main__.py)
    stella voice run …                      the headless voice loop (sidecar/__main__.py)
    stella server …                         the gateway, `stella-server` (remote_api/cli.py)
    stella chat …                           the terminal chat, `stella-chat` (remote_api/chat_cli.py)
    stella -m MODULE …                      what `python -m MODULE` means in the source tree, for the
                                            code that spawns `sys.executable -m …` (one of MODULES)

Started from a terminal with models missing, the app first provisions them with progress bars
(`stella models install`); started from a desktop launcher it opens at once and says what is missing.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys

# mode / module name -> the module whose main(argv) runs it
MODULES = {
    "sidecar.engine": "sidecar.engine.__main__",
    "sidecar": "sidecar.__main__",
    "remote_api.cli": "remote_api.cli",
    "remote_api.chat_cli": "remote_api.chat_cli",
    "desktop.cli": "desktop.cli",
}
MODES = {
    "sidecar": "sidecar.engine.__main__",
    "--sidecar": "sidecar.engine.__main__",
    "voice": "sidecar.__main__",
    "server": "remote_api.cli",
    "chat": "remote_api.chat_cli",
    "--selftest": "desktop.selftest",
    "selftest": "desktop.selftest",
}
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
        elif arg in ("-h", "--help") or not arg.startswith("-"):
            return arg
    return None


def _uses_embedded_server(argv: list[str]) -> bool:
    return not any(a == "--server" or a.startswith("--server=") for a in argv)


def provision_missing_models(argv: list[str]) -> None:
    """First start from a terminal: install the models the app needs, with progress bars."""
    if not sys.stderr.isatty() or os.environ.get("STELLA_NO_FIRST_RUN_INSTALL"):
        return
    from tqdm import tqdm

    from remote_api.shared.models.errors import ModelError
    from remote_api.shared.models.provision import Models, default_specs

    models = Models()
    kinds = {"asr", "tts", "wake"} | ({"llm"} if _uses_embedded_server(argv) else set())
    wanted = [s for s in default_specs() if s.kind in kinds and s.first_start]
    missing = [s for s in wanted if not all(f.ok for f in models.check(s, quick=True))]
    if not missing:
        return
    names = ", ".join(s.name for s in missing)
    total = sum(s.total_size for s in missing)
    print(f"Stella needs these models before it starts: {names} ({total / 1e6:.0f} MB) — installing them into "
          f"{models.root} (the same as `stella models install`)…", file=sys.stderr, flush=True)
    try:
        with tqdm(total=total, unit="B", unit_scale=True, desc="models", file=sys.stderr) as bar:
            for spec in missing:
                bar.set_postfix_str(spec.name)
                try:
                    models.install(spec)
                except (ModelError, OSError) as exc:  # the app still starts: typed turns, and it says why
                    bar.write(f"{spec.name}: not installed — {exc}")
                bar.update(spec.total_size)
    except KeyboardInterrupt:
        print("\nModel install interrupted; run `stella models install` to finish it (it resumes).", file=sys.stderr)
        raise SystemExit(130) from None


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
