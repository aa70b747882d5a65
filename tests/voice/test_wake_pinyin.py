"""The Mandarin wake phrase 你好小星, matched by its sounds in what whisper wrote, and its guards."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.frames import EndFrame, Frame, TranscriptFrame, UserTurnFrame, UtteranceFrame, WakeFrame
from sidecar.voice.audio import RATE
from sidecar.voice.turn_taking import TurnTaker
from sidecar.voice.wake import NameMatch, NameMatcher
from sidecar.voice.wake_nbest import NameOdds
from sidecar.voice.wake_pinyin import PinyinMatcher, name_matcher, phrase_prompt

from . import harness

MATCHER = PinyinMatcher("你好小星")


@pytest.mark.parametrize(("transcript", "rest"), [
    ("你好小星，今天天气怎么样？", "今天天气怎么样？"),
    ("你好小星。", ""),
    # how whisper writes 小星: 心 (xin, -ng lost), 晓, 兴, 新, 行 read xing beside 小
    ("你好小心，现在几点了？", "现在几点了？"),
    ("你好,小心!", ""),
    ("你好晓星，换上宇航服。", "换上宇航服。"),
    ("你好小兴。讲个笑话", "讲个笑话"),
    ("你好小行", ""),
    ("您好小星", ""),  # 您 and 你 alike
    ("嗯，你好呀，小星，你在干嘛？", "你在干嘛？"),  # a filler before, a particle between
])
def test_the_phrase_and_how_whisper_writes_it_wake_her(transcript, rest):
    found = MATCHER.match(transcript)
    assert found is not None and found.rest == rest


@pytest.mark.parametrize("transcript", [
    "小心",  # careful! — said every day: the greeting is needed
    "小心点，地上滑。",
    "小星，今天天气怎么样？",  # her name alone is 小心 to whisper
    "你好小明",  # other names
    "你好，小红。",
    "你好小雪",
    "你好，小姐。",
    "你好晓晴",
    "我跟他说你好小星",  # a mention, not the start
    "你好，今天天气怎么样？",
    "hey stella",
])
def test_near_misses_and_other_names_do_not(transcript):
    assert MATCHER.match(transcript) is None


def test_another_name_is_told_apart_from_hers_misheard():
    """Whisper's best guess 你好小明 is another name: the turn taker asks for no second guess then."""
    assert MATCHER.hears_another("你好小明，你好吗？") and MATCHER.hears_another("你好，小红")
    assert not MATCHER.hears_another("你好小心") and not MATCHER.hears_another("你好小星")
    assert not MATCHER.hears_another("今天天气怎么样")


def test_her_sounds_in_an_unprompted_reading():
    """Prompted with the phrase whisper writes it for 你好晓晴; its readings without the prompt tell."""
    assert MATCHER.sounds_in("你好小心") and MATCHER.sounds_in("嗯你好晓欣") and MATCHER.sounds_in("你好笑声。")
    assert MATCHER.sounds_in("你好少姓，我有点累了。")  # 小 said shao: x, s and sh alike in an accent
    assert not MATCHER.sounds_in("你好小明") and not MATCHER.sounds_in("小心点") and not MATCHER.sounds_in("你好笑情")
    assert not MATCHER.sounds_in("你好星星") and not MATCHER.sounds_in("你好行行")


def test_a_phrase_without_a_greeting_is_all_name():
    m = PinyinMatcher("小星小星")
    assert m.match("小心小心，开灯") is not None and m.match("小心，开灯") is None


def test_the_matcher_and_prompt_follow_the_phrase_language():
    assert isinstance(name_matcher("你好小星"), PinyinMatcher) and isinstance(name_matcher("hey stella"), NameMatcher)
    assert phrase_prompt("你好小星") == "你好小星。" and phrase_prompt("hey_jarvis") == "Hey Jarvis."
    with pytest.raises(ValueError, match="Chinese characters"):
        PinyinMatcher("hey 小星")


class Unprompted:
    """Whisper's readings scripted: prompted with the phrase, and without a prompt (the model itself is
    measured by tests/bench/mandarin_wake.py)."""

    head_s = 3.0
    name_check = False

    def __init__(self, plain: list[str], prompted: list[str] | None = None) -> None:
        self.plain, self.prompted = plain, prompted or []
        self.asked: list[str] = []

    def __call__(self, audio: np.ndarray, prompt: str = "") -> list[str]:
        self.asked.append(prompt)
        assert prompt in ("你好小星。", "")
        return self.prompted if prompt else self.plain

    def primed(self, audio: np.ndarray, prompt: str) -> list[str]:
        return self(audio, prompt)

    def in_noise(self, audio: np.ndarray) -> bool:
        return False

    def check(self, audio: np.ndarray, found: NameMatch, spellings: list[str]) -> NameOdds:
        assert spellings == ["小星"]
        return NameOdds(-3.0, -9.5)

    def prepare(self, words: str) -> None:
        pass


def _heard(text: str, hypotheses: Unprompted) -> list[Frame]:
    u = UtteranceFrame(audio=np.zeros(2 * RATE, np.float32), start=1.0, end=3.0, t=3.3, verify_wake=True)
    return harness.run([TranscriptFrame(text=text, asr_ms=1.0, utterance=u, t=u.t), EndFrame()],
                       [TurnTaker("你好小星", 8, hypotheses=hypotheses)])


def test_the_phrase_whisper_wrote_must_sound_so_without_the_prompt():
    """Prompted with 你好小星, whisper writes it for 你好晓晴: its unprompted readings (你好笑情) tell."""
    out = _heard("你好小星，今天天气怎么样？", Unprompted(["你好小心，今天天气怎么样？", "你好小星今天天气怎么样"]))
    assert [f.word for f in out if isinstance(f, WakeFrame)] == ["你好小星"]
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["今天天气怎么样？"]
    look_alike = Unprompted(["你好笑情。", "您好笑情"])
    out = _heard("你好小星。", look_alike)
    assert not [f for f in out if isinstance(f, WakeFrame | UserTurnFrame)] and look_alike.asked == [""]


def test_a_phrase_only_whisper_prompted_guesses_wrote_needs_it_unprompted_too():
    """In noise whisper wrote 以后小星 (its greeting lost); its prompted 4-best has the phrase."""
    prompted = ["你好小星，今天天气怎么样？"]
    out = _heard("以后小星，今天天气怎么样？", Unprompted(["以后小心今天天气怎么样。"], prompted))
    assert not [f for f in out if isinstance(f, WakeFrame)]
    out = _heard("以后小星，今天天气怎么样？", Unprompted(["你好小心今天天气怎么样。"], prompted))
    assert [f.word for f in out if isinstance(f, WakeFrame)] == ["你好小星"]
    assert [f.text for f in out if isinstance(f, UserTurnFrame)] == ["今天天气怎么样？"]


def test_another_name_gets_no_second_guess():
    asked = Unprompted(["你好小心"], ["你好小星。"])
    assert not [f for f in _heard("你好小请。", asked) if isinstance(f, WakeFrame)] and asked.asked == []
