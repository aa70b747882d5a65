"""A package index for tests: a loopback HTTP server giving PyPI's Simple API over a folder of wheels and
sdists, in JSON (PEP 691) or HTML (PEP 503), with each file's sha256; and tiny wheels to put in it."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from remote_api.shared.models.package_index import IndexFile, normalize


def make_wheel(folder: Path, name: str, version: str, members: dict[str, bytes], tag: str = "py3-none-any") -> Path:
    """A wheel (a zip named as wheels are) holding `members`; no metadata, which reading one's files needs not."""
    path = folder / f"{name.replace('-', '_')}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


@dataclass
class IndexServer:
    """Serves `folder`: /simple/<project>/ lists every file whose name starts with the project's."""

    folder: Path
    form: str = "json"  # "json": PEP 691 when asked for it; "html": PEP 503 only
    wrong_hash: set[str] = field(default_factory=set)  # files whose listed sha256 is not theirs
    busy: list[int] = field(default_factory=list)  # statuses to answer the next requests with (503…)
    requests: list[str] = field(default_factory=list)
    url: str = ""

    def listing(self, project: str) -> list[IndexFile]:
        files = []
        for path in sorted(self.folder.iterdir()):
            if path.is_file() and IndexFile(path.name, "").project_and_version[0] == project:
                digest = "0" * 64 if path.name in self.wrong_hash else hashlib.sha256(path.read_bytes()).hexdigest()
                files.append(IndexFile(path.name, f"../../files/{path.name}", digest, path.stat().st_size))
        return files


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _HTTPServer

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        index = self.server.index
        index.requests.append(self.path)
        if index.busy:
            self._send(index.busy.pop(0), "text/plain", b"busy")
            return
        parts = [unquote(p) for p in self.path.split("/") if p]
        if len(parts) == 2 and parts[0] == "simple":
            self._page(index, parts[1])
        elif len(parts) == 2 and parts[0] == "files" and (index.folder / parts[1]).is_file():
            self._send(200, "application/octet-stream", (index.folder / parts[1]).read_bytes())
        else:
            self._send(404, "text/plain", b"not found")

    def _page(self, index: IndexServer, project: str) -> None:
        if normalize(project) != project:
            self.send_response(301)
            self.send_header("Location", f"/simple/{normalize(project)}/")
            self.end_headers()
            return
        files = index.listing(project)
        if not files:
            self._send(404, "text/plain", b"no such project")
        elif index.form == "json" and "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", ""):
            body = {"meta": {"api-version": "1.1"}, "name": project, "files": [
                {"filename": f.filename, "url": f.url, "hashes": {"sha256": f.sha256}, "size": f.size} for f in files]}
            self._send(200, "application/vnd.pypi.simple.v1+json", json.dumps(body).encode())
        else:
            links = "".join(f'<a href="{f.url}#sha256={f.sha256}">{f.filename}</a><br>\n' for f in files)
            self._send(200, "text/html; charset=utf-8", f"<!DOCTYPE html><html><body>{links}</body></html>".encode())

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _HTTPServer(http.server.ThreadingHTTPServer):
    index: IndexServer


@contextlib.contextmanager
def serving(index: IndexServer) -> Iterator[IndexServer]:
    """`index` on a free loopback port; its `url` is the index's address (…/simple)."""
    server = _HTTPServer(("127.0.0.1", 0), _Handler)
    server.index = index
    index.url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
