"""A page in a real pywebview window on the system's WebKitGTK, set up as the app sets up its own (the same GL
environment, the same page automation socket), for tests of a page other than the app's.

    python -m tests.desktop.webkit_page URL SOCKET      # until the window is closed
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import webview

from desktop import gpu
from desktop.page_automation import PageAutomation


def main(url: str, socket: str) -> int:
    os.environ.update(gpu.webkit_env(gpu.gl_renderer()))
    window = webview.create_window("WebKitGTK page", url, width=700, height=700)
    automation = PageAutomation(Path(socket), window.run_js)
    try:
        webview.start(gui="gtk", private_mode=True)
    finally:
        automation.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
