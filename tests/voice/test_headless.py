"""The whole voice loop against the real gateway + llama-server, from WAV file to WAV file.

Assertions are on behaviour (what was heard, what was said back, in which order, on which
timeline), never on what the model chooses to say.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sidecar.config import AppConfig, ChatConfig
from sidecar.headless import Options, run, with_wake
from sidecar.voice.audio import RATE

from .conftest import ROOT
from .speech import concat, hear_her, heard_fraction, load, save, silence

pytestmark = pytest.mark.llama

QUESTION = "What is the capital of France?"
# Asks for a reply of several words: whisper tiny.en can mishear a lone word ("Paris." -> "Harris.")
OPEN_QUESTION = "What do you like to do?"


def read_events(path: Path) -> list[dict]:
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for e in events:
        assert isinstance(e["type"], str) and isinstance(e["t"], int | float), e
    return events


def first(events: list[dict], kind: str, **match: object) -> dict:
    found = [e for e in events if e["type"] == kind and all(e.get(k) == v for k, v in match.items())]
    assert found, f"no {kind} event {match or ''} in {[e['type'] for e in events]}"
    return found[0]


def spoken_text(events: list[dict], turn: int = 1) -> str:
    return " ".join(e["text"] for e in events if e["type"] == "sentence" and e["turn"] == turn)


def heard_in(out: np.ndarray, engines, start: float, end: float) -> str:
    return hear_her(engines.transcriber, out[max(0, int(start * RATE) - 1600):int(end * RATE) + 1600])


def run_inprocess(config: AppConfig, options: Options, engines) -> list[dict]:
    asyncio.run(asyncio.wait_for(run(config, options, loaded=engines), 120))
    return read_events(options.events)


def test_hey_jarvis_and_a_question_get_a_spoken_reply(gateway, engines, piper, tmp_path, subprocess_env):
    """The CLI, real time: wake -> transcript -> tokens -> sentences -> audio, all on in.wav's timeline."""
    wav = save(tmp_path / "in.wav", concat(silence(1.0), piper("Hey Jarvis."), silence(0.2), piper(OPEN_QUESTION),
                                           silence(0.5)))
    out, log = tmp_path / "out.wav", tmp_path / "events.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "sidecar", "run", "--audio-in", str(wav), "--audio-out", str(out), "--events", str(log),
         "--server", gateway.url, "--wake", "hey_jarvis"],
        cwd=ROOT, env=subprocess_env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = read_events(log)

    wake = first(events, "wake")
    assert wake["word"] == "hey_jarvis" and wake["engine"] == "openwakeword"
    turn = first(events, "user_turn")
    assert heard_fraction(OPEN_QUESTION, turn["text"]) >= 0.8, turn
    assert "jarvis" not in turn["text"].lower(), "the wake word must not be part of the question"
    transcript = next(e for e in events
                      if e["type"] == "transcript" and heard_fraction(OPEN_QUESTION, e["text"]) >= 0.8)
    token, sentence = first(events, "token", turn=1), first(events, "sentence", turn=1)
    audio = first(events, "audio_out", turn=1)
    order = [wake["t"], transcript["t"], turn["t"], first(events, "request_sent")["t"], token["t"], sentence["t"],
             audio["t"]]
    assert order == sorted(order), order
    assert events.index(first(events, "reply_done")) < events.index(first(events, "turn"))

    # out.wav: same timeline as in.wav (same rate, sample 0 = t 0), silent until the reply is heard,
    # and the speech in it is the reply.
    reply = load(out)
    assert len(reply) >= len(load(wav))
    onset = np.flatnonzero(np.abs(reply) > 0.01)[0] / RATE
    assert audio["t"] - 0.005 <= onset <= audio["t"] + 0.3, (onset, audio["t"])
    end = max(e["t"] + e["duration"] for e in events if e["type"] == "audio_out")
    said = spoken_text(events)
    heard = heard_in(reply, engines, audio["t"], end)
    assert heard_fraction(said, heard) >= 0.6, (said, heard)

    timeline = first(events, "turn")
    assert timeline["latency_ms"]["total"] > 0
    assert set(timeline["marks"]) >= {"speech_end", "endpoint", "transcript", "request_sent", "first_token",
                                      "first_sentence", "first_audio", "turn_end"}


def test_first_audio_starts_before_the_last_token_and_joins_do_not_click(gateway, engines, tmp_path):
    """A long reply: speech starts while tokens still stream; sentence joins are smooth in out.wav.
    Greedy decoding: at temperature 0.7 the "long story" sometimes ended after ten tokens, before
    any reply could be heard, which tested the model's mood rather than the streaming."""
    config = AppConfig(server_url=gateway.url, chat=ChatConfig(max_tokens=96, stop=[], temperature=0.0))
    options = Options(texts=["Tell me a long story about a dragon who loves tea."], audio_out=tmp_path / "out.wav",
                      events=tmp_path / "events.jsonl")
    events = run_inprocess(config, options, engines)
    marks = first(events, "turn")["marks"]
    assert marks["first_audio"] < marks["last_token"], marks
    starts = [e for e in events if e["type"] == "audio_out"]
    assert len(starts) >= 2, "expected the reply to be spoken sentence by sentence"

    out = load(options.audio_out)
    jumps = []
    for e in starts:
        for edge in (e["t"], e["t"] + e["duration"]):
            i = int(round(edge * RATE))
            # +-1 ms around the join: a click is a jump right at the edge; further in, the 5 ms fade
            # already lets through the speech's own sample-to-sample changes.
            width = RATE // 1000
            around = out[max(0, i - width):i + width]
            jumps.append(float(np.max(np.abs(np.diff(around)))))
    assert max(jumps) < 0.02, f"discontinuity at a sentence join: {max(jumps):.3f}"


