"""The store's files decrypted page by page with the test's raw key, free pages and the WAL included: what a
thief with the key could read, which must hold nothing forgotten (SQLCipher 4: AES-256-CBC per page, a raw key
used as is, each page's IV in its last 80 reserved bytes; page 1 starts with the 16-byte salt)."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from sidecar.store import RawKey
from sidecar.store.db import PAGE_SIZE

RESERVE = 80  # IV (16) + HMAC-SHA512 (64)
WAL_HEADER, FRAME_HEADER = 32, 24


def _page(key: bytes, page: bytes, first: bool) -> bytes:
    iv = page[PAGE_SIZE - RESERVE:PAGE_SIZE - RESERVE + 16]
    start = 16 if first else 0
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    return decryptor.update(page[start:PAGE_SIZE - RESERVE]) + decryptor.finalize()


def decrypted(db_path: Path, key: RawKey) -> bytes:
    """Every page of the database file and of its WAL, in clear."""
    out = []
    data = db_path.read_bytes()
    for n in range(0, len(data), PAGE_SIZE):
        out.append(_page(key.key, data[n:n + PAGE_SIZE], first=n == 0))
    wal = Path(f"{db_path}-wal")
    if wal.exists():
        frames = wal.read_bytes()[WAL_HEADER:]
        step = FRAME_HEADER + PAGE_SIZE
        for n in range(0, len(frames) - step + 1, step):
            number = int.from_bytes(frames[n:n + 4], "big")
            out.append(_page(key.key, frames[n + FRAME_HEADER:n + step], first=number == 1))
    return b"".join(out)
