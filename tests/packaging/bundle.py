"""The desktop bundle (dist/stella/) for the packaging tests and the bundle benchmark: built once, then run the
way a user runs it — from the bundle's own executable, with no .venv on PATH and no source tree to lean on.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist" / "stella"
EXE = DIST / "stella"
INTERNAL = DIST / "_internal"
# Everything the bundle is made from: a change to any of these makes dist/stella stale.
SOURCE_GLOBS = ("build/stella.spec", "build/entry.py", "build/icon.py", "build/package.sh", "build/linux/*",
                "pyproject.toml", "desktop/**/*", "sidecar/**/*.py", "remote_api/**/*.py", "atlas/**/*.py",
                "atlas/default/*", "shaders/*")
SITE_PACKAGES = ROOT / ".venv" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def version() -> str:
    return re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)


def archive() -> Path:
    return ROOT / "dist" / f"stella-{version()}-linux-{os.uname().machine}.tar.gz"


def newest_source() -> tuple[float, Path]:
    files = [p for pattern in SOURCE_GLOBS for p in ROOT.glob(pattern) if p.is_file() and "__pycache__" not in p.parts]
    files.append(SITE_PACKAGES)  # a dependency added, removed or upgraded
    return max((p.stat().st_mtime, p) for p in files)


def is_fresh() -> bool:
    """The bundle and its archive exist and are newer than every file they are built from."""
    if not EXE.is_file() or not archive().is_file():
        return False
    built = min(EXE.stat().st_mtime, archive().stat().st_mtime)
    return built > newest_source()[0]


def ensure_built(timeout: float = 1200) -> float:
    """Build with `bash build/package.sh` unless the bundle is fresh; returns the build time (0 when skipped)."""
    if is_fresh():
        return 0.0
    import time

    began = time.monotonic()
    done = subprocess.run(["bash", "build/package.sh"], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"bash build/package.sh failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                             f"{done.stderr[-5000:]}")
    return time.monotonic() - began


def user_env(*parts: dict[str, str], home: Path) -> dict[str, str]:
    """A user's environment, not the test runner's: system PATH only (no .venv), a private home and data
    folders, the real model and llama-server cache, then `parts` (the test services' variables)."""
    path = os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin") if ".venv" not in p)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    env = {"PATH": path, "LANG": "C.UTF-8", "HOME": str(home), "XDG_CACHE_HOME": cache,
           "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_STATE_HOME": str(home / "state")}
    for part in parts:
        env.update(part)
    env["HOME"] = str(home)
    env["XDG_CACHE_HOME"] = cache
    return env


def mapped_files(pids: set[int]) -> set[str]:
    """Every file the processes have mapped (shared libraries, data) — where their code really comes from."""
    found = set()
    for pid in pids:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        found.update(line.split(None, 5)[5] for line in maps.splitlines() if len(line.split(None, 5)) == 6)
    return found
