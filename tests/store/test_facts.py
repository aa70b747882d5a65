"""Facts about the user in the real encrypted store: kept across restarts, updated, found, and forgotten
without a trace in any page of the file or its WAL."""

from __future__ import annotations

import pytest

from sidecar.config import ChatConfig, PersonaConfig
from sidecar.conversation import KNOWN, RECALLED, Conversation, Exchange
from sidecar.engine.stored import StoreHistory, StoreMemory
from sidecar.recall import query_of
from sidecar.store import Store

from .pages import decrypted

TOLD = [("My sister Lena lives in Lisbon.", "Lisbon is lovely, and Lena sounds great!"),
        ("I work as a nurse.", "That must be demanding."),
        ("我有一只猫叫咪咪。", "咪咪真可爱！"),
        ("What's the weather like?", "I can't see outside, but I hope it's sunny.")]


def tell(store: Store) -> None:
    history = StoreHistory(store)
    for user, reply in TOLD:
        history.append(Exchange(user, reply))


def traces(db_path, raw_key, *words: str) -> list[str]:
    """Which of `words` any page of the store's files holds, in UTF-8 or UTF-16."""
    pages = decrypted(db_path, raw_key)
    return [w for w in words if w.encode() in pages or w.encode("utf-16-le") in pages]


def test_facts_told_survive_a_restart_with_their_source(db_path, raw_key):
    with Store.open(db_path, raw_key) as store:
        tell(store)
    with Store.open(db_path, raw_key) as store:
        kept = store.facts()
        memory = StoreMemory(store)
        assert [f.said for f in kept] == ["The user's sister is called Lena.", "The user's sister lives in Lisbon.",
                                          "The user works as a nurse.", "用户有猫。", "用户的猫叫咪咪。"]
        assert kept[1].source == "My sister Lena lives in Lisbon." and kept[1].created_at_ms > 0
        assert memory.known(1000) == [f.said for f in kept]
        assert memory.known(12) == ["用户的猫叫咪咪。"]  # the newest that fit


def test_a_new_value_replaces_the_old_one(db_path, raw_key):
    with Store.open(db_path, raw_key) as store:
        history = StoreHistory(store)
        history.append(Exchange("I live in Lisbon.", "Nice!"))
        history.append(Exchange("I moved to Porto last month.", "Exciting!"))
        assert [f.said for f in store.facts()] == ["The user now lives in Porto (no longer Lisbon)."]


@pytest.mark.parametrize(("asked", "expected"), [
    ("Where does my sister live?", "The user's sister lives in Lisbon."),
    ("What do I do for work?", "The user works as a nurse."),
    ("我的猫叫什么名字？", "用户的猫叫咪咪。"),
])
def test_a_question_finds_the_fact_it_is_about(db_path, raw_key, asked, expected):
    with Store.open(db_path, raw_key) as store:
        tell(store)
        q = query_of(asked)
        assert store.search_facts(q.match, q.contains)[0].said == expected
        assert expected in StoreMemory(store).recall(asked, 80, known=[])
        assert StoreMemory(store).recall(asked, 80, known=[expected]) != [expected]  # not told twice


def test_forgetting_a_fact_leaves_no_trace(db_path, raw_key):
    with Store.open(db_path, raw_key) as store:
        tell(store)
    assert traces(db_path, raw_key, "Lisbon") == ["Lisbon"]  # the scan sees what is there
    with Store.open(db_path, raw_key) as store:
        lisbon = next(f for f in store.facts() if f.value == "Lisbon")
        assert store.forget_facts([lisbon.id]) == 1
        assert "Lisbon" not in " ".join(f.said for f in store.facts())
        assert all("Lisbon" not in t.text and "Lena" not in t.text for t in store.history())  # the exchange went
        assert store.search_facts('"Lisbon"') == []
        assert "I work as a nurse." in [t.text for t in store.history()]  # the rest stays
        assert traces(db_path, raw_key, "Lisbon") == []  # while open: the file, the WAL, the free pages
    assert traces(db_path, raw_key, "Lisbon") == []
    with Store.open(db_path, raw_key) as store:
        assert store.forget_facts(None) == 4
        assert store.facts() == [] and [t.text for t in store.history()] == [
            "What's the weather like?", "I can't see outside, but I hope it's sunny."]
    assert traces(db_path, raw_key, "nurse", "咪咪", "Lena") == []


def test_forget_that_forgets_the_last_exchange_and_its_facts(db_path, raw_key):
    with Store.open(db_path, raw_key) as store:
        tell(store)
        history = StoreHistory(store)
        history.append(Exchange("My favourite colour is green.", "Green like leaves!"))
        assert StoreMemory(store).forget_last() == 1
        assert "green" not in " ".join(f.said for f in store.facts())
        assert history.recent(10)[-1] == Exchange(*TOLD[-1])
        assert StoreMemory(store).forget_last() == 0  # no facts in it, but the exchange goes
        assert history.recent(10)[-1] == Exchange(*TOLD[-2])
    assert traces(db_path, raw_key, "green", "Green like") == []


def test_what_she_knows_follows_the_history_so_the_cached_prefix_stays_put(db_path, raw_key):
    with Store.open(db_path, raw_key) as store:
        conversation = Conversation(PersonaConfig(), ChatConfig(memory_tokens=20, recall_tokens=80))
        conversation.remember_in(StoreHistory(store), StoreMemory(store))
        for user, reply in TOLD:
            before = conversation.prefix()
            conversation.record(user, reply)
            after = conversation.prefix()
            # a new fact changes only what follows the history: the cached prefix before it stays as it was
            assert without_known(after)[:len(without_known(before))] == without_known(before)
        *_, known = conversation.prefix()
        assert known == {"role": "system", "content": f"{KNOWN} 用户有猫。 用户的猫叫咪咪。"}
        messages = conversation.messages("Where does my sister live?")
        assert messages[-2] == {"role": "system", "content": f"{RECALLED} The user's sister lives in Lisbon. "
                                                             "The user's sister is called Lena."}
        assert messages[:-2] == conversation.prefix()
        off = Conversation(PersonaConfig(), ChatConfig(memory_tokens=0, recall_tokens=0))
        off.remember_in(StoreHistory(store), StoreMemory(store))
        assert "Lisbon" not in str(off.messages("Where does my sister live?")[-2:])


def without_known(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    return messages[:-1] if messages[-1]["content"].startswith(KNOWN) else messages
