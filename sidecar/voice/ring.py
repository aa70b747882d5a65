"""A single-producer, single-consumer sample ring that needs no lock.

It sits between an audio callback (PortAudio's thread, which must never block) and the
asyncio side. The producer only advances `_written`, the consumer only advances `_read`;
each is one Python int store, atomic under the GIL. A full ring drops the newest samples and
counts them (an overrun the consumer can report) instead of waiting.
"""

from __future__ import annotations

import numpy as np

from sidecar.memory import give_back_pages


class Ring:
    def __init__(self, capacity: int, dtype: type = np.float32) -> None:
        self._buf = np.zeros(capacity, dtype=dtype)
        self.capacity = capacity
        self._written = 0  # total samples ever written (producer side)
        self._read = 0  # total samples ever read (consumer side)
        self._discard_to = 0  # producer's request: the consumer skips up to here
        self.dropped = 0  # samples lost to a full ring

    @property
    def written(self) -> int:
        return self._written

    @property
    def consumed(self) -> int:
        return self._read

    def available(self) -> int:
        return self._written - max(self._read, self._discard_to)

    # --- producer ---------------------------------------------------------------------------

    def write(self, samples: np.ndarray) -> int:
        """Copy in as many samples as fit; returns how many."""
        free = self.capacity - (self._written - self._read)
        n = min(len(samples), free)
        if n < len(samples):
            self.dropped += len(samples) - n
        start = self._written % self.capacity
        first = min(n, self.capacity - start)
        self._buf[start:start + first] = samples[:first]
        self._buf[:n - first] = samples[first:n]
        self._written += n
        return n

    def discard(self) -> None:
        """Ask the consumer to skip everything written so far (playback: drop queued audio)."""
        self._discard_to = self._written

    def release(self) -> int:
        """Nothing left to read: give the buffer's memory back to the system (bytes given; 0 if something is
        still to be read). A ring written all the way round holds all its pages until then, though it is
        mostly empty. Producer side: the consumer of an empty ring copies nothing out of the buffer."""
        return give_back_pages(self._buf) if self.available() == 0 else 0

    # --- consumer ---------------------------------------------------------------------------

    def read_into(self, out: np.ndarray) -> int:
        """Fill `out` from the ring (no allocation); returns how many samples it got."""
        if self._discard_to > self._read:
            self._read = self._discard_to
        n = min(len(out), self._written - self._read)
        start = self._read % self.capacity
        first = min(n, self.capacity - start)
        out[:first] = self._buf[start:start + first]
        out[first:n] = self._buf[:n - first]
        self._read += n
        return n

    def read(self, n: int) -> np.ndarray:
        out = np.empty(min(n, self.available()), dtype=self._buf.dtype)
        got = self.read_into(out)
        return out[:got]
