"""Your own character in the real window (pywebview on its web view, WebKitGTK by default, under Xvfb): an outfit added
with `stella outfits add` is in the outfit bar after a restart and can be worn; a user atlas that
does not load gives a plain message in the window, and the built-in outfits are shown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from atlas.user import UserFolders
from tests import services
from tests.character.user_layers import TEAL, share_of, write_cape_layers
from tests.desktop import screen
from tests.desktop.app_window import OUTFIT_IDS, stella
from tests.desktop.gateway import Gateway
from tests.desktop.polling import wait_for

pytestmark = [pytest.mark.llama, pytest.mark.keyring, pytest.mark.display]

BUILT_IN = ["hoodie", "red_dress", "school", "space", "pyjamas", "formal", "hanfu", "cyberpunk"]
TOASTS = "[...document.querySelectorAll('#toasts .toast[data-kind=error] p')].map((p) => p.textContent).join(' | ')"


def user_env(engine_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The app's environment with a user data folder of this test's own (where `stella outfits` builds)."""
    return {**engine_env, "XDG_DATA_HOME": str(tmp_path / "xdg-data")}


def test_an_outfit_you_add_is_in_the_outfit_bar_after_a_restart_and_she_wears_it(
        xvfb: services.Xvfb, gateway: Gateway, engine_env: dict[str, str], tmp_path: Path) -> None:
    env = user_env(engine_env, tmp_path)
    store = tmp_path / "stella.db"
    with stella(xvfb.display, gateway.url, store, env) as window:
        assert window.page.eval(OUTFIT_IDS) == BUILT_IN
        window.close_and_check_nothing_is_left()

    layers = write_cape_layers(tmp_path / "my-cape")
    added = subprocess.run([sys.executable, "-m", "desktop.cli", "outfits", "add", "cape", "--layers", str(layers),
                            "--name", "Teal cape"], env=env, capture_output=True, text=True, timeout=300)
    assert added.returncode == 0, added.stderr

    with stella(xvfb.display, gateway.url, store, env, outfits=9) as window:
        assert window.page.eval(OUTFIT_IDS) == [*BUILT_IN, "cape"]
        assert window.page.eval("document.querySelector('.outfit[data-outfit=cape] span').textContent") == "Teal cape"
        button = window.look('.outfit[data-outfit="cape"]')
        assert share_of(button, TEAL) > 0.02, "the cape's thumbnail is not on its button"
        assert share_of(window.look("#character"), TEAL) < 0.005
        assert window.page.eval(TOASTS) == ""

        # asked for in words: the engine's catalogue (the local intent) knows the new outfit too
        window.page.eval("(() => { document.getElementById('message').value = 'Please put on your teal cape'; "
                         "document.getElementById('composer').requestSubmit(); return true; })()")
        window.page.wait("document.querySelector('.outfit[aria-pressed=true]')?.dataset.outfit === 'cape'", 15)
        wait_for(lambda: share_of(window.look("#character"), TEAL) > 0.05, 5, "the teal cape on the screen")
        window.close_and_check_nothing_is_left()


def test_a_broken_user_atlas_is_explained_in_the_window_and_the_built_in_outfits_are_shown(
        xvfb: services.Xvfb, gateway: Gateway, engine_env: dict[str, str], tmp_path: Path) -> None:
    env = user_env(engine_env, tmp_path)
    atlas = UserFolders(tmp_path / "xdg-data" / "stella").atlas
    atlas.mkdir(parents=True)
    (atlas / "manifest.json").write_text(json.dumps({"format": "stella-atlas/9", "outfits": []}))
    with stella(xvfb.display, gateway.url, tmp_path / "stella.db", env) as window:
        assert window.page.eval(OUTFIT_IDS) == BUILT_IN
        assert screen.shown_outfit(window.look("#character")) == "hoodie"
        message = window.page.wait(TOASTS, 15)
        assert "Your own character could not be loaded, so the built-in one is shown." in message
        assert f"{atlas / 'manifest.json'}: unsupported manifest format 'stella-atlas/9'" in message
        assert "stella outfits build" in message
        toast = window.look("#toasts .toast[data-kind=error]")
        assert toast.shape[0] > 20 and toast.std() > 10, "the message is not drawn on the screen"
        window.close_and_check_nothing_is_left()
