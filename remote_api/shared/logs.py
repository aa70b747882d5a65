"""Logging set-up shared by every Stella process: millisecond timestamps, one format, and
nothing secret or private at the default level.

Every line goes through `redact`, so a password in a URL (``redis://:pw@host``) never reaches a
log whatever logged it, traceback included. What the user said and what Stella answered are
logged at DEBUG only (elsewhere, INFO lines give lengths and ids); a process logging at DEBUG
says so in its first line, since that log then holds the conversation.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

FORMAT = "%(asctime)s.%(msecs)03d %(levelname)-7s %(name)s: %(message)s"
DATEFMT = "%Y-%m-%d %H:%M:%S"
_PASSWORD = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/\s]*):(?P<password>[^@/\s]+)@")
DEBUG_WARNING = ("DEBUG logging is on: this log holds what the user says and Stella's replies; "
                 "do not share it (the default level, INFO, keeps them out)")


def redact(text: str) -> str:
    """`text` with the password of any URL in it replaced by ***."""
    return _PASSWORD.sub(r"\g<scheme>\g<user>:***@", text)


class RedactingFormatter(logging.Formatter):
    """The shared format, passwords redacted from the whole line (message, arguments, traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def setup_logging(level: str = "INFO", file: Path | None = None, stderr: bool = True) -> None:
    """Configure the root logger once per process (stderr unless told not, plus a file when given)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)] if stderr else []
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(file, encoding="utf-8"))
    formatter = RedactingFormatter(FORMAT, DATEFMT)
    for handler in handlers:
        handler.setFormatter(formatter)
    logging.basicConfig(level=level.upper(), handlers=handlers, force=True)
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        logging.getLogger("stella").warning(DEBUG_WARNING)
