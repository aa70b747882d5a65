#!/bin/sh
# Install Stella from this unpacked folder for the current user (no root needed):
#   ./install.sh                 copy to ~/.local/lib/stella, link ~/.local/bin/stella, add the menu entry + icon
#   ./install.sh --uninstall     remove exactly those (your conversations, settings and models stay)
# System-wide: sudo PREFIX=/usr/local ./install.sh   (menu entry and icon go under $PREFIX/share)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PREFIX=${PREFIX:-$HOME/.local}
if [ "$PREFIX" = "$HOME/.local" ]; then SHARE=${XDG_DATA_HOME:-$HOME/.local/share}; else SHARE=$PREFIX/share; fi
APP=$PREFIX/lib/stella
BIN=$PREFIX/bin/stella
DESKTOP=$SHARE/applications/stella.desktop
ICON=$SHARE/icons/hicolor/256x256/apps/stella.png

refresh() {
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$SHARE/applications" || true
  command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$SHARE/icons/hicolor" || true
}

if [ "${1:-}" = "--uninstall" ]; then
  rm -rf "$APP"
  rm -f "$BIN" "$DESKTOP" "$ICON"
  refresh
  echo "Stella is uninstalled. Your data stays: conversations in ${XDG_DATA_HOME:-$HOME/.local/share}/stella,"
  echo "models in ${XDG_CACHE_HOME:-$HOME/.cache}/stella, the database key in your keyring (service \"stella\")."
  exit 0
fi

[ -x "$HERE/stella" ] || { echo "install.sh: run it from the unpacked stella folder" >&2; exit 1; }
if [ "$HERE" != "$APP" ]; then
  rm -rf "$APP.new"
  mkdir -p "$PREFIX/lib"
  cp -a "$HERE" "$APP.new"
  rm -rf "$APP"
  mv "$APP.new" "$APP"
fi
mkdir -p "$(dirname "$BIN")" "$(dirname "$DESKTOP")" "$(dirname "$ICON")"
ln -sf "$APP/stella" "$BIN"
sed -e "s|^Exec=.*|Exec=$APP/stella|" -e "s|^TryExec=.*|TryExec=$APP/stella|" "$APP/stella.desktop" > "$DESKTOP"
cp "$APP/stella.png" "$ICON"
refresh
echo "Stella is installed in $APP: find it in your applications menu, or run \`stella\` ($BIN)."
case ":${PATH:-}:" in
  *":$(dirname "$BIN"):"*) RUN=stella ;;
  *) RUN=$BIN
     echo "$(dirname "$BIN") is not on your PATH, so type $BIN (or add the folder to PATH, e.g. in ~/.profile:"
     echo "  export PATH=\"$(dirname "$BIN"):\$PATH\")." ;;
esac
echo "First start: run \`$RUN\` in a terminal — it installs its models (several hundred MB) from the Python"
echo "package index (pypi.org; set PIP_INDEX_URL for a mirror) before the window opens. Check this machine: $RUN --selftest"
