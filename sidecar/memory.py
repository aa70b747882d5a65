"""Memory the engine no longer uses, given back to the system, and cheap to take again.

Loading a model reads its file and converts its weights (CTranslate2 to int8, onnxruntime's graph
optimisations); the buffers freed afterwards stay in glibc's heap, counted in the app's memory
until something reuses them. Measured after loading whisper, silero and piper: 33 MiB handed back.

Piper's working memory goes back after every reply (tts.py), so the next reply's first clause takes
~30 MiB of fresh pages. With glibc's heap on transparent huge pages (`glibc.malloc.hugetlb=1`, where
the system allows them on request, as Debian and Ubuntu do) that costs ~4 ms, against ~17 ms in
4 KiB pages (32 clauses each way, median; the engine's memory otherwise within 2 MiB).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Mapping

TUNABLES_ENV = "GLIBC_TUNABLES"  # read by glibc when a process starts, so set for the engine by the shell
HUGE_PAGES = "glibc.malloc.hugetlb=1"


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None  # glibc only


def give_back() -> None:
    """Return the heap's free pages to the system (glibc's malloc_trim; elsewhere nothing to do)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def with_huge_pages(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a process whose heap should be on transparent huge pages (the engine); a user's own
    `glibc.malloc.hugetlb` setting wins, their other tunables are kept."""
    tunables = env.get(TUNABLES_ENV, "")
    if "glibc.malloc.hugetlb=" in tunables:
        return dict(env)
    return {**env, TUNABLES_ENV: f"{tunables}:{HUGE_PAGES}" if tunables else HUGE_PAGES}
