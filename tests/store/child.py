"""Run `crash_writer` in a child process and kill it with SIGKILL, the way a crash or `kill -9` would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sidecar.store import RawKey

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Writer:
    """One `crash_writer` process and the turns it reported as committed."""

    proc: subprocess.Popen
    committed: dict[int, str] = field(default_factory=dict)  # turn id -> sha256 of its text, as reported

    @classmethod
    def start(cls, path: Path, key: RawKey, hold_after: int | None = None) -> Writer:
        """Start writing; with `hold_after`, stop after that many turns and keep the store open."""
        env = {**os.environ, "STELLA_TEST_DB_KEY": key.key.hex()}
        extra = [] if hold_after is None else [str(hold_after)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.store.crash_writer", str(path), *extra],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        return cls(proc)

    def wait_for(self, lines: int) -> None:
        """Block until the child has reported `lines` lines (the first is `open`)."""
        for _ in range(lines):
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"the writer exited (code {self.proc.wait()}) too early: {self._finish()}")
            self._take(line)

    def kill(self) -> None:
        """SIGKILL, then collect every line the child finished printing before it died."""
        self.proc.send_signal(signal.SIGKILL)
        # Read through the same buffered stream as wait_for: communicate() would skip what it buffered.
        rest = self.proc.stdout.read()
        err = self._finish()
        assert self.proc.returncode == -signal.SIGKILL, f"the writer died on its own: {err}"
        for line in rest.splitlines(keepends=True):
            self._take(line)

    def _finish(self) -> str:
        err = self.proc.stderr.read()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return err

    def _take(self, line: str) -> None:
        if line == "open\n" or not line.endswith("\n"):  # a line cut off mid-print reports nothing
            return
        turn_id, digest = line.split()
        self.committed[int(turn_id)] = digest
