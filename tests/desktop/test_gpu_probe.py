"""The shell's GL probe (desktop/gpu.py): it names the renderer the page will get, and on Linux the OpenGL
driver it loads (Mesa's llvmpipe, tens of MiB) never stays in the window's process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ASK = """
import json
from desktop import gpu
probe = gpu.RendererProbe()
forked = probe.result()
mapped = open("/proc/self/maps").read().lower()
print(json.dumps({"forked": forked, "driver_here": "libllvm" in mapped or "_dri.so" in mapped,
                  "here": gpu.gl_renderer()}))
"""


def test_the_probe_names_the_renderer_and_leaves_its_driver_behind() -> None:
    out = subprocess.run([sys.executable, "-c", ASK], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["here"], "no OpenGL on this machine: the probe has nothing to name"
    assert seen["forked"] == seen["here"]
    assert not seen["driver_here"], "the OpenGL driver stayed in the process that asked"
