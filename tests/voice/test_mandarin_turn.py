"""A Mandarin speaker, end to end through the real voice loop: the user's Mandarin speech (synthesised with
one of the app's Mandarin voices, tests/voice/speech_zh.py) in a WAV file, voice.language "zh", whisper base in
Mandarin, the pinyin wake phrase, the real default model (the embedded default's llama-server behind the
real gateway) answering in Chinese, spoken with the Mandarin voice while her mouth moves; an outfit asked
for in Mandarin changes it without asking the model."""

from __future__ import annotations

import re

import pytest

from sidecar.config import AppConfig, ChatConfig, VoiceConfig
from sidecar.headless import Options
from sidecar.voice.audio import RATE
from sidecar.voice_loop import LoadedModels

from .speech import concat, load, save, silence
from .speech_zh import cer, hanzi, mandarin
from .test_companion import companion  # noqa: F401 - the fixture: the default model behind the gateway
from .test_headless import first, run_inprocess, spoken_text

pytestmark = pytest.mark.llama
HAN = re.compile(r"[\u3400-\u9fff]")


def _mandarin_app(url: str) -> AppConfig:
    """The app in Mandarin on the default model; a patient reply timeout: the machine may be busy (no timing
    is checked here)."""
    return AppConfig(server_url=url, voice=VoiceConfig(language="zh"), chat=ChatConfig(reply_timeout_s=100))


@pytest.fixture(scope="module")
def zh_engines() -> LoadedModels:
    return LoadedModels.load(VoiceConfig(language="zh"))


# The user's voice: Kokoro's jf_alpha style, not the style she answers in (voice.kokoro_style).
USER = "kokoro:jf_alpha"


def _said(text: str, tmp_path, name: str) -> Options:
    audio, _ = mandarin(text, USER)
    wav = save(tmp_path / f"{name}.wav", concat(silence(0.5), audio, silence(1.0)))
    return Options(audio_in=wav, audio_out=tmp_path / f"{name}-out.wav", events=tmp_path / f"{name}.jsonl",
                   fast=True)


def test_ni_hao_xiao_xing_and_a_question_get_a_chinese_answer_in_her_mandarin_voice(companion, zh_engines,  # noqa: F811
                                                                                     tmp_path):
    options = _said("你好小星，今天天气怎么样？", tmp_path, "weather")
    events = run_inprocess(_mandarin_app(companion), options, zh_engines)
    wake = first(events, "wake")
    assert wake["engine"] == "phrase" and wake["word"] == "你好小星"
    turn = first(events, "user_turn")
    assert cer("今天天气怎么样", turn["text"]) <= 0.3, turn  # heard in Chinese, the phrase taken off
    assert "你好" not in turn["text"]
    first(events, "request_sent")
    reply = spoken_text(events, turn["turn"])
    han = len(HAN.findall(reply))
    assert han >= 4 and han >= 0.7 * len(re.findall(r"\w", reply)), f"not a Chinese answer: {reply!r} in {events}"
    audio = [e for e in events if e["type"] == "audio_out" and e["turn"] == turn["turn"]]
    assert audio and sum(e["duration"] for e in audio) > 1.0
    out = load(options.audio_out)
    start, end = audio[0]["t"], audio[-1]["t"] + audio[-1]["duration"]
    spoken = out[int(start * RATE):int(end * RATE) + RATE // 10]
    heard = zh_engines.transcriber(spoken)
    assert cer(reply, heard) <= 0.5, (reply, heard)  # her Mandarin voice, understood by Mandarin ears
    mouth = [e for e in events if e["type"] == "mouth" and start <= e["t"] <= end]
    assert mouth and max(e["level"] for e in mouth) > 0.3, "her mouth did not move while she spoke"


def test_huan_shang_yu_hang_fu_changes_her_outfit_without_the_model(companion, zh_engines, tmp_path):  # noqa: F811
    options = _said("你好小星，换上宇航服。", tmp_path, "outfit")
    events = run_inprocess(_mandarin_app(companion), options, zh_engines)
    outfits = [e for e in events if e["type"] == "outfit"]
    assert outfits and outfits[0]["id"] == "space", [e for e in events if e["type"] in ("transcript", "user_turn")]
    assert not [e for e in events if e["type"] == "request_sent"], "the model was asked"


def test_a_clock_question_in_mandarin_is_answered_aloud_in_chinese(companion, zh_engines, tmp_path):  # noqa: F811
    options = _said("你好小星，现在几点了？", tmp_path, "clock")
    events = run_inprocess(_mandarin_app(companion), options, zh_engines)
    turn = first(events, "user_turn")
    assert re.fullmatch(r"现在是\w{2}\w+点\w+[分整]。", turn["local_answer"]), turn
    assert hanzi(spoken_text(events, turn["turn"])) == hanzi(turn["local_answer"])
    assert [e for e in events if e["type"] == "audio_out" and e["turn"] == turn["turn"]]
