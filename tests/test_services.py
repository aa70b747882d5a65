"""The real services the suite relies on actually work (so a broken machine fails loudly here)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time

import httpx
import numpy as np
import pytest


def _dominant_hz(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))])


@pytest.mark.audio
def test_pulseaudio_mic_sink_carries_a_tone_to_its_monitor(pulseaudio):
    assert {pulseaudio.mic, pulseaudio.speaker} <= set(pulseaudio.sinks())
    env = {**os.environ, **pulseaudio.env}
    rate = 48000
    tone = (0.5 * 32767 * np.sin(2 * np.pi * 440 * np.arange(rate * 2) / rate)).astype("<i2")
    rec = subprocess.Popen(
        ["parec", f"--device={pulseaudio.mic}.monitor", "--format=s16le", f"--rate={rate}", "--channels=1",
         "--latency-msec=20"], env=env, stdout=subprocess.PIPE,
    )
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: rec.stdout.read(4800), b"")))
    reader.start()
    deadline = time.monotonic() + 10
    while not chunks and time.monotonic() < deadline:  # the monitor starts delivering after ~1-2 s
        time.sleep(0.05)
    subprocess.run(["pacat", f"--device={pulseaudio.mic}", "--format=s16le", f"--rate={rate}",
                    "--channels=1"], input=tone.tobytes(), env=env, check=True, timeout=20)
    time.sleep(0.3)
    rec.terminate()
    reader.join()
    captured = np.frombuffer(b"".join(chunks), dtype="<i2").astype(np.float32)
    loud = np.flatnonzero(np.abs(captured) > 1000)
    assert len(loud) > rate, "the tone played into the mic sink did not reach its monitor"
    segment = captured[loud[0]: loud[0] + rate]
    assert abs(_dominant_hz(segment, rate) - 440) < 3


@pytest.mark.keyring
def test_secret_service_stores_and_returns_a_secret(secret_service, monkeypatch):
    for key, value in secret_service.env.items():
        monkeypatch.setenv(key, value)
    from keyring.backends.SecretService import Keyring

    backend = Keyring()
    backend.set_password("stella-test", "db-key", "0123abcd")
    assert backend.get_password("stella-test", "db-key") == "0123abcd"
    backend.delete_password("stella-test", "db-key")
    assert backend.get_password("stella-test", "db-key") is None


@pytest.mark.display
def test_xvfb_answers_on_its_display(xvfb):
    info = subprocess.run(["xdpyinfo", "-display", xvfb.display], capture_output=True, text=True, timeout=10)
    assert info.returncode == 0
    assert "1280x800" in info.stdout


@pytest.mark.redis
def test_redis_round_trip(redis_server):
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.set("stella:test", "ok")
    assert client.get("stella:test") == b"ok"


@pytest.mark.llama
def test_llama_server_streams_tokens_over_sse(llama_server):
    assert httpx.get(f"{llama_server.url}/health").json() == {"status": "ok"}
    pieces = []
    body = {"prompt": "The capital of France is", "n_predict": 12, "stream": True, "temperature": 0}
    with httpx.stream("POST", f"{llama_server.url}/completion", json=body, timeout=30,
                      headers=llama_server.headers) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if line.startswith("data: "):
                pieces.append(json.loads(line[6:]))
    assert pieces[-1]["stop"] is True
    tokens = [p["content"] for p in pieces[:-1] if p["content"]]
    assert len(tokens) >= 5, "expected the reply to arrive token by token"
    assert "".join(tokens).strip()


def test_llama_server_runs_below_the_voice_loop_in_cpu_priority(llama_server):
    """A generation must not starve listening and playback on the same cores (barge-in has 150 ms)."""
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, llama_server.process.pid) == min(19, ours + llama_server.nice)
    assert llama_server.nice > 0
