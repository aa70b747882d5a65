"""build/linux/install.sh on its own (a stand-in folder, no bundle build): what it tells a newcomer to do next."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def install(tmp_path: Path, path: str) -> subprocess.CompletedProcess[str]:
    unpacked = tmp_path / "stella"
    unpacked.mkdir()
    shutil.copy(ROOT / "build" / "linux" / "install.sh", unpacked)
    shutil.copy(ROOT / "build" / "linux" / "stella.desktop", unpacked)
    (unpacked / "stella.png").write_bytes(b"png")
    (unpacked / "stella").write_text("#!/bin/sh\n")
    (unpacked / "stella").chmod(0o755)
    home = tmp_path / "home"
    return subprocess.run(["sh", str(unpacked / "install.sh")], capture_output=True, text=True, timeout=60,
                          env={"HOME": str(home), "PATH": path.replace("HOME", str(home))})


def test_a_bin_folder_off_the_path_is_said_with_the_command_to_type(tmp_path: Path) -> None:
    done = install(tmp_path, "/usr/bin:/bin")
    assert done.returncode == 0, done.stderr
    stella = tmp_path / "home" / ".local" / "bin" / "stella"
    assert f"{stella.parent} is not on your PATH, so type {stella}" in done.stdout
    assert f"First start: run `{stella}` in a terminal" in done.stdout and "PIP_INDEX_URL" in done.stdout


def test_on_the_path_the_command_is_stella(tmp_path: Path) -> None:
    done = install(tmp_path, "HOME/.local/bin:/usr/bin:/bin")
    assert done.returncode == 0, done.stderr
    assert "not on your PATH" not in done.stdout and "First start: run `stella` in a terminal" in done.stdout
