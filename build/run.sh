#!/usr/bin/env bash
# The README's run command: set-up, then the embedded default (local llama-server + gateway + app).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash build/setup.sh >&2  # set-up notes on stderr: stdout is the conversation (terminal chat)
exec .venv/bin/stella run "$@"
