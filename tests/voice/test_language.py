"""voice.language switches everything language-dependent together: the wake phrase, the persona and
system line, the Settings field, and the command lines that set it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from desktop.cli import parser as stella_parser
from desktop.shell import WindowOptions
from sidecar.__main__ import parser as sidecar_parser
from sidecar.config import MANDARIN_PERSONA, AppConfig, ChatConfig, PersonaConfig, VoiceConfig, load_app_config
from sidecar.conversation import Conversation
from sidecar.engine.__main__ import parse as engine_parse
from sidecar.engine.settings import UserSettings, wake_label
from sidecar.outfit_catalogue import load_catalogue
from sidecar.voice.turn_taking import TurnTaker
from sidecar.voice.wake_pinyin import PinyinMatcher


def test_the_default_phrase_follows_the_language_and_her_own_phrase_stays():
    assert VoiceConfig(language="zh").phrase == "你好小星" and VoiceConfig().phrase == "hey stella"
    assert VoiceConfig(language="zh", wake_phrase="hey luna").phrase == "hey luna"
    assert VoiceConfig(language="en", wake_phrase="你好小星").phrase == "hey stella"
    assert VoiceConfig(language="zh").wake_listener is None  # the English acoustic model does not listen for 你好小星
    assert wake_label(VoiceConfig(language="zh")) == "你好小星"


def test_a_chinese_phrase_in_english_is_refused_with_the_way_out():
    with pytest.raises(ValueError, match="'language' to \"zh\""):
        VoiceConfig(language="en", wake_phrase="小星小星")


def test_the_environment_sets_the_language():
    config = load_app_config(None, {"STELLA_VOICE__LANGUAGE": "zh"})
    assert config.voice.language == "zh" and config.voice.phrase == "你好小星"
    with pytest.raises(Exception, match="language"):
        load_app_config(None, {"STELLA_VOICE__LANGUAGE": "fr"})


def test_the_turn_taker_listens_for_the_mandarin_phrase():
    taker = TurnTaker(VoiceConfig(language="zh").phrase, 8.0)
    assert isinstance(taker.matcher, PinyinMatcher) and taker.prompt == "你好小星。"


def test_the_persona_speaks_mandarin_and_switches_with_the_language():
    convo = Conversation(PersonaConfig(), ChatConfig(), outfits=load_catalogue(), language="zh")
    line = convo.system_line()
    assert line.startswith("你是小星（Stella）") and "普通话" in line and "space（宇航服）" in line
    assert convo.prefix()[1:] == [{"role": "user", "content": "你好，你是谁？"},
                                  {"role": "assistant", "content": MANDARIN_PERSONA.greeting}]
    convo.language = "en"  # Settings switched back (Sessions.reconfigure)
    assert convo.system_line().startswith("You are Stella,") and convo.prefix()[1]["content"] == "Hello, who are you?"


def test_a_persona_the_user_wrote_stays_theirs_in_mandarin():
    mine = PersonaConfig(name="Luna", personality="a sleepy cat")
    line = Conversation(mine, ChatConfig(), language="zh").system_line()
    assert line.startswith("你是Luna（Stella），a sleepy cat。") and "请用普通话回答" in line


def test_settings_switch_the_phrase_with_the_language():
    english = UserSettings.of(AppConfig())
    chinese = english.updated({"language": "zh"})
    assert chinese.wake_phrase == "你好小星" and chinese.voice_changed(english)
    assert chinese.apply(AppConfig()).voice.phrase == "你好小星"
    assert chinese.updated({"language": "en"}).wake_phrase == "hey stella"
    own = english.updated({"wake_phrase": "hey luna"}).updated({"language": "zh"})
    assert own.wake_phrase == "hey luna"


def test_the_command_lines_take_the_language():
    assert sidecar_parser().parse_args(["run", "--language", "zh"]).language == "zh"
    assert engine_parse(["--language", "zh"]).language == "zh"
    args = stella_parser().parse_args(["run", "--language", "zh"])
    assert args.language == "zh"
    assert WindowOptions(language="zh").engine_args()[-2:] == ["--language", "zh"]
    assert "--language" not in WindowOptions().engine_args()


def test_a_language_stella_does_not_speak_is_refused_clearly():
    done = subprocess.run([sys.executable, "-m", "sidecar", "run", "--language", "fr"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "invalid choice: 'fr' (choose from 'en', 'zh')" in done.stderr


class _NoModel:
    def load(self) -> None:
        return None


def test_the_language_given_at_start_wins_over_the_saved_one():
    from sidecar.engine.settings import SettingsPanel

    panel = SettingsPanel(AppConfig(), None, lambda url: False, None, _NoModel())  # type: ignore[arg-type]
    saved = {"language": "en", "wake_phrase": "hey stella"}
    config = panel.restore(saved, None, "zh")
    assert config is not None and config.voice.language == "zh" and config.voice.phrase == "你好小星"
    assert panel.values.wake_phrase == "你好小星"  # what Settings shows
    assert panel.restore(saved, None).voice.language == "en"
