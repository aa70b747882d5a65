#!/usr/bin/env bash
# Build llama.cpp's llama-server from the llama.cpp vendored in the llama-cpp-python sdist
# (the only source reachable from PyPI), once per machine: the binary is cached outside the
# checkout, keyed by version, so later runs and CI skip the ~6 min build.
# Usage: build/llama_server.sh [--print-path]
set -euo pipefail
VERSION="${STELLA_LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/stella/llama-server/$VERSION"
BIN="$CACHE/llama-server"
if [[ "${1:-}" == "--print-path" ]]; then echo "$BIN"; exit 0; fi
if [[ -x "$BIN" ]] && "$BIN" --version >/dev/null 2>&1; then
  echo "llama-server $VERSION: cached at $BIN"; exit 0
fi
for tool in cmake g++ make; do
  command -v "$tool" >/dev/null || { echo "llama-server build needs '$tool' (apt-get install cmake g++ make)" >&2; exit 1; }
done
PY="${PYTHON:-python3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo "llama-server $VERSION: fetching the llama-cpp-python sdist from PyPI"
"$PY" -m pip download --quiet --no-deps --no-binary llama-cpp-python -d "$WORK" "llama-cpp-python==$VERSION"
tar -xzf "$WORK"/llama_cpp_python-*.tar.gz -C "$WORK"
SRC="$(echo "$WORK"/llama_cpp_python-*/vendor/llama.cpp)"
echo "llama-server $VERSION: building (about 6 minutes on 2 cores)"
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >"$WORK/cmake.log" 2>&1 \
  || { tail -40 "$WORK/cmake.log" >&2; exit 1; }
cmake --build "$WORK/build" --target llama-server -j "$(nproc)" >"$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log" >&2; exit 1; }
mkdir -p "$CACHE"
install -m 0755 "$WORK/build/bin/llama-server" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "llama-server $VERSION: built $BIN"
