"""Which processes an app left behind: a process tree read from /proc."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def descendants(pid: int) -> set[int]:
    """`pid` and every process below it."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        found.add(p)
        todo += children.get(p, [])
    return found


def alive(pids: set[int]) -> set[int]:
    """The ones still running (zombies waiting for their parent's wait() count as gone)."""
    living = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                living.add(pid)
    return living


def _kib(pids: set[int], file: str, field: str) -> int:
    """The sum of a /proc/<pid>/`file` memory field (in KiB) over these processes."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
                if line.startswith(field):
                    total += int(line.split()[1])
    return total


def rss_kib(pids: set[int]) -> int:
    """Resident memory of these processes together (VmRSS), in KiB."""
    return _kib(pids, "status", "VmRSS:")


def pss_kib(pids: set[int]) -> int:
    """Proportional memory of these processes together (Pss: each shared page divided among its users), in KiB."""
    return _kib(pids, "smaps_rollup", "Pss:")


def cpu_seconds(pids: set[int]) -> float:
    """User + system CPU time these processes have used so far, together."""
    ticks = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime + stime
    return ticks / os.sysconf("SC_CLK_TCK")
