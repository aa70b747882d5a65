"""Memory a model load freed, given back to the system.

Loading a model reads its file and converts its weights (CTranslate2 to int8, onnxruntime's graph
optimisations); the buffers freed afterwards stay in glibc's heap, counted in the app's memory
until something reuses them. Measured after loading whisper, silero and piper: 33 MiB handed back.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


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
