"""The window's commands reach the voice loop: a typed message is answered aloud (real models,
a PulseAudio null sink as the sound card), with lip-sync levels and push-to-talk."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from sidecar.launch import AUTH_PREFIX, SUBPROTOCOL
from tests import services
from tests.desktop import aio
from tests.desktop.conftest import Engine, run_engine
from tests.desktop.gateway import Gateway

pytestmark = [pytest.mark.llama, pytest.mark.keyring, pytest.mark.audio]


async def converse(engine: Engine) -> list[dict]:
    """Wait for the voice loop, press and release push-to-talk, type a message, hear the reply out."""
    events: list[dict] = []
    protocols = [SUBPROTOCOL, AUTH_PREFIX + engine.secret]
    async with connect(f"ws://127.0.0.1:{engine.port}/", subprotocols=protocols) as ws:

        async def until(check) -> dict:  # noqa: ANN001
            while True:
                event = json.loads(await ws.recv())
                events.append(event)
                if check(event):
                    return event

        async with asyncio.timeout(90):
            await until(lambda e: e["type"] == "voice" and e["status"] == "ready")
            await ws.send(json.dumps({"cmd": "ptt_start"}))
            await until(lambda e: e == {"type": "state", "state": "listening"})
            await ws.send(json.dumps({"cmd": "ptt_stop"}))
            await until(lambda e: e["type"] == "push_to_talk" and not e["pressed"])
            await ws.send(json.dumps({"cmd": "text", "text": "Say hello to me, please."}))
            await until(lambda e: e == {"type": "state", "state": "idle"} and events[-2]["type"] == "turn_end")
            await until(lambda e: e["type"] == "turn")  # the turn's timeline follows its end
    return events


def test_a_typed_message_is_answered_aloud_with_lip_sync(
        gateway: Gateway, engine_env: dict[str, str], pulseaudio: services.PulseAudio, tmp_path: Path) -> None:
    env = {**engine_env, **pulseaudio.env, "HOME": engine_env["HOME"], "STELLA_CHAT__MAX_TOKENS": "24"}
    env["STELLA_VOICE__WAKE_ENGINE"] = "off"  # no wake word needed for push-to-talk; models load faster
    with run_engine(gateway.url, tmp_path / "s.db", env, voice="auto") as engine:
        events = aio.run(converse(engine))

    ready = next(e for e in events if e["type"] == "voice" and e["status"] == "ready")
    assert ready["detail"] == "Listening: everything you say is for Stella."
    states = [e["state"] for e in events if e["type"] == "state"]
    assert states[-3:] == ["thinking", "speaking", "idle"], states
    spoken = [e for e in events if e["type"] == "audio_out"]
    assert spoken and all(e["duration"] > 0.1 for e in spoken)
    levels = [e["level"] for e in events if e["type"] == "mouth"]  # one per 20 ms heard
    assert len(levels) >= 0.8 * sum(e["duration"] for e in spoken) / 0.02, "lip sync must follow the whole reply"
    assert max(levels) > 0.3 and min(levels) < 0.1, "the mouth should open and close"
    reply = next(e for e in events if e["type"] == "reply_done")
    assert reply["text"].strip()
    timeline = next(e for e in events if e["type"] == "turn")  # the app's turn timeline, device side included
    marks = timeline["marks"]
    assert marks["request_sent"] <= marks["first_token"] <= marks["first_sentence"] <= marks["audio_queued"]
    assert marks["audio_queued"] <= marks["audio_written"] <= marks["first_audio"]
    assert {"llm_first_token", "tts", "prebuffer", "device_latency", "buffered"} <= timeline["latency_ms"].keys()
