"""Desktop bundle benchmark: how big dist/stella and its archive are, what was left out, what remains, and how
long the app takes from launch to its window.

Run: ``.venv/bin/python tests/bench/bench_bundle.py`` (builds the bundle first if it is stale). Prints the
figures and writes them as a markdown section to ``tests/bench/results/bundle.md``.

- start: `stella` as the desktop entry runs it (the embedded default: the window, the engine, its own gateway
  and llama-server), under Xvfb with a Secret Service and PulseAudio; timed from the exec to the window being
  mapped (`xdotool search --onlyvisible`) and to the character's first WebGL frame (read over DevTools). The
  first run follows `drop_caches` (cold disk cache) when the machine allows it; the others are warm.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests import services  # noqa: E402
from tests.desktop import screen  # noqa: E402
from tests.desktop.processes import alive, descendants  # noqa: E402
from tests.packaging import bundle  # noqa: E402

RUNS = 5
OUT = Path(__file__).parent / "results" / "bundle.md"
LEFT_OUT = REPO / "build" / "pyinstaller-work" / "left-out.json"
# How left-out files are grouped in the report: (label, test on the bundle path).
LEFT_OUT_GROUPS = [
    ("espeak-ng dictionaries of other languages", lambda p: "espeak-ng-data" in p),
    ("piper Hebrew / Arabic diacritizer models", lambda p: p.startswith("piper/")),
]


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def files(folder: Path) -> list[tuple[str, int]]:
    return [(str(p.relative_to(folder)), p.stat().st_size) for p in folder.rglob("*")
            if p.is_file() and not p.is_symlink()]


def component(path: str) -> str:
    """The part of the bundle a file belongs to: a package, or a Qt area, or a top-level library."""
    parts = path.split("/")
    if parts[0] == "_internal":
        parts = parts[1:]
    if len(parts) == 1:
        return parts[0] if not parts[0].startswith("lib") or parts[0].startswith("libpython") else "system libraries"
    return parts[0]


def left_out_total() -> int:
    if not LEFT_OUT.is_file():
        return 0
    data = json.loads(LEFT_OUT.read_text())
    keys = ("trimmed", "unlinked", "system", "debug_info", "symbols")
    return sum(size for key in keys for _, size in data.get(key, []))


def left_out_table() -> list[str]:
    if not LEFT_OUT.is_file():
        return ["(no build/pyinstaller-work/left-out.json: run `bash build/package.sh`)"]
    data = json.loads(LEFT_OUT.read_text())
    rows, rest = [], 0
    trimmed = data["trimmed"]
    for label, test in LEFT_OUT_GROUPS:
        group = [size for path, size in trimmed if test(path)]
        trimmed = [(path, size) for path, size in trimmed if not test(path)]
        if group:
            rows.append(f"| {label} | {len(group)} | {mb(sum(group))} |")
    rest = sum(size for _, size in trimmed)
    if trimmed:
        rows.append(f"| other trimmed files | {len(trimmed)} | {mb(rest)} |")
    unlinked = data["unlinked"]
    rows.append(f"| system libraries nothing kept links (the system's copy is loaded with ctypes: "
                f"{', '.join(p for p, _ in unlinked[:4])}, …) "
                f"| {len(unlinked)} | {mb(sum(s for _, s in unlinked))} |")
    system = data.get("system", [])
    rows.append(f"| libraries of the system's web view, left to the system (WebKitGTK links them: "
                f"{', '.join(p for p, _ in sorted(system, key=lambda x: -x[1])[:4])}, …) | {len(system)} | "
                f"{mb(sum(s for _, s in system))} |")
    debug = data.get("debug_info", [])
    rows.append(f"| debug info stripped ({', '.join(p for p, _ in sorted(debug, key=lambda x: -x[1])[:2])}, …) "
                f"| {len(debug)} | {mb(sum(s for _, s in debug))} |")
    symbols = data.get("symbols", [])
    rows.append(f"| symbol tables stripped ({', '.join(p for p, _ in symbols)}) | {len(symbols)} | "
                f"{mb(sum(s for _, s in symbols))} |")
    total = left_out_total()
    return ["| left out | files | size |", "| --- | ---: | ---: |", *rows, f"| **total** | | **{mb(total)}** |", "",
            "Python packages kept out of the analysis: " + ", ".join(f"`{m}`" for m in data["excluded_modules"]) + "."]


def drop_caches() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def launch(env: dict[str, str], display: str, home: Path) -> tuple[float, float]:
    """(seconds to the window being visible, seconds to the character's first WebGL frame); closes the app."""
    socket = home / "page.sock"
    began = time.monotonic()
    proc = subprocess.Popen([str(bundle.EXE)], env={**env, "STELLA_WINDOW__AUTOMATION_SOCKET": str(socket)},
                            cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wid = screen.find_window(display, "Stella", timeout=120)
        window = time.monotonic() - began
        page = screen.Page(socket)
        try:
            page.wait("document.body !== null && document.body.dataset.character === 'webgl'", 120)
            drawn = time.monotonic() - began
        finally:
            page.close()
        family = descendants(proc.pid)
        screen.close_window(display, wid)
        if proc.wait(30) != 0:
            raise RuntimeError(f"the app exited with {proc.returncode}")
        deadline = time.monotonic() + 15
        while alive(family) and time.monotonic() < deadline:
            time.sleep(0.1)
        return window, drawn
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main() -> None:
    build_s = bundle.ensure_built()
    dist = files(bundle.DIST)
    total = sum(size for _, size in dist)
    archive = bundle.archive().stat().st_size
    by_component: dict[str, int] = {}
    for path, size in dist:
        by_component[component(path)] = by_component.get(component(path), 0) + size
    top = sorted(by_component.items(), key=lambda kv: -kv[1])[:15]

    with (services.Xvfb() as xvfb, services.SecretService() as keyring, services.PulseAudio() as pulse,
          tempfile.TemporaryDirectory(prefix="stella-bench-home-") as tmp):
        home = Path(tmp)
        env = bundle.user_env(keyring.env, {"PULSE_SERVER": pulse.env["PULSE_SERVER"]}, xvfb.env, home=home)
        cold = drop_caches()
        runs = [launch(env, xvfb.display, home) for _ in range(RUNS)]
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    first, warm = runs[0], runs[1:]
    warm_window, warm_drawn = statistics.median(w for w, _ in warm), statistics.median(d for _, d in warm)
    lines = [
        "### Desktop bundle (tests/bench/bench_bundle.py)", "",
        f"Machine: {os.cpu_count()}-core VM, no GPU (Mesa llvmpipe), Xvfb. PyInstaller one-folder build on Linux "
        f"x86_64{f', built in {build_s:.0f} s' if build_s else ''}. `uptime` after the start runs: "
        f"{load}.", "",
        "| measure | value |", "| --- | ---: |",
        f"| bundle `dist/stella/` | {mb(total)} ({len(dist)} files) |",
        f"| the same bundle without the trimming below | {mb(total + left_out_total())} |",
        f"| archive `{bundle.archive().name}` | {mb(archive)} |",
        f"| first start{' (disk cache dropped)' if cold else ''}: launch → window visible | {first[0]:.2f} s |",
        f"| first start: launch → character drawn (WebGL2) | {first[1]:.2f} s |",
        f"| warm start, median of {len(warm)}: launch → window visible | {warm_window:.2f} s |",
        f"| warm start, median of {len(warm)}: launch → character drawn | {warm_drawn:.2f} s |",
        "", "What was left out of the bundle (measured from the files PyInstaller collected):", "",
        *left_out_table(), "",
        "What remains: the 15 largest parts of the bundle.", "",
        "| part | size | share |", "| --- | ---: | ---: |",
        *[f"| `{name}` | {mb(size)} | {size / total:.0%} |" for name, size in top],
        "",
        "The web view is the system's WebKitGTK (no Qt WebEngine, ~320 MB, in the bundle: it was 541 MB with it, "
        "before CTranslate2 joined); the models are not in the bundle (`stella models install` puts them in the "
        "user cache) and neither is llama-server.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    OUT.write_text(text)
    print(f"written to {OUT}")


if __name__ == "__main__":
    main()
