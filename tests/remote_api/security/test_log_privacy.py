"""What the user says stays out of the logs. A whole voice session (headless `python -m sidecar
run` on a real spoken clip, through a real `stella-server serve` and llama-server) at the
default level: the logs of both hold neither a word of the transcript nor a phrase of the reply,
though they do log the session. At DEBUG they may (and the check below finds them then), and
each process says so in its first line."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_api.shared.logs import DEBUG_WARNING
from remote_api.shared.processes import free_port, running
from tests.voice.speech import Piper, concat, heard_fraction, save, silence

pytestmark = pytest.mark.llama
ROOT = Path(__file__).resolve().parents[3]
QUESTION = "What is the capital of France?"


@contextlib.contextmanager
def gateway(llama_server, log: Path, env: dict[str, str], *level: str) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out, running(
            [sys.executable, "-m", "remote_api.cli", "serve", "--port", str(port), "--upstream", llama_server.url,
             "--data-dir", str(log.parent / "state"), *level], url, timeout=60, grace=10, cwd=ROOT, stderr=out,
            env={**env, **llama_server.env}):
        yield url


def session(url: str, tmp_path: Path, env: dict[str, str], *args: str) -> tuple[list[dict], str]:
    events = tmp_path / "events.jsonl"
    proc = subprocess.run([sys.executable, "-m", "sidecar", "run", "--server", url, "--events", str(events),
                           "--audio-out", str(tmp_path / "out.wav"), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in events.read_text().splitlines()], proc.stderr


def normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w']+", " ", text.lower()).split())


def private_found(logs: str, transcript: str, reply: str) -> list[str]:
    """The transcript, its words of 5+ letters and every 3-word phrase of the reply found in `logs`."""
    logs = f" {normal(logs)} "
    said = [transcript, *(w for w in normal(transcript).split() if len(w) >= 5)]
    words = normal(reply).split()
    phrases = [" ".join(words[i:i + 3]) for i in range(max(1, len(words) - 2))]
    return [p for p in (*said, *phrases) if f" {normal(p)} " in logs]


def test_a_voice_session_at_the_default_level_logs_no_word_said_and_no_reply(llama_server, tmp_path, subprocess_env):
    piper = Piper()
    wav = save(tmp_path / "in.wav", concat(silence(1.0), piper("Hey Jarvis."), silence(0.2), piper(QUESTION),
                                           silence(0.8)))
    env = {k: v for k, v in subprocess_env.items() if not k.startswith("STELLA_")}
    with gateway(llama_server, tmp_path / "gateway.log", env) as url:
        events, sidecar_log = session(url, tmp_path, {**env, "STELLA_CHAT__MAX_TOKENS": "48"}, "--audio-in",
                                      str(wav), "--wake", "hey_jarvis")
    gateway_log = (tmp_path / "gateway.log").read_text()
    turn = next(e for e in events if e["type"] == "user_turn")
    reply = next(e for e in events if e["type"] == "reply_done")["text"]
    assert heard_fraction(QUESTION, turn["text"]) >= 0.8 and reply.strip(), (turn, reply)
    # Nothing of what was said is in either log ...
    assert private_found(sidecar_log + gateway_log, turn["text"], reply) == []
    # ... although both tell the session at INFO.
    assert re.search(r"INFO .*heard \d+ chars", sidecar_log) and "event {\"type\": \"user_turn\"" in sidecar_log
    assert re.search(r"INFO .*session \S+ opened", gateway_log)
    assert DEBUG_WARNING not in sidecar_log + gateway_log


def test_at_debug_the_words_may_be_logged_and_each_log_says_so_first(llama_server, tmp_path, subprocess_env):
    text = "Tell me about Quentin the purple giraffe"
    env = {k: v for k, v in subprocess_env.items() if not k.startswith("STELLA_")}
    with gateway(llama_server, tmp_path / "gateway.log", env, "--log-level", "DEBUG") as url:
        events, sidecar_log = session(url, tmp_path, {**env, "STELLA_CHAT__MAX_TOKENS": "8"}, "--text", text,
                                      "--log-level", "DEBUG")
    gateway_log = (tmp_path / "gateway.log").read_text()
    reply = next(e for e in events if e["type"] == "reply_done")["text"]
    assert DEBUG_WARNING in sidecar_log.splitlines()[0] and DEBUG_WARNING in gateway_log.splitlines()[0]
    assert private_found(sidecar_log, text, reply)  # the search finds them when they are there
