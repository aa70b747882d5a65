"""Local intents said in Mandarin: stop, volume, the clock (answered in Chinese) and outfits."""

from __future__ import annotations

from datetime import datetime

import pytest

from sidecar.intents import Intents, Stop, Tell, Volume, Wear, chinese_clock_answer, chinese_number
from sidecar.outfit_catalogue import load_catalogue

CATALOGUE = load_catalogue()
AFTERNOON = datetime(2026, 12, 7, 15, 45)  # a Monday
INTENTS = Intents(CATALOGUE, "Stella", now=lambda: AFTERNOON)


@pytest.mark.parametrize("said", ["停", "停下。", "停下来！", "别说了", "别说了！", "闭嘴吧", "安静一点", "够了。",
                                  "小星，请停下吧！", "好了，别说了"])
def test_stop(said):
    assert INTENTS.parse(said) == Stop()


@pytest.mark.parametrize(("said", "step"), [("大声点", 1), ("大声一点！", 1), ("声音大一点。", 1), ("再大声点", 1),
                                            ("音量调大一点", 1), ("小星，大点声", 1), ("小声点", -1),
                                            ("小声一点。", -1), ("声音小一点吧", -1), ("音量调低", -1),
                                            ("请小声点", -1)])
def test_volume(said, step):
    assert INTENTS.parse(said) == Volume(step)


@pytest.mark.parametrize(("said", "answer"), [
    ("几点了？", "现在是下午三点四十五分。"),
    ("现在几点？", "现在是下午三点四十五分。"),
    ("小星，现在几点了？", "现在是下午三点四十五分。"),
    ("今天几号？", "今天是二零二六年十二月七日，星期一。"),
    ("今天是几月几号", "今天是二零二六年十二月七日，星期一。"),
    ("星期几？", "今天是星期一。"),
    ("今天星期几呀", "今天是星期一。"),
])
def test_clock_questions_are_answered_in_chinese(said, answer):
    assert INTENTS.parse(said) == Tell(answer)


@pytest.mark.parametrize(("hour", "minute", "said"), [(0, 5, "现在是凌晨十二点零五分。"),
                                                      (2, 0, "现在是凌晨两点整。"),
                                                      (8, 30, "现在是早上八点三十分。"),
                                                      (10, 10, "现在是上午十点十分。"),
                                                      (12, 1, "现在是中午十二点零一分。"),
                                                      (21, 59, "现在是晚上九点五十九分。")])
def test_times_read_as_a_person_says_them(hour, minute, said):
    assert chinese_clock_answer("time", datetime(2026, 3, 1, hour, minute)) == said


def test_numbers_and_the_week():
    said = [chinese_number(n) for n in (0, 7, 10, 11, 20, 31, 45)]
    assert said == ["零", "七", "十", "十一", "二十", "三十一", "四十五"]
    assert chinese_clock_answer("day", datetime(2026, 12, 13)) == "今天是星期日。"


@pytest.mark.parametrize("said", ["不要停", "我不想停下来", "你几点睡觉？", "时间过得真快", "今天天气怎么样？",
                                  "别说了，我们聊聊音乐吧，你喜欢什么歌？", "他说话声音很大", "小心",
                                  "星期几去公园比较好？"])
def test_conversation_is_not_a_command(said):
    assert INTENTS.parse(said) is None


def test_english_keeps_its_own_answers():
    assert INTENTS.parse("what time is it") == Tell("It's 3:45 PM.")
    assert INTENTS.parse("stop") == Stop()


@pytest.mark.parametrize(("said", "outfit"), [("换上宇航服", "space"), ("小星，请换上宇航服吧", "space"),
                                              ("穿上睡衣", "pyjamas"), ("换成校服。", "school")])
def test_outfits_by_their_chinese_names(said, outfit):
    assert INTENTS.parse(said) == Wear(outfit)


def test_every_outfit_of_the_wardrobe_can_be_asked_for_in_chinese():
    """Outfits added to the catalogue with Chinese names (the hanfu, the cyberpunk one) flow in by themselves."""
    for outfit in CATALOGUE:
        assert outfit.chinese, f"{outfit.id} has no Chinese name to ask for it by"
        assert INTENTS.parse(f"换上{outfit.chinese[0]}") == Wear(outfit.id)


@pytest.mark.parametrize(("said", "outfit"), [("欢向与韩府。", "space"), ("请欢上睡一", "pyjamas")])
def test_an_outfit_request_whisper_misspelt_is_matched_by_its_sound(said, outfit):
    """Whisper wrote 换上宇航服 as 欢向与韩府 for an accented voice: the same syllables, x/s/sh and -n/-ng alike."""
    assert INTENTS.parse(said) == Wear(outfit)


@pytest.mark.parametrize("said", ["不要欢向与韩府", "我换上了睡衣", "欢迎来到宇宙", "还上宇航服", "欢向"])
def test_by_sound_the_verb_and_a_name_are_still_needed(said):
    assert INTENTS.parse(said) is None


def test_by_sound_the_longest_name_heard_wins():
    """与韩府 sounds like 宇航服 and holds 汉服's syllables (han fu): the longer name is what was asked for."""
    from sidecar.outfit_catalogue import Outfit

    wardrobe = (Outfit("space", "Space suit", chinese=("宇航服",)), Outfit("hanfu", "Hanfu", chinese=("汉服",)))
    intents = Intents(wardrobe, "Stella")
    assert intents.parse("欢向与韩府。") == Wear("space") and intents.parse("欢向韩府") == Wear("hanfu")
