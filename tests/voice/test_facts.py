"""The facts she takes from what the user says (sidecar.facts) and what a turn brings to mind (sidecar.recall)."""

from __future__ import annotations

import pytest

from sidecar.facts import Fact, facts_in
from sidecar.recall import query_of, within


def triples(text: str) -> set[tuple[str, str, str]]:
    return {(f.subject, f.relation, f.value) for f in facts_in(text)}


@pytest.mark.parametrize(("said", "expected"), [
    ("My sister Lena lives in Lisbon.", {("sister", "name", "Lena"), ("sister", "lives_in", "Lisbon")}),
    ("I moved to Porto last year.", {("user", "lives_in", "Porto")}),
    ("I work as a nurse.", {("user", "job", "nurse")}),
    ("I'm a teacher at a primary school.", {("user", "job", "teacher")}),
    ("My favourite colour is green.", {("user", "favourite", "green")}),
    ("I have a dog called Max.", {("user", "has", "dog"), ("dog", "name", "Max")}),
    ("I really like jazz and I hate mushrooms.", {("user", "likes", "jazz"), ("user", "dislikes", "mushrooms")}),
    ("My mum lives in Leeds and my dad lives in York.", {("mom", "lives_in", "Leeds"), ("dad", "lives_in", "York")}),
    ("I live in New York with my wife.", {("user", "lives_in", "New York")}),
    ("I'm 34 years old.", {("user", "age", "34")}),
    ("My brother Tom works at Google.", {("brother", "name", "Tom"), ("brother", "works_at", "Google")}),
    ("I'm allergic to peanuts.", {("user", "allergic_to", "peanuts")}),
    ("我妹妹住在上海。", {("妹妹", "lives_in", "上海")}),
    ("我喜欢爬山。", {("user", "likes", "爬山")}),
    ("我叫小明，我在北京工作。", {("user", "name", "小明"), ("user", "works_at", "北京")}),
    ("我最喜欢的颜色是蓝色。", {("user", "favourite", "蓝色")}),
    ("我有一只猫叫咪咪。", {("user", "has", "猫"), ("猫", "name", "咪咪")}),
    ("我对花生过敏。", {("user", "allergic_to", "花生")}),
    ("我不喜欢下雨。", {("user", "dislikes", "下雨")}),
])
def test_facts_are_taken_from_what_the_user_tells(said: str, expected: set) -> None:
    assert triples(said) == expected


@pytest.mark.parametrize("said", [
    "Where does my sister live?", "Do you live in Lisbon?", "I don't like tea.", "If I lived in Rome I'd be happy.",
    "I used to live in Paris.", "I love you", "I like it", "你住在哪里？", "我不住在北京。", "我妹妹住在哪儿",
    "What's your favourite colour?", "Hello, who are you?",
])
def test_questions_denials_and_suppositions_are_not_facts(said: str) -> None:
    assert facts_in(said) == []


def test_a_new_value_replaces_the_old_but_likes_add_up() -> None:
    lisbon, porto = facts_in("I live in Lisbon.")[0], facts_in("I moved to Porto.")[0]
    assert lisbon.key == porto.key
    jazz, tea = facts_in("I like jazz.")[0], facts_in("I love tea.")[0]
    assert jazz.key != tea.key
    assert facts_in("My sister lives in Lisbon.")[0].key != lisbon.key  # hers, not the user's


def test_each_fact_is_told_to_her_in_the_language_it_was_said_in() -> None:
    assert [f.said for f in facts_in("My sister Lena lives in Lisbon.")] == [
        "The user's sister is called Lena.", "The user's sister lives in Lisbon."]
    assert [f.said for f in facts_in("我妹妹住在上海。")] == ["用户的妹妹住在上海。"]
    assert Fact("user", "favourite", "green", "colour").said == "The user's favourite colour is green."


@pytest.mark.parametrize(("said", "expected"), [
    ("I'm a software engineer.", {("user", "job", "software engineer")}),
    ("I'm an accountant at a law firm.", {("user", "job", "accountant")}),
    ("I'm a web developer now.", {("user", "job", "web developer")}),
    ("My husband is a project manager.", {("husband", "job", "project manager")}),
    ("I'm a physicist.", {("user", "job", "physicist")}),
    ("I'm a technician.", {("user", "job", "technician")}),
    ("I'm a big fan of football.", {("user", "likes", "football")}),
    ("我在一家医院当护士。", {("user", "job", "护士"), ("user", "works_at", "医院")}),
    ("我做设计工作。", {("user", "job", "设计")}),
    ("我是一个程序员。", {("user", "job", "程序员")}),
    ("我妈妈是医生。", {("妈妈", "job", "医生")}),
    ("我现在是一名律师了。", {("user", "job", "律师")}),
])
def test_jobs_are_taken_however_they_are_phrased(said: str, expected: set) -> None:
    assert triples(said) == expected


@pytest.mark.parametrize("said", [
    "I'm a bit tired.", "I'm a dog lover.", "I'm a very good cook.", "I'm a big fan.", "I'm a vegetarian.",
    "I'm a picky eater.", "I'm a native speaker.", "I'm a parent.", "I'm a bit of a worrier.", "我是中国人。",
    "我是你的朋友。",
])
def test_states_judgements_and_kinds_of_person_are_not_jobs(said: str) -> None:
    assert all(f.relation != "job" for f in facts_in(said))


def test_an_updated_value_is_said_as_replacing_the_old_one() -> None:
    porto = facts_in("I moved to Porto.")[0]
    assert porto.replacing("Lisbon").said == "The user now lives in Porto (no longer Lisbon)."
    assert facts_in("我搬到了杭州。")[0].replacing("成都").said == "用户现在住在杭州（以前是成都）。"
    assert porto.replacing("porto").said == "The user lives in Porto."  # the same place
    jazz = facts_in("I like jazz.")[0]
    assert jazz.replacing("tea") == jazz  # likes add up: nothing is replaced


def test_a_question_is_searched_by_its_words_and_chinese_by_trigrams_and_bigrams() -> None:
    q = query_of("Where does my sister live?")
    assert q.match == '"where" OR "sister" OR "live"' and q.contains == ()
    zh = query_of("我妹妹住在哪里？")
    assert '"妹妹住"' in zh.match and "妹妹" in zh.contains and "住在" in zh.contains
    assert query_of("Hey, how are you?").empty


def test_what_is_recalled_fits_the_budget_in_order() -> None:
    sentences = ["a" * 30, "b" * 30, "c" * 30]  # 11 tokens each
    assert within(sentences, 25) == sentences[:2]
    assert within(sentences, 5) == []
