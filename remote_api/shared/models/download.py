"""Resumable HTTP download with checksum verification and a progress bar.

For users whose machine lacks the PyPI packages that carry the models: files come from each
model's official source, land in `NAME.part` (so an interrupted download resumes with a Range
request instead of starting over), and only a file with the right checksum is moved into place.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import httpx
from tqdm import tqdm

from remote_api.shared.models import checksums
from remote_api.shared.models.errors import ModelError

log = logging.getLogger(__name__)


def download(
    url: str,
    dest: Path,
    checksum: str,
    *,
    size: int | None = None,
    retries: int = 5,
    progress: bool = True,
    client: httpx.Client | None = None,
) -> Path:
    """Fetch `url` to `dest`, resuming `dest.part` across failures; verify `checksum` at the end."""
    part = dest.with_name(dest.name + ".part")
    dest.parent.mkdir(parents=True, exist_ok=True)
    own_client = client is None
    client = client or httpx.Client(follow_redirects=True, timeout=httpx.Timeout(30.0, connect=10.0))
    bar = tqdm(total=size, unit="B", unit_scale=True, desc=dest.name, disable=not progress, leave=False)
    try:
        for attempt in range(retries + 1):
            try:
                _fetch_into(client, url, part, bar)
                break
            except (httpx.TransportError, _Incomplete) as exc:
                if attempt == retries:
                    raise ModelError(
                        f"downloading {url} failed after {retries + 1} attempts ({exc}); "
                        f"the partial file {part} is kept — run the same command again to resume"
                    ) from None
                log.warning("download of %s interrupted (%s); resuming", url, exc)
    finally:
        bar.close()
        if own_client:
            client.close()
    if not checksums.matches(part, checksum):
        got = checksums.file_digest(part, checksum)
        part.unlink()
        raise ModelError(
            f"{url} downloaded with checksum {got}, expected {checksum}; the file was discarded. "
            "The source may have changed or the transfer was corrupted: try again, or install the "
            "model's PyPI package and use `stella models install --source local`"
        )
    os.replace(part, dest)
    return dest


class _Incomplete(Exception):
    """The server closed the body before Content-Length bytes arrived."""


def _fetch_into(client: httpx.Client, url: str, part: Path, bar: tqdm) -> None:
    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    with client.stream("GET", url, headers=headers) as resp:
        if resp.status_code == 416 and have:
            return  # we already hold every byte
        if resp.status_code not in (200, 206):
            raise ModelError(f"{url} answered HTTP {resp.status_code}; check the URL or your network")
        if resp.status_code == 200 and have:
            have = 0  # the server ignored Range: start over
        expected = resp.headers.get("Content-Length")
        bar.reset(total=(have + int(expected)) if expected else None)
        bar.update(have)
        got = 0
        with open(part, "ab" if have else "wb") as out:
            for block in resp.iter_bytes():
                out.write(block)
                got += len(block)
                bar.update(len(block))
        if expected is not None and got < int(expected):
            raise _Incomplete(f"got {have + got} of {have + int(expected)} bytes")
