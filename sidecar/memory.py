"""Memory the engine no longer uses, given back to the system, and cheap to take again.

Loading a model reads its file and converts its weights (CTranslate2 to int8, onnxruntime's graph
optimisations); the buffers freed afterwards stay in glibc's heap, counted in the app's memory
until something reuses them. Measured after loading whisper, silero and piper: 33 MiB handed back.

The engine's heap is tuned when the shell starts it (`engine_env`, a glibc tunable, read at exec): two
malloc arenas, not eight per core. Each thread that loads or runs a model (the loader, the asyncio workers,
onnxruntime's and CTranslate2's) kept its own arena's fragments, so the engine after a spoken turn was
227-253 MiB PSS from run to run; with two, 216-240, most runs 216-224 (the whole app 537-545 -> 516-523,
`tests/bench/bench_desktop.py`'s turn). Not taken: the heap on transparent huge pages
(`glibc.malloc.hugetlb=1`). Piper's working memory goes back after every reply (tts.py), and on huge
pages the next reply's first clause took its fresh pages in ~6 ms instead of ~32 (32 clauses each way,
median), but the kernel's khugepaged then filled the heap's holes to make huge pages: the engine grew by
8-12 MiB in the 20 s after a turn.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import mmap
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np  # the shell imports this module for `engine_env`, and stays without numpy

MADV_DONTNEED = 4  # Linux: the pages read as zeros until written again
TUNABLES_ENV = "GLIBC_TUNABLES"
ENGINE_TUNABLES = {"glibc.malloc.arena_max": "2"}
# numpy's BLAS on one thread: the engine's products are small (the wake model's 1536 x 768 layer every
# 80 ms), where a second thread costs more CPU than it saves (tests/bench/wake_rates.py: 138 -> 89 ms of
# CPU per second of audio, idle-listening with the phrase engine).
ENGINE_THREADS = {"OPENBLAS_NUM_THREADS": "1"}


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


def give_back_pages(array: np.ndarray) -> int:
    """Hand the pages wholly inside `array`'s memory back to the system (Linux); returns how many bytes.

    For a long-lived buffer whose contents are no longer needed (it reads as zeros afterwards): the system
    gives it fresh pages again only where it is written next. Elsewhere nothing is done (0).
    """
    libc = _libc()
    if libc is None or not sys.platform.startswith("linux") or not array.flags.c_contiguous:
        return 0
    page = mmap.PAGESIZE
    start = -(-array.ctypes.data // page) * page
    end = (array.ctypes.data + array.nbytes) // page * page
    if end <= start:
        return 0
    if libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), MADV_DONTNEED) != 0:
        return 0
    return end - start


def engine_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the engine's heap tunables and BLAS threads added; a tunable or thread count the user set
    keeps their value, and their other tunables are kept."""
    tunables = [t for t in env.get(TUNABLES_ENV, "").split(":") if t]
    own = {t.split("=", 1)[0] for t in tunables}
    tunables += [f"{name}={value}" for name, value in ENGINE_TUNABLES.items() if name not in own]
    return {**ENGINE_THREADS, **env, TUNABLES_ENV: ":".join(tunables)}
