"""Your own outfit where the webview has no WebGL2: the page (headless Chromium) lists the user's atlas
and the engine streams frames drawn from it, so the new outfit shows there too."""

from __future__ import annotations

import base64
from io import BytesIO
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from atlas import wardrobe
from atlas.user import UserFolders
from desktop.assets import AssetServer
from tests.character.user_layers import TEAL, share_of, write_cape_layers
from tests.desktop.conftest import run_engine
from tests.desktop.gateway import Gateway
from tests.desktop.polling import wait_for
from tests.desktop.test_web_ui import until

pytestmark = [pytest.mark.llama, pytest.mark.keyring, pytest.mark.browser]

NO_WEBGL2 = """(() => {
  const real = HTMLCanvasElement.prototype.getContext;
  HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
    return kind === 'webgl2' ? null : real.call(this, kind, ...rest);
  };
})()"""
FRAME = """() => {
  const img = document.getElementById('character-frames');
  if (!img.complete || !img.naturalWidth) return null;  // between two frames
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  c.getContext('2d').drawImage(img, 0, 0);
  return [c.width, c.height, c.toDataURL('image/png')];
}"""


def teal_share(page) -> float:  # noqa: ANN001 - Playwright's page
    _, _, url = wait_for(lambda: page.evaluate(FRAME), 5, "a whole frame")
    with Image.open(BytesIO(base64.b64decode(url.split(",", 1)[1]))) as img:
        return share_of(np.asarray(img.convert("RGB")), TEAL)


def test_the_engine_streams_frames_of_your_own_outfit(browser, gateway: Gateway, engine_env: dict[str, str],  # noqa: ANN001
                                                      tmp_path: Path) -> None:
    folders = UserFolders(tmp_path / "xdg-data" / "stella")
    wardrobe.add("cape", write_cape_layers(tmp_path / "cape"), "Teal cape", folders)
    env = {**engine_env, "XDG_DATA_HOME": str(tmp_path / "xdg-data")}
    with (run_engine(gateway.url, tmp_path / "stella.db", env) as engine,
          AssetServer(user_atlas=folders.atlas) as assets):
        page = browser.new_page()
        try:
            page.add_init_script(NO_WEBGL2)
            page.goto(assets.page_url(engine.port, engine.secret))
            page.wait_for_selector('#link[data-transport="websocket"]')
            page.wait_for_selector('.outfit[data-outfit="cape"]')
            until(page, "document.getElementById('character-frames').naturalWidth > 100", 30)
            assert teal_share(page) < 0.005
            page.click('.outfit[data-outfit="cape"]')
            wait_for(lambda: teal_share(page) > 0.05, 10, "the teal cape in the streamed frames")
        finally:
            page.close()
