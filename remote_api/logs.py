"""Logging set-up shared by every Stella process: millisecond timestamps, one format."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

FORMAT = "%(asctime)s.%(msecs)03d %(levelname)-7s %(name)s: %(message)s"
DATEFMT = "%Y-%m-%d %H:%M:%S"


def setup_logging(level: str = "INFO", file: Path | None = None, stderr: bool = True) -> None:
    """Configure the root logger once per process (stderr unless told not, plus a file when given)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)] if stderr else []
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(file, encoding="utf-8"))
    logging.basicConfig(level=level.upper(), format=FORMAT, datefmt=DATEFMT, handlers=handlers, force=True)
