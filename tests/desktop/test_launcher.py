"""The server a start uses: the one given with `stella run --server` or saved in Settings is the one every
later plain `stella` start uses; the embedded default only when none is saved, and again once Settings'
*Use the embedded default* is chosen. Through the real launcher (`stella run`, no display: the terminal chat)
on a real gateway in front of the fake llama-server, whose every reply is " w0 w1 …"."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop.launcher import choose_server
from sidecar.launch import SavedServer
from tests.desktop.conftest import Engine
from tests.desktop.gateway import Gateway, running_gateway
from tests.engine.conftest import Home, dead_server, running
from tests.fakes import fixtures
from tests.fakes.llama_server import FakeLlamaServer, token_text

ROOT = Path(__file__).resolve().parents[2]
STELLA = ROOT / ".venv" / "bin" / "stella"
EMBEDDED = "Starting the embedded default"
fake_llama, fake_upstream = fixtures.fake_llama, fixtures.fake_upstream


@pytest.fixture
def gateway(fake_llama: FakeLlamaServer, tmp_path: Path) -> Iterator[Gateway]:
    """Its local device's credentials go to the state folder the app's starts below look in (a user's)."""
    with running_gateway(fake_llama.url, tmp_path / "gateway", {"XDG_STATE_HOME": str(tmp_path / "state")}) as gw:
        yield gw


def stella_run(*args: str, store: Path, said: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`stella run` typed in a terminal without a display (no keyring here: the chat goes on unsaved)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")
           } | env
    env["XDG_STATE_HOME"] = str(store.parent.parent / "state")
    return subprocess.run([str(STELLA), "run", "--voice", "off", "--store", str(store), *args], input=said,
                          capture_output=True, text=True, env=env, timeout=120)


def test_a_server_given_once_is_the_one_every_later_start_uses(gateway: Gateway, fake_upstream: FakeLlamaServer,
                                                              tmp_path: Path) -> None:
    fake_upstream.tokens = 4
    reply = "Stella:" + "".join(token_text(i) for i in range(4))
    store = tmp_path / "data" / "stella.db"  # and the state folder tmp_path / "state", the gateway's
    first = stella_run("--server", gateway.url, store=store, said="Hello there\n")
    assert first.returncode == 0, first.stderr[-3000:]
    assert reply in first.stdout and EMBEDDED not in first.stderr
    assert SavedServer.beside(store).load() == gateway.url

    second = stella_run(store=store, said="Are you the same server?\n")  # a plain start, as the menu entry's
    assert second.returncode == 0, second.stderr[-3000:]
    assert reply in second.stdout, second.stdout + second.stderr[-3000:]
    assert EMBEDDED not in second.stderr, "a saved server: no embedded default started"
    assert f"Using the Stella server {gateway.url}" in second.stderr
    asked = [str(r.body) for r in fake_upstream.requests if r.body]
    assert any("Hello there" in b for b in asked) and any("Are you the same server?" in b for b in asked), \
        "both starts' questions reached the saved server"


def test_a_server_that_is_not_an_address_is_refused_before_anything_starts(tmp_path: Path) -> None:
    done = stella_run("--server", "gpu-box:8765", store=tmp_path / "stella.db", said="")
    assert done.returncode == 2 and done.stdout == ""
    assert "--server takes the address of a Stella server (the gateway), for example http://gpu-box:8765, " \
           "not 'gpu-box:8765'" in done.stderr
    assert EMBEDDED not in done.stderr and not SavedServer.beside(tmp_path / "stella.db").path.exists()


def test_an_embedded_default_that_cannot_start_says_why_and_what_else_to_do(tmp_path: Path) -> None:
    """No llama-server on this machine (as after installing the bundle): one line, the gateway's reason and the
    other way, no traceback."""
    done = stella_run(store=tmp_path / "data" / "stella.db", said="", STELLA_LLAMA__BINARY=str(tmp_path / "none"))
    assert done.returncode == 1 and done.stdout == ""
    assert EMBEDDED in done.stderr and "Traceback" not in done.stderr
    assert f"stella: the embedded default could not start: llama-server binary not found at {tmp_path / 'none'}; " \
           "build it with" in done.stderr
    assert "Or use a Stella server elsewhere: `stella run --server http://HOST:8765`." in done.stderr


def test_none_saved_is_the_embedded_default_and_a_damaged_file_says_so(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    saved = SavedServer.beside(tmp_path / "stella.db")
    assert choose_server(None, saved) is None
    assert choose_server("https://gpu-box:8765", saved) == "https://gpu-box:8765"
    assert choose_server(None, saved) == "https://gpu-box:8765"
    saved.path.write_text("{not json")
    assert choose_server(None, saved) is None
    said = capsys.readouterr().err
    assert f"the saved server in {saved.path} cannot be read" in said
    assert "starting the embedded default instead (choose your server again in Settings" in said


@pytest.mark.keyring
def test_settings_save_the_server_for_later_starts_and_the_embedded_default_goes_back(
        tmp_path: Path, secret_service, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The window's Settings: a new address is kept for the next start; saving other settings leaves the choice
    as it is; *Use the embedded default* (an empty address) forgets it, and this session keeps its server."""
    for key, value in secret_service.env.items():
        monkeypatch.setenv(key, value)
    home = Home(tmp_path / "data" / "stella.db", dead_server())
    saved = SavedServer.beside(home.store)
    other = dead_server()

    async def use_settings() -> None:
        async with running(home) as engine, engine.window() as window:
            values = window.greeted("settings")["values"]
            await window.send({"cmd": "settings", "values": {**values, "server_url": other}})
            assert (await window.next("settings"))["saved"]
            assert saved.load() == other
            assert choose_server(None, saved) == other, "the next plain start uses it"

            await window.send({"cmd": "settings", "values": {**values, "server_url": other, "wake_phrase": "hey luna"}})
            await window.next("settings")
            assert saved.load() == other, "other settings saved: the server choice stays"

            await window.send({"cmd": "settings", "values": {**values, "server_url": ""}})
            event = await window.next("settings")
            assert event["saved"] and event["values"]["server_url"] == other, "this session stays on its server"
            assert saved.load() is None and choose_server(None, saved) is None, "the next start: embedded default"

    asyncio.run(use_settings())


@pytest.mark.browser
@pytest.mark.keyring
def test_the_settings_button_forgets_the_saved_server(page, engine: Engine, assets: str) -> None:  # noqa: ANN001
    """In the window: Settings → *Use the embedded default* says what it does and forgets the saved server."""
    saved = SavedServer.beside(engine.store)
    saved.save("http://gpu-box:8765")
    page.goto(engine.page_url(assets))
    page.wait_for_selector('.outfit[aria-pressed="true"]')  # the engine has greeted the page
    page.click("#open-settings")
    page.click("#use-embedded")
    page.wait_for_selector("#settings-note >> text=From the next start Stella runs the embedded default")
    assert saved.load() is None


def test_help_lists_every_command_on_one_line_each() -> None:
    done = subprocess.run([str(STELLA), "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    listed = {line.split()[0]: line for line in lines if line.startswith("    ") and not line.startswith("     ")}
    assert list(listed) == ["run", "models", "outfits", "memory", "selftest", "server", "chat", "voice"], done.stdout
    for name, line in listed.items():
        following = lines[lines.index(line) + 1]
        assert len(line.split(maxsplit=1)) == 2 and not following.startswith(" " * 8), f"{name}: one line, please"
    server = subprocess.run([str(STELLA), "server", "--help"], capture_output=True, text=True, timeout=60)
    assert server.returncode == 0 and "serve" in server.stdout, "a listed program runs as `stella NAME`"
