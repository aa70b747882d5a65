"""`stella run` without a display: the terminal chat is the window's conversation, and only that.

The end-to-end test runs `build/run.sh` itself — the README's command, set-up included (a
set-up that is already done only checks each step) — with no DISPLAY and the questions piped
in: the embedded default starts (its own gateway and llama-server with the bundled model), the
window's engine holds the conversation, and stdout must be that conversation only.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from desktop.terminal import TerminalView
from sidecar.outfit_catalogue import load_catalogue
from sidecar.store import KeyringKey, Store
from tests import services

ROOT = Path(__file__).resolve().parents[2]
# a log line of any Stella process ("2026-12-01 12:00:00.123 INFO ...") or of uvicorn ("INFO:     ...")
LOG_LINE = re.compile(r"\b(DEBUG|INFO|WARNING|ERROR|CRITICAL)\b|^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
OUTFITS = {o.id: o.name for o in load_catalogue()}


@pytest.fixture
def user_env(secret_service: services.SecretService, tmp_path: Path) -> dict[str, str]:
    """A user's session with no display: the test keyring, private data and log folders, the
    real model and llama-server caches."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return {**env, **secret_service.env, "HOME": os.environ["HOME"], "XDG_STATE_HOME": str(tmp_path / "state"),
            "TZ": "Europe/Lisbon"}


@pytest.mark.llama
@pytest.mark.keyring
def test_run_sh_without_a_display_holds_the_windows_conversation_and_prints_no_logs(user_env, tmp_path,
                                                                                    secret_service, monkeypatch):
    store = tmp_path / "stella.db"
    settings = tmp_path / "stella.toml"
    settings.write_text("[chat]\ntemperature = 0.0\n")  # the app's settings file: replies without randomness
    questions = "What is your name?\nPlease wear the red dress.\nWhat time is it?\n"
    done = subprocess.run(["bash", str(ROOT / "build" / "run.sh"), "--store", str(store), "--voice", "off",
                           "--app-config", str(settings)],
                          input=questions, capture_output=True, text=True, env=user_env, timeout=400, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert not [line for line in lines if LOG_LINE.search(line)], f"log lines on stdout: {done.stdout}"

    replies = [line.removeprefix("Stella: ") for line in lines if line.startswith("Stella: ")]
    assert len(replies) == 2, f"one reply per question for the model and the clock: {done.stdout}"
    name_reply, time_reply = replies
    assert "Stella" in name_reply, f"the persona's conversation answers who she is: {name_reply!r}"
    assert "[Name" not in done.stdout and "USER:" not in done.stdout
    assert "[Stella is now wearing the red dress]" in lines, "the outfit intent, handled locally, shown as a line"
    assert re.fullmatch(r"It's (1[0-2]|[1-9]):[0-5]\d (AM|PM)\.", time_reply), time_reply

    log_file = tmp_path / "state" / "stella" / "log" / "stella.log"
    logged = log_file.read_text()
    assert "uvicorn" in logged or "Uvicorn" in logged, "the gateway's log lines went to the log file"
    assert "channel listening" in logged, "and so did the engine's"

    # the exchange is in the encrypted store, where the window would find it
    for key, value in secret_service.env.items():
        monkeypatch.setenv(key, value)
    opened = Store.open(store, KeyringKey())
    try:
        turns = [(t.role, t.text) for t in opened.history()]
    finally:
        opened.close()
    assert ("user", "What is your name?") in turns
    assert ("assistant", name_reply.strip()) in turns
    assert ("user", "What time is it?") in turns, "a clock answer is kept like any reply"


@pytest.mark.llama
def test_without_a_keyring_piped_input_goes_on_unsaved_and_verbose_puts_logs_on_stderr(tmp_path):
    """`stella run` (what build/run.sh ends in) with no keyring at all: the store's passphrase
    cannot be typed into a pipe, so the chat goes on without saving and says so; --verbose shows
    the log lines, on stderr, never among the replies."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
    env.update(XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"), TZ="Asia/Tokyo")
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "stella"), "run", "--verbose", "--voice", "off",
                           "--store", str(tmp_path / "stella.db")],
                          input="What day is it today?\n", capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.fullmatch(r"Stella: Today is (Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\.\n", done.stdout), done.stdout
    assert "not saved" in done.stderr and "not being saved this time" in done.stderr
    assert [line for line in done.stderr.splitlines() if LOG_LINE.search(line)], "--verbose shows the logs"
    assert not (tmp_path / "state" / "stella" / "log" / "stella.log").exists()


@pytest.mark.llama
def test_the_model_chosen_in_settings_is_the_one_the_next_start_runs(tmp_path):
    """Settings keeps the embedded default's model beside the store (`SavedModel`); `stella run` starts its
    llama-server on that model, not the catalogue's default."""
    from remote_api.shared.models.provision import Models
    from sidecar.launch import SavedModel

    store = tmp_path / "stella.db"
    SavedModel.beside(store).save("gemma3-270m")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
    env.update(XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"))
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "stella"), "run", "--voice", "off", "--store", str(store)],
                          input="What time is it?\n", capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    logged = (tmp_path / "state" / "stella" / "log" / "stella.log").read_text()
    assert f"with {Models().path('gemma3-270m').name}" in logged, "llama-server started on the chosen model"


