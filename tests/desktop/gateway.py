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

import httpx

from remote_api.llama_server import free_port
from tests.desktop.polling import wait_for

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
    proc = subprocess.Popen(
        [STELLA_SERVER, "serve", "--host", "127.0.0.1", "--port", str(port), "--upstream", upstream,
         "--data-dir", str(data_dir), "--log-level", "WARNING"],
        env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        def healthy() -> bool:
            assert proc.poll() is None, f"stella-server exited with {proc.returncode}"
            with contextlib.suppress(httpx.TransportError):
                return httpx.get(f"{url}/health", timeout=2).status_code == 200
            return False

        wait_for(healthy, 60, "the gateway answering /health")
        yield Gateway(url, data_dir)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
