"""`stella-chat` and `stella-server` as a user runs them: real processes, exit codes, output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from remote_api.shared.models.catalogue import find, llms
from remote_api.shared.processes import free_port, running
from tests.fakes.llama_server import token_text

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def gateway(fake_llama, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """`stella-server serve` on loopback before the fake llama-server: stella-chat finds its local
    device's credentials by itself, as a user's does (it never talks to a gateway in clear)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with running([str(BIN / "stella-server"), "serve", "--port", str(port), "--upstream", fake_llama.url,
                  "--data-dir", str(tmp_path_factory.mktemp("gateway"))], url, timeout=60, grace=10,
                 stderr=subprocess.DEVNULL):
        yield SimpleNamespace(url=url)


def chat(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "stella-chat"), *args], capture_output=True, text=True, timeout=timeout)


def test_stella_chat_prints_the_reply(gateway, fake_upstream):
    done = chat("--server", gateway.url, "--max-tokens", "12", "Hello there")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "".join(token_text(i) for i in range(12)) + "\n"


def test_stella_chat_jsonl_reports_tokens_and_timings(gateway, fake_upstream):
    done = chat("--server", gateway.url, "--max-tokens", "8", "--jsonl", "--transport", "longpoll", "Hi")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds.count("token") == 8 and kinds.index("done") > kinds.index("token")
    assert any(e["event"] == "status" and e["transport"] == "longpoll" and e["connected"] for e in events)
    end = events[kinds.index("done")]
    assert end["tokens"] == 8 and 0 < end["first_token_ms"] <= end["total_ms"]


def test_stella_chat_explains_an_error_from_the_server(gateway, fake_upstream):
    fake_upstream.fault = "context"
    done = chat("--server", gateway.url, "Hi")
    assert done.returncode == 1
    assert "context_exceeded" in done.stderr and "shorten" in done.stderr.lower()


