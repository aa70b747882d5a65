"""Mandarin text as a person reads it: numbers, times, phone numbers, Latin words, symbols."""

from __future__ import annotations

import pytest

from sidecar.voice.zh_text import clock, normalise, runs


@pytest.mark.parametrize("text, said", [
    ("现在是3:45。", "现在是三点四十五分。"),
    ("明天2:00见！", "明天两点见！"),
    ("9:05出发", "九点零五分出发"),
    ("12:30吃午饭", "十二点三十分吃午饭"),
    ("我的电话是13812345678。", "我的电话是幺三八，幺二三四，五六七八。"),
    ("请拨打138-1234-5678", "请拨打幺三八，幺二三四，五六七八"),
    ("座机010-12345678", "座机零幺零，幺二三四五六七八"),
    ("2026年是马年", "二零二六年是马年"),
    ("会议在2026-12-07举行", "会议在二零二六年十二月七日举行"),
    ("12月7日", "十二月七日"),
    ("湿度45%", "湿度百分之四十五"),
    ("增长了3.5%", "增长了百分之三点五"),
    ("气温-3℃", "气温负三摄氏度"),
    ("花了¥12.5", "花了十二点五元"),
    ("价格是1,234元", "价格是一千二百三十四元"),
    ("大约3-5人", "大约三到五人"),
    ("我有2个苹果", "我有两个苹果"),
    ("第2名", "第二名"),
    ("他今年25岁", "他今年二十五岁"),
    ("房间号是0301", "房间号是零三零一"),
    ("圆周率约等于3.14", "圆周率约等于三点一四"),
])
def test_numbers_are_read_as_a_person_reads_them(text, said):
    assert normalise(text) == said


def test_a_clock_time_says_hours_and_minutes():
    assert clock("3", "45") == "三点四十五分"
    assert clock("2", "00") == "两点"
    assert clock("10", "08", "30") == "十点零八分三十秒"


@pytest.mark.parametrize("text, said", [
    ("**好的**，我们走吧……", "好的，我们走吧…"),
    ("太棒了😀！", "太棒了！"),
    ("《红楼梦》很好看", "红楼梦很好看"),
    ("你好!我是小星,你呢?", "你好！我是小星，你呢？"),
    ("好的。。。", "好的。"),
])
def test_symbols_go_and_pauses_stay_full_width(text, said):
    assert normalise(text) == said


def test_latin_words_stay_and_capitals_are_spelled():
    assert normalise("我喜欢用iPhone和AI聊天") == "我喜欢用iPhone和A I聊天"
    assert normalise("GPUs很贵") == "G P U很贵"
    assert normalise("OK，没问题") == "okay，没问题"
    assert normalise("我在用 Python 写代码") == "我在用Python写代码"


def test_a_reply_is_cut_into_chinese_and_english_runs_in_order():
    assert runs(normalise("我喜欢用iPhone和AI聊天。")) == [
        ("zh", "我喜欢用"), ("en", "iPhone"), ("zh", "和"), ("en", "A I"), ("zh", "聊天。")]
    assert runs("你好") == [("zh", "你好")]
    assert runs("Hello world，你好") == [("en", "Hello world，"), ("zh", "你好")]
    assert runs("") == []