def test_a_mistyped_settings_file_is_named_before_anything_starts(tmp_path):
    settings = tmp_path / "stella.toml"
    settings.write_text("[chat]\ntemprature = 0.2\n")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "stella"), "run", "--app-config", str(settings)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert f"unknown setting 'chat.temprature' in {settings}" in done.stderr and "temperature" in done.stderr
    assert "Starting the embedded default" not in done.stderr


# --- what the terminal shows, event by event (no engine) ----------------------------------


def feed(events: list[dict]) -> tuple[str, list[bool]]:
    view = TerminalView("Stella", OUTFITS)
    printed = [view.feed(e) for e in events]
    return "".join(p.out for p in printed), [p.answered for p in printed]


def test_a_reply_streams_without_its_outfit_tag_and_the_change_follows_as_a_line():
    out, answered = feed([
        {"type": "user_text", "text": "Something red?"}, {"type": "user_turn", "turn": 1, "text": "Something red?"},
        {"type": "token", "turn": 1, "text": " Of course! [out"}, {"type": "token", "turn": 1, "text": "fit: red_dr"},
        {"type": "outfit", "id": "red_dress", "source": "assistant"},
        {"type": "token", "turn": 1, "text": "ess] Here I am."},
        {"type": "reply_done", "turn": 1, "reason": "stop", "text": "Of course! Here I am."}])
    assert out == "Stella: Of course! Here I am.\n[Stella is now wearing the red dress]\n"
    assert answered == [False] * 6 + [True]


def test_local_intents_answer_without_a_turn():
    out, answered = feed([{"type": "outfit", "id": "pyjamas", "source": "user"}])
    assert (out, answered) == ("[Stella is now wearing the pyjamas]\n", [True])
    out, answered = feed([{"type": "volume", "step": 1}])
    assert (out, answered) == ("[Stella speaks louder]\n", [True])
    out, answered = feed([{"type": "interruption", "reason": "stop"}])
    assert answered == [True]


def test_the_greeting_prints_nothing_and_its_settings_say_the_engine_is_ready():
    view = TerminalView("Stella", OUTFITS)
    greeting = [{"type": "hello", "protocol": 1}, {"type": "store", "status": "open", "key": "keyring"},
                {"type": "settings", "values": {}}, {"type": "history", "turns": []},
                {"type": "outfit", "id": "hoodie", "source": "store"}, {"type": "state", "state": "idle"},
                {"type": "link", "connected": True}]
    printed = [view.feed(e) for e in greeting]
    assert "".join(p.out for p in printed) == "" and not any(p.answered for p in printed)
    assert [p.ready for p in printed] == [False, False, True, False, False, False, False]


def test_a_locked_store_is_a_prompt_to_answer():
    prompt = {"type": "store", "status": "locked", "mode": "create", "message": "No keyring was found."}
    assert TerminalView("Stella", OUTFITS).feed(prompt).unlock == prompt


def test_a_cut_reply_and_an_empty_one_say_so():
    out, _ = feed([{"type": "user_turn", "turn": 2, "text": "Tell me a story"},
                   {"type": "token", "turn": 2, "text": "Once upon"},
                   {"type": "reply_done", "turn": 2, "reason": "cancelled", "text": "Once upon"}])
    assert out == "Stella: Once upon [interrupted]\n"
    out, _ = feed([{"type": "user_turn", "turn": 3, "text": "Hm"},
                   {"type": "reply_done", "turn": 3, "reason": "error", "text": ""}])
    assert out == "Stella: (no reply this time)\n"


def test_errors_are_notes_for_stderr_not_the_conversation():
    view = TerminalView("Stella", OUTFITS)
    printed = view.feed({"type": "error", "code": "reply_timeout", "message": "The server sent no reply."})
    assert printed.out == "" and printed.notes == ["Stella: The server sent no reply."] and printed.answered