def test_stella_chat_interactive_keeps_the_conversation_in_the_client(gateway, fake_upstream):
    fake_upstream.tokens = 3
    done = subprocess.run([str(BIN / "stella-chat"), "--server", gateway.url, "--interactive"],
                          input="Hello\n\nHow are you?\n/quit\n", capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("stella> " + "".join(token_text(i) for i in range(3))) == 2
    history = fake_upstream.last_request["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[0]["content"] == "Hello" and history[2]["content"] == "How are you?"


def test_ctrl_c_cancels_the_reply_on_the_server_and_exits_130(gateway, fake_upstream):
    fake_upstream.delay, fake_upstream.tokens = 0.05, 400
    with subprocess.Popen([str(BIN / "stella-chat"), "--server", gateway.url, "--max-tokens", "400", "Hi"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        assert proc.stdout.read(8)  # the reply is streaming
        proc.send_signal(signal.SIGINT)
        assert proc.wait(5) == 130
    deadline = time.monotonic() + 1
    while fake_upstream.active and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake_upstream.disconnects == 1 and fake_upstream.active == 0


def test_stella_chat_says_when_the_server_cannot_be_reached():
    done = chat("--server", f"http://127.0.0.1:{free_port()}", "--connect-timeout", "1", "Hi")
    assert done.returncode == 3
    assert "could not reach" in done.stderr and "stella-server serve" in done.stderr


def test_stella_chat_refuses_a_bad_server_url():
    done = chat("--server", "ftp://nowhere", "Hi")
    assert done.returncode == 2 and "--server" in done.stderr


def test_stella_server_serves_reports_health_and_stops_cleanly_on_sigterm(fake_upstream, tmp_path):
    port = free_port()
    config = tmp_path / "server.toml"
    config.write_text(f'[gateway]\nport = {port}\napi = "completion"\n[link]\nheartbeat_interval = 1.0\n')
    url = f"http://127.0.0.1:{port}"
    with running([str(BIN / "stella-server"), "serve", "--config", str(config), "--upstream", fake_upstream.url],
                 url, timeout=60, grace=10, stderr=subprocess.PIPE, text=True) as proc:
        health = subprocess.run([str(BIN / "stella-server"), "health", "--server", url],
                                capture_output=True, text=True, timeout=30)
        assert health.returncode == 0 and "ok" in health.stdout and fake_upstream.url in health.stdout
        said = chat("--server", url, "--max-tokens", "5", "Hi")
        assert said.stdout.strip() == "".join(token_text(i) for i in range(5)).strip()
    assert proc.returncode == 0  # SIGTERM stops it cleanly


def test_stella_server_health_fails_clearly_when_nothing_runs():
    done = subprocess.run([str(BIN / "stella-server"), "health", "--server", f"http://127.0.0.1:{free_port()}"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "cannot reach the gateway" in done.stderr


def test_stella_server_rejects_a_bad_config_with_the_setting_named(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("[link]\nheartbeat_timeout = -1\n")
    done = subprocess.run([str(BIN / "stella-server"), "serve", "--config", str(config), "--upstream",
                           "http://127.0.0.1:1"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "heartbeat_timeout" in done.stderr


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


@pytest.mark.llama
def test_stella_server_embedded_default_runs_llama_server_and_leaves_no_orphan():
    from remote_api.llama_server import default_binary

    if not default_binary().exists():
        pytest.skip("llama-server is not built (bash build/llama_server.sh)")
    port = free_port()
    env = {**os.environ, "STELLA_GATEWAY__PORT": str(port)}
    url = f"http://127.0.0.1:{port}"
    with running([str(BIN / "stella-server"), "serve"], url, timeout=60, grace=15, env=env, stderr=subprocess.PIPE,
                 text=True) as proc:
        children = _children(proc.pid)
        assert children, "the gateway should have started llama-server"
        said = chat("--server", url, "--max-tokens", "8", "--temperature", "0", "Hi")
        assert said.returncode == 0 and said.stdout.strip()
    assert proc.returncode == 0
    for child in children:
        assert not Path(f"/proc/{child}").exists() or "zombie" in Path(f"/proc/{child}/status").read_text()


@pytest.mark.llama
@pytest.mark.parametrize("name", [spec.name for spec in llms()])
def test_stella_server_runs_the_llm_its_settings_name_with_that_models_template(name):
    """`llama.model_name` picks a catalogue LLM; llama-server gets the model's template flags
    (a built-in template by name needs --no-jinja, an instruct GGUF's own needs --jinja)."""
    spec = find(name)
    port = free_port()
    env = {**os.environ, "STELLA_GATEWAY__PORT": str(port), "STELLA_LLAMA__MODEL_NAME": name}
    url = f"http://127.0.0.1:{port}"
    with running([str(BIN / "stella-server"), "serve"], url, timeout=60, grace=15, env=env, stderr=subprocess.PIPE,
                 text=True) as proc:
        (child,) = _children(proc.pid)
        argv = Path(f"/proc/{child}/cmdline").read_bytes().decode().split("\0")
        assert argv[argv.index("-m") + 1].endswith(f"/{spec.name}/{spec.main}")
        if spec.chat_template:
            assert argv[argv.index("--chat-template") - 1:argv.index("--chat-template") + 2] == [
                "--no-jinja", "--chat-template", spec.chat_template]
        else:
            assert "--jinja" in argv and "--chat-template" not in argv
        # A cold model's first prompt on a loaded 2-core machine took 15 s: the time limit only
        # guards against a hang.
        said = chat("--server", url, "--max-tokens", "8", "--temperature", "0", "What is your name?", timeout=180)
        assert said.returncode == 0 and said.stdout.strip(), said.stderr


@pytest.mark.parametrize("name", ["nope", "piper-joe"])
def test_stella_server_names_a_bad_model_name_and_the_ones_to_choose(name):
    env = {**os.environ, "STELLA_LLAMA__MODEL_NAME": name, "STELLA_GATEWAY__PORT": str(free_port())}
    done = subprocess.run([str(BIN / "stella-server"), "serve"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"llama.model_name {name!r} is not a language model Stella knows; choose one of" in done.stderr
    assert all(spec.name in done.stderr for spec in llms())


def test_stella_chat_help_says_it_is_the_operators_raw_link_tool():
    done = chat("--help")
    said = " ".join(done.stdout.split())
    assert done.returncode == 0
    assert "The raw link tool for operators" in said and "no persona, no saved history, no local intents" in said
    assert "run `stella run`" in said
