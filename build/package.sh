#!/usr/bin/env bash
# Build the Stella desktop bundle on Linux: dist/stella/ (one folder, one executable) and
# dist/stella-<version>-linux-<arch>.tar.gz. macOS / Windows: see build/PACKAGING.md.
#   bash build/package.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '%s [package] %s\n' "$(date +%H:%M:%S)" "$*"; }
PY="${PYTHON:-.venv/bin/python}"
WORK=build/pyinstaller-work
if ! "$PY" -c 'import PyInstaller' 2>/dev/null; then
  echo "package.sh: PyInstaller is missing from $PY; run \`bash build/setup.sh\` (it installs the dev extras)" >&2
  exit 1
fi
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -n1)"
ARCHIVE="dist/stella-$VERSION-linux-$(uname -m).tar.gz"

log "icons from desktop/web/icon.svg"
"$PY" build/icon.py "$WORK/icons"
log "PyInstaller (work dir $WORK)"
"$PY" -m PyInstaller --noconfirm --log-level WARN --distpath dist --workpath "$WORK" build/stella.spec
cp build/linux/stella.desktop build/linux/install.sh "$WORK/icons/stella.png" dist/stella/
log "archive $ARCHIVE"
rm -f "$ARCHIVE"
tar -C dist --sort=name --owner=0 --group=0 --numeric-owner -czf "$ARCHIVE.part" stella
mv "$ARCHIVE.part" "$ARCHIVE"
log "done: dist/stella/stella ($(du -sh dist/stella | cut -f1)), $ARCHIVE ($(du -sh "$ARCHIVE" | cut -f1))"