def test_push_to_talk_bypasses_the_wake_word(gateway, jarvis_engines, piper, tmp_path):
    """Without the wake word speech is ignored (no ASR), unless push-to-talk is held."""
    ignored, asked = "Please turn the music down.", QUESTION
    wav = save(tmp_path / "in.wav", concat(silence(0.5), piper(ignored), silence(1.0), piper(asked), silence(0.5)))
    second = 0.5 + len(piper(ignored)) / RATE + 1.0
    config = with_wake(AppConfig(server_url=gateway.url), "hey_jarvis")
    options = Options(audio_in=wav, audio_out=tmp_path / "out.wav", events=tmp_path / "events.jsonl",
                      push_to_talk=[(second - 0.3, second + len(piper(asked)) / RATE + 0.3)])
    config = replace(config, chat=replace(config.chat, max_tokens=16))
    events = run_inprocess(config, options, jarvis_engines)
    turns = [e for e in events if e["type"] == "user_turn"]
    assert len(turns) == 1, turns
    assert turns[0]["source"] == "push_to_talk"
    assert heard_fraction(asked, turns[0]["text"]) >= 0.8
    assert not [e for e in events if e["type"] == "transcript" and heard_fraction(ignored, e["text"]) > 0.5], \
        "speech without the wake word must not even be transcribed"
    assert first(events, "audio_out", turn=1)


def test_custom_phrase_wakes_on_the_name_only(gateway, engines, piper, tmp_path):
    """'hey stella' engine: whisper checks each utterance for the name; others start no turn."""
    wav = save(tmp_path / "in.wav", concat(silence(0.5), piper("Hello there, how are you?"), silence(1.0),
                                           piper("Hey Stella, what is the capital of France?"), silence(0.5)))
    config = with_wake(AppConfig(server_url=gateway.url, chat=ChatConfig(max_tokens=16)), "hey stella")
    options = Options(audio_in=wav, audio_out=tmp_path / "out.wav", events=tmp_path / "events.jsonl", fast=True)
    events = run_inprocess(config, options, engines)
    wakes = [e for e in events if e["type"] == "wake"]
    assert [w["engine"] for w in wakes] == ["phrase"]
    turns = [e for e in events if e["type"] == "user_turn"]
    assert len(turns) == 1 and heard_fraction(QUESTION, turns[0]["text"]) >= 0.8, turns
    assert "stella" not in turns[0]["text"].lower()


def test_typed_text_skips_the_microphone_and_asr(gateway, tmp_path, subprocess_env):
    log, out = tmp_path / "events.jsonl", tmp_path / "out.wav"
    proc = subprocess.run(
        [sys.executable, "-m", "sidecar", "run", "--text", "Hello!", "--audio-out", str(out), "--events", str(log),
         "--server", gateway.url],
        cwd=ROOT, env={**subprocess_env, "STELLA_CHAT__MAX_TOKENS": "16"}, capture_output=True, text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = read_events(log)
    kinds = [e["type"] for e in events]
    assert "transcript" not in kinds and "speech_start" not in kinds
    assert first(events, "user_turn")["source"] == "text"
    assert kinds.index("user_turn") < kinds.index("request_sent") < kinds.index("reply_done") < kinds.index("end")
    if spoken_text(events):
        assert np.max(np.abs(load(out))) > 0.05, "the reply was not spoken into out.wav"


@pytest.mark.parametrize("args, message", [
    (["--audio-in", "/nonexistent/in.wav"], "/nonexistent/in.wav does not exist"),
    (["--text", "hi", "--server", "http://127.0.0.1:9"], "could not reach the Stella server"),
    (["--wake", " "], "wake_phrase"),
    (["--text", "hi"], "unknown setting 'voice.hangover'"),
])
def test_bad_input_gets_a_clear_message(args, message, tmp_path, subprocess_env):
    env = {**subprocess_env, "STELLA_LINK__CONNECT_TIMEOUT": "0.5"}
    if message.startswith("unknown"):
        env["STELLA_VOICE__HANGOVER"] = "400"
    proc = subprocess.run([sys.executable, "-m", "sidecar", "run", "--audio-out", str(tmp_path / "o.wav"), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_a_spoken_clock_question_is_answered_aloud_without_the_model(gateway, engines, piper, tmp_path):
    """"What time is it?" after the wake word: the turn carries the machine's own answer, no request
    goes to the gateway, and the answer is spoken into out.wav like any reply."""
    wav = save(tmp_path / "in.wav", concat(silence(0.5), piper("Hey Stella, what time is it?"), silence(0.5)))
    config = with_wake(AppConfig(server_url=gateway.url), "hey stella")
    options = Options(audio_in=wav, audio_out=tmp_path / "out.wav", events=tmp_path / "events.jsonl", fast=True)
    events = run_inprocess(config, options, engines)
    turn = first(events, "user_turn")
    assert turn["local_answer"] and turn["local_answer"].startswith("It's "), turn
    assert not [e for e in events if e["type"] == "request_sent"], "the model was asked"
    assert spoken_text(events, turn["turn"]) == turn["local_answer"]
    audio = [e for e in events if e["type"] == "audio_out" and e["turn"] == turn["turn"]]
    assert audio and sum(e["duration"] for e in audio) > 0.5
    out = load(options.audio_out)
    start, end = audio[0]["t"], audio[-1]["t"] + audio[-1]["duration"]
    assert float(np.sqrt(np.mean(out[int(start * RATE):int(end * RATE)] ** 2))) > 0.01, "nothing audible was played"
