"""Checksums written as `algo:hex` (sha256 for our files, sha1 where upstream only publishes that)."""

from __future__ import annotations

import hashlib
from pathlib import Path

_ALGOS = ("sha256", "sha1")


def parse(checksum: str) -> tuple[str, str]:
    algo, _, digest = checksum.partition(":")
    if algo not in _ALGOS or not digest:
        raise ValueError(f"checksum {checksum!r} must look like 'sha256:<hex>' or 'sha1:<hex>'")
    return algo, digest.lower()


def new_hasher(checksum: str) -> hashlib._Hash:
    return hashlib.new(parse(checksum)[0])


def file_digest(path: Path, checksum: str) -> str:
    """The digest of `path` in the algorithm `checksum` uses, as `algo:hex`."""
    hasher = new_hasher(checksum)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            hasher.update(block)
    return f"{parse(checksum)[0]}:{hasher.hexdigest()}"


def matches(path: Path, checksum: str) -> bool:
    return file_digest(path, checksum) == "{}:{}".format(*parse(checksum))
