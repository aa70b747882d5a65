#!/usr/bin/env bash
# The README's test command: set-up, lint, then the whole suite. Test services (llama-server,
# PulseAudio, D-Bus + gnome-keyring, Xvfb, Redis) are started by pytest fixtures and torn down.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash build/setup.sh
echo "[test] ruff"
.venv/bin/ruff check .
export QTWEBENGINE_DISABLE_SANDBOX=1
unset DISPLAY WAYLAND_DISPLAY  # tests start their own Xvfb when they need a screen
exec .venv/bin/python -m pytest "$@"
