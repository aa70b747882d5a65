"""Resumable HTTP downloads with checksum verification, back-off between retries and a progress bar.

Every fetch of an install run (package index pages, wheels, a model's official files) goes through one
`Network`: files land in `NAME.part` (an interrupted download resumes with a Range request instead of
starting over), only a file with the right checksum is moved into place, a failed connection is tried again
after a growing pause (a network that is coming back needs seconds, not microseconds), and a host that could
not be reached at all is not tried again in the same run, so an offline machine hears so once, not once per
file.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from remote_api.shared.models import checksums
from remote_api.shared.models.errors import ModelError

if TYPE_CHECKING:  # httpx and tqdm are imported when something is fetched: not by every user of the models
    import httpx
    from tqdm import tqdm

log = logging.getLogger(__name__)

# Answers worth asking again after a pause: the server is busy, restarting or rate-limiting.
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Backoff:
    """How many times a request is tried and how long to wait before each retry (doubling, capped)."""

    attempts: int = 4
    first_s: float = 1.0
    most_s: float = 8.0

    def delays(self) -> Iterator[float]:
        """The pause before the 2nd, 3rd… attempt."""
        for n in range(self.attempts - 1):
            yield min(self.first_s * 2 ** n, self.most_s)


class Unreachable(ModelError):
    """A host did not answer at all (no name resolution, connection refused, timed out)."""

    def __init__(self, host: str, reason: str, tries: int = 0, waited_s: float = 0.0) -> None:
        self.host = host
        self.reason = reason
        tried = f" (tried {tries} times over {waited_s:.0f} s)" if tries > 1 else ""
        super().__init__(f"could not reach {host}: {reason}{tried}")


class HttpStatus(ModelError):
    """The server answered, but not with the file (404, 403…)."""

    def __init__(self, url: str, status: int) -> None:
        self.status = status
        super().__init__(f"{url} answered HTTP {status}")


class _Incomplete(Exception):
    """The server closed the body before Content-Length bytes arrived."""


class _Busy(Exception):
    """The server answered with a status worth asking again later (RETRY_STATUS)."""


@dataclass
class _Attempt:
    got: int = 0  # bytes received in this attempt: progress, so the failure does not count against the retries


class Network:
    """The HTTP client of one install run, its back-off, and the hosts found unreachable in it."""

    def __init__(self, client: httpx.Client | None = None, backoff: Backoff = Backoff(),
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self.backoff = backoff
        self.sleep = sleep
        self.unreachable: dict[str, Unreachable] = {}

    @property
    def client(self) -> httpx.Client:
        if self._client is None:  # proxies (HTTPS_PROXY…) and CA bundles (SSL_CERT_FILE) from the environment
            import httpx

            self._client = httpx.Client(follow_redirects=True, timeout=httpx.Timeout(30.0, connect=10.0))
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def get(self, url: str, headers: dict[str, str] | None = None) -> httpx.Response:
        """A small document (an index page), read whole; a ModelError for any answer but 200."""
        def attempt(_: _Attempt) -> httpx.Response:
            resp = self.client.get(url, headers=headers)
            if resp.status_code in RETRY_STATUS:
                raise _Busy(f"HTTP {resp.status_code}")
            if resp.status_code != 200:
                raise HttpStatus(url, resp.status_code)
            return resp

        return self._retrying(url, attempt)

    def download(self, url: str, dest: Path, checksum: str = "", *, size: int | None = None,
                 progress: bool = True) -> Path:
        """Fetch `url` to `dest`, resuming `dest.part` across failures; verify `checksum` (if given) at the end.

        A `dest` already there with the right checksum is kept as it is."""
        if checksum and dest.is_file() and checksums.matches(dest, checksum):
            return dest
        from tqdm import tqdm

        part = dest.with_name(dest.name + ".part")
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tqdm(total=size, unit="B", unit_scale=True, desc=dest.name, disable=not progress, leave=False) as bar:
            try:
                self._retrying(url, lambda state: self._fetch_into(url, part, bar, state))
            except Unreachable:
                raise
            except ModelError as exc:
                if part.exists():
                    raise ModelError(f"{exc}; the partial file {part} is kept — run the same command again to "
                                     "resume") from None
                raise
        if checksum and not checksums.matches(part, checksum):
            got = checksums.file_digest(part, checksum)
            part.unlink()
            raise ModelError(
                f"{url} downloaded with checksum {got}, expected {checksum}; the file was discarded. "
                "The source may have changed or the transfer was corrupted: try again")
        os.replace(part, dest)
        return dest

    def _retrying(self, url: str, attempt: Callable[[_Attempt], object]):  # noqa: ANN202 - what `attempt` returns
        """Run `attempt` until it succeeds, pausing between failures; attempts that received bytes do not count."""
        import httpx

        host = urlsplit(url).netloc or url  # host[:port]: the same host on another port is another server
        if host in self.unreachable:
            raise self.unreachable[host]
        delays = self.backoff.delays()
        tries, waited = 0, 0.0
        while True:
            state = _Attempt()
            tries += 1
            try:
                return attempt(state)
            except (httpx.TransportError, _Incomplete, _Busy) as exc:
                reason = _reason(exc)
                connect = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.ProxyError))
            if state.got:  # it moved: resume at once, with a fresh allowance of retries
                log.warning("download of %s interrupted (%s); resuming", url, reason)
                delays = self.backoff.delays()
                continue
            delay = next(delays, None)
            if delay is None:
                if connect:
                    self.unreachable[host] = Unreachable(host, reason, tries, waited)
                    raise self.unreachable[host]
                raise ModelError(f"fetching {url} failed {tries} times ({reason})")
            log.warning("%s: %s; trying again in %.0f s", host, reason, delay)
            self.sleep(delay)
            waited += delay

    def _fetch_into(self, url: str, part: Path, bar: tqdm, state: _Attempt) -> None:
        have = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        with self.client.stream("GET", url, headers=headers) as resp:
            if resp.status_code == 416 and have:
                return  # we already hold every byte
            if resp.status_code in RETRY_STATUS:
                raise _Busy(f"HTTP {resp.status_code}")
            if resp.status_code not in (200, 206):
                raise HttpStatus(url, resp.status_code)
            if resp.status_code == 200 and have:
                have = 0  # the server ignored Range: start over
            expected = resp.headers.get("Content-Length")
            bar.reset(total=(have + int(expected)) if expected else None)
            bar.update(have)
            with open(part, "ab" if have else "wb") as out:
                for block in resp.iter_bytes():
                    out.write(block)
                    state.got += len(block)
                    bar.update(len(block))
            if expected is not None and state.got < int(expected):
                raise _Incomplete(f"got {have + state.got} of {have + int(expected)} bytes")


def _reason(exc: Exception) -> str:
    """The innermost cause in a few words ("[Errno -2] Name or service not known", not httpx's wrapper)."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        inner = exc.__cause__ or exc.__context__
        if not str(inner):
            break
        exc = inner  # type: ignore[assignment]
    return str(exc) or type(exc).__name__

