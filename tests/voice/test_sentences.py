"""Streaming tokens become speakable sentences as soon as each one is complete."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.voice.sentences import SentenceSplitter, speakable


def split(text: str, first_clause_words: int = 4, first_break_words: int = 0) -> list[str]:
    """Feed `text` token by token (a word with its leading space, as a model streams it)."""
    splitter = SentenceSplitter(first_clause_words, first_break_words=first_break_words)
    out: list[str] = []
    for token in re.findall(r"\s*\S+", text):
        out += splitter.feed(token)
    return out + splitter.flush()


@pytest.mark.parametrize("text, sentences", [
    ("The capital of France is Paris. It is lovely in spring!",
     ["The capital of France is Paris.", "It is lovely in spring!"]),
    ("Dr. Smith paid 3.14 dollars for tea. Then he left.", ["Dr. Smith paid 3.14 dollars for tea.", "Then he left."]),
    ("I lived in the U.S. for a while. It was fun.", ["I lived in the U.S. for a while.", "It was fun."]),
    ("Bring fruit, e.g. apples and pears. Thanks.", ["Bring fruit, e.g. apples and pears.", "Thanks."]),
    ("I read J. K. Rowling. So do I. Great.", ["I read J. K. Rowling.", "So do I.", "Great."]),
    ("Wait... what? Really?! Yes.", ["Wait... what?", "Really?!", "Yes."]),
    ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
    ("今日は晴れです。散歩しましょう！いいね", ["今日は晴れです。", "散歩しましょう！", "いいね"]),
    ("1. Apples\n2. Pears", ["1. Apples", "2. Pears"]),
    ("It costs 1,000 dollars. Wow.", ["It costs 1,000 dollars.", "Wow."]),
])
def test_sentence_boundaries(text, sentences):
    assert split(text, first_clause_words=99) == sentences


@pytest.mark.parametrize("text, chunks", [
    ("I love rainy days because they make everything cozy. Do you?",
     ["I love rainy days", "because they make everything cozy.", "Do you?"]),
    ("Rainy days are perfect for curling up with a book.", ["Rainy days are perfect", "for curling up with a book."]),
    ("Yes and maybe. Then we can go and play.", ["Yes and maybe.", "Then we can go and play."]),  # first: too short
    ("The capital of France is Paris.", ["The capital of France is Paris."]),  # no clause word: whole
    ("For dinner, try a stir-fry with rice and beans.", ["For dinner,", "try a stir-fry with rice and beans."]),
    ("我喜欢下雨天，因为很舒服。", ["我喜欢下雨天，因为很舒服。"]),  # Chinese is cut at its own marks only
])
def test_a_long_first_sentence_is_cut_before_a_clause_word_to_speak_sooner(text, chunks):
    assert split(text, first_clause_words=2, first_break_words=4) == chunks


def test_the_first_clause_is_cut_at_a_comma_to_speak_sooner():
    assert split("When I was young, I lived by the sea, and I loved it. Yes, really.") == [
        "When I was young,", "I lived by the sea, and I loved it.", "Yes, really."]
    assert split("Well, I think so.") == ["Well, I think so."], "too short a clause is not cut"


def test_the_first_clause_goes_as_soon_as_its_comma_comes_unless_a_number_may_go_on():
    splitter = SentenceSplitter(2)
    assert splitter.feed("I don't know,") == ["I don't know,"], "no need to wait for the next token"
    splitter = SentenceSplitter(2)
    assert splitter.feed("It costs 1,") == []  # "1,000"
    assert splitter.feed("000 dollars, more or less.") == ["It costs 1,000 dollars,"]


def test_a_sentence_is_released_as_soon_as_the_next_token_confirms_it():
    splitter = SentenceSplitter(99)
    assert splitter.feed("Hello there.") == []  # could still be "there.com" or "there..."
    assert splitter.feed(" How") == ["Hello there."]
    assert splitter.feed(" are you?") == []
    assert splitter.flush() == ["How are you?"]


def test_speakable_text_drops_markdown_and_emoji():
    assert speakable("**Hello** 😀 _world_ #1") == "Hello world 1"
    assert speakable("<s>I don't know.</s>") == "I don't know."
    assert speakable(" 🎉 *** ") == ""


def texts(letters: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    words = st.text(alphabet=letters, min_size=1, max_size=8)
    punct = st.sampled_from(["", "", "", ".", ",", "!", "?", "...", " 3.5", "。", "\n"])
    return st.lists(st.tuples(words, punct), min_size=1, max_size=40).map(
        lambda parts: " ".join(w + p for w, p in parts))


def streamed(text: str, cuts: list[int]) -> list[str]:
    pieces, last = [], 0
    for cut in sorted({min(c, len(text)) for c in cuts}) + [len(text)]:
        pieces.append(text[last:cut])
        last = cut
    splitter = SentenceSplitter(4)
    got: list[str] = []
    for piece in pieces:
        got += splitter.feed(piece)
    return got + splitter.flush()


cuts = st.lists(st.integers(min_value=0, max_value=400), max_size=12)


@settings(max_examples=200, deadline=None)
@given(text=texts(st.characters(whitelist_categories=["Ll", "Lu"])), cuts=cuts)
def test_any_token_boundaries_give_the_same_sentences(text, cuts):
    assert streamed(text, cuts) == streamed(text, [])


@settings(max_examples=200, deadline=None)
@given(text=texts(st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")), cuts=cuts)
def test_no_word_is_lost(text, cuts):
    assert "".join("".join(s.split()) for s in streamed(text, cuts)) == "".join(text.split())


def test_stray_tokens_of_a_small_model_are_not_spoken():
    assert split("Yes, I like music.我可以に通りのButtonClickedattendedattendedattendedattended") == [
        "Yes, I like music."]
    assert split("I am fine.我可以 Really.") == ["I am fine.", "Really."]
    assert split("Done.Next one.") == ["Done.", "Next one."]


def split_zh(text: str, cuts: list[int] | None = None) -> list[str]:
    """A Chinese reply fed character by character (or at `cuts`), as a model streams it."""
    splitter = SentenceSplitter(language="zh")
    at = sorted({0, len(text), *(c for c in (range(len(text)) if cuts is None else cuts) if c <= len(text))})
    out: list[str] = []
    for a, b in zip(at, at[1:], strict=False):
        out += splitter.feed(text[a:b])
    return out + splitter.flush()


@pytest.mark.parametrize("text, sentences", [
    ("你好呀。今天天气很好！你想出去走走吗？", ["你好呀。", "今天天气很好！", "你想出去走走吗？"]),
    ("先买菜；再做饭……然后吃饭", ["先买菜；", "再做饭……", "然后吃饭"]),
    ("好的!我们走吧?", ["好的!", "我们走吧?"]),
])
def test_chinese_sentences_end_at_their_own_marks(text, sentences):
    assert split_zh(text, []) == sentences


def test_a_chinese_reply_is_cut_at_a_comma_after_two_characters_first_then_ten():
    text = "你好呀，我是小星，很高兴认识你，今天想聊点什么呢，天气还是音乐，或者随便聊聊。"
    assert split_zh(text) == ["你好呀，", "我是小星，很高兴认识你，", "今天想聊点什么呢，天气还是音乐，",
                              "或者随便聊聊。"]
    assert split_zh("好的，我来帮你查一下。") == ["好的，", "我来帮你查一下。"], "her voice starts on 2 characters"
    assert split_zh("好，我知道了，马上就去办。") == ["好，我知道了，", "马上就去办。"], "2 characters, not 1"
    assert split_zh("当然可以、没问题：我来帮你吧。") == ["当然可以、", "没问题：我来帮你吧。"]


def test_numbers_in_a_chinese_reply_are_not_cut():
    assert split_zh("现在是3:45，价格是1,000元。") == ["现在是3:45，", "价格是1,000元。"]


def test_latin_words_in_a_chinese_reply_are_kept_and_stray_scripts_are_not():
    assert split_zh("你喜欢iPhone吗？我喜欢Python。") == ["你喜欢iPhone吗？", "我喜欢Python。"]
    assert split_zh("好的。Привет") == ["好的。"]


def test_an_english_reply_is_split_as_before_when_the_language_is_english():
    text = "Yes, I like music. 我可以"
    assert SentenceSplitter().feed(text) + SentenceSplitter().flush() == split(text)[:1]


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from([*"你好我是小星今天天气很高兴", "，", "。", "！", "？", "、", "：", "；", "……",
                                      "AI", "3:45", "1,000"]), max_size=60).map("".join), cuts=cuts)
def test_any_token_boundaries_give_the_same_chinese_sentences_and_no_character_is_lost(text, cuts):
    """A mark is cut at as it comes (her voice starts sooner): a second mark or a closing quote in the next token
    starts the next chunk, and is not spoken. The words and where they are cut are the same."""
    def words(sentences: list[str]) -> list[str]:
        return [w for w in (re.sub(r"\W", "", s) for s in sentences) if w]

    got = split_zh(text, cuts)
    assert words(got) == words(split_zh(text, []))
    assert "".join(words(got)) == re.sub(r"\W", "", text)
