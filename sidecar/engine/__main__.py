"""`python -m sidecar.engine`: the engine of the desktop app, driven by the window over the channel.

    STELLA_CHANNEL_SECRET=<secret> python -m sidecar.engine --server http://gpu-box:8765 --store PATH

The desktop shell starts and supervises it (desktop/supervisor.py). Once the channel listens
it prints ``channel_port=<port>`` on stdout; then it opens the encrypted store (asking the
window for a passphrase when there is no keyring), keeps the link to the gateway up, and runs
the voice loop when the voice models and sound devices are there. The parts live in
sidecar/engine/.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from dataclasses import replace
from pathlib import Path

from remote_api.shared.config_loader import ConfigError
from remote_api.shared.logs import setup_logging
from sidecar.config import LANGUAGES, load_app_config
from sidecar.engine.core import App, Options
from sidecar.launch import ChannelError, Launch
from sidecar.store import StoreConfig
from sidecar.workers import with_background_workers

log = logging.getLogger(__name__)


def parse(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(prog="python -m sidecar.engine", description="Stella's engine for the desktop window")
    p.add_argument("--config", type=Path, help="TOML settings (env STELLA_SECTION__KEY overrides them)")
    p.add_argument("--server", help="the gateway URL (default: the saved setting, else the config)")
    p.add_argument("--store", type=Path, default=StoreConfig().path, help="the encrypted database")
    p.add_argument("--voice", choices=("auto", "off"), default="auto",
                   help="auto: listen and speak when models and devices allow; off: typed turns only")
    p.add_argument("--language", choices=LANGUAGES, help="en: English; zh: Mandarin (default: the saved setting, "
                                                         "else the config)")
    p.add_argument("--log-level")
    a = p.parse_args(argv)
    return Options(a.config, a.server, a.store, a.voice, a.log_level, a.language)


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    try:
        launch = Launch.from_env()
        config = load_app_config(options.config)
        if options.server:
            config = replace(config, server_url=options.server)
        if options.language:
            config = replace(config, voice=replace(config.voice, language=options.language))
    except (ChannelError, ConfigError, ValueError) as exc:
        print(f"stella engine: {exc}", file=sys.stderr)
        return 2
    setup_logging(options.log_level or config.log_level)
    try:
        asyncio.run(with_background_workers(App(options, launch, config).run(), config.voice.work_nice))
    except ChannelError as exc:
        log.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
