"""A real gateway (`stella-server serve`) for the desktop tests and bench, with its own state."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from remote_api.shared.processes import free_port, running

STELLA_SERVER = str(Path(sys.executable).with_name("stella-server"))


@dataclass
class Gateway:
    url: str
    data_dir: Path

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def pairing_code(self, name: str) -> str:
        """What the operator runs to let a new device in: `stella-server device add NAME`."""
        out = subprocess.run([STELLA_SERVER, "device", "add", name, "--data-dir", str(self.data_dir)],
                             capture_output=True, text=True, check=True, timeout=30).stdout
        found = re.search(r"--pair (\S+)", out)
        assert found, f"no pairing code in: {out!r}"
        return found.group(1)


@contextlib.contextmanager
def running_gateway(upstream: str, data_dir: Path, env: dict[str, str] | None = None) -> Iterator[Gateway]:
    """On a free loopback port; yields once /health answers 200, always terminated."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with running([STELLA_SERVER, "serve", "--host", "127.0.0.1", "--port", str(port), "--upstream", upstream,
                  "--data-dir", str(data_dir), "--log-level", "WARNING"], url, timeout=60, grace=10,
                 env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL):
        yield Gateway(url, data_dir)
