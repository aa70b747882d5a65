"""The window's web server and the user's own atlas: served as atlas/user/ only when it is the one to
show, only the files of that folder, and the page told so in its URL."""

from __future__ import annotations

from pathlib import Path

import httpx

from desktop.assets import AssetServer


def test_the_users_atlas_folder_is_served_as_atlas_user_and_nothing_around_it(tmp_path: Path) -> None:
    atlas = tmp_path / "data" / "stella" / "atlas"
    (atlas / "sub").mkdir(parents=True)
    (atlas / "manifest.json").write_text('{"format": "stella-atlas/1"}')
    (atlas / "atlas.png").write_bytes(b"\x89PNG-ish")
    (atlas / "sub" / "x.json").write_text("{}")
    (tmp_path / "data" / "stella" / "stella.db").write_bytes(b"secret conversations")
    with AssetServer(user_atlas=atlas) as server:
        assert server.page_url(1234, "s" * 32).endswith("#port=1234&secret=" + "s" * 32 + "&atlas=user")
        got = httpx.get(f"{server.url}/atlas/user/manifest.json")
        assert got.status_code == 200 and got.json() == {"format": "stella-atlas/1"}
        assert got.headers["content-type"].startswith("application/json")
        assert httpx.get(f"{server.url}/atlas/user/atlas.png").content == b"\x89PNG-ish"
        assert httpx.get(f"{server.url}/atlas/default/manifest.json").status_code == 200  # the built-in one stays
        for path in ("atlas/user/../stella.db", "atlas/user/%2e%2e/stella.db", "atlas/user/sub/x.json",
                     "atlas/user/", "atlas/user/missing.png"):
            assert httpx.get(f"{server.url}/{path}").status_code == 404, path


def test_without_a_user_atlas_nothing_is_served_there_and_the_url_says_nothing() -> None:
    with AssetServer() as server:
        assert server.page_url(1234, "s" * 32).endswith("secret=" + "s" * 32)
        assert httpx.get(f"{server.url}/atlas/user/manifest.json").status_code == 404
