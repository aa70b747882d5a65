"""She remembers you, on the real default model (tests/voice/test_companion.py's llama-server and gateway) and
the real encrypted store: told something on Monday, she knows it after a restart on Tuesday, from what she
remembers rather than the transcript; once it is forgotten she no longer knows it and no page of the store's
files holds it."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from sidecar.config import ChatConfig, PersonaConfig
from sidecar.conversation import Conversation
from sidecar.engine.stored import StoreHistory, StoreMemory
from sidecar.store import RawKey, Store
from tests.store.pages import decrypted

from .test_companion import CATALOGUE, companion, converse  # noqa: F401 (the fixture)

pytestmark = pytest.mark.llama


def session(store: Store, *, history_tokens: int = 600) -> Conversation:
    """The app's conversation after a start: the history and the memory in the store."""
    chat = ChatConfig(temperature=0.0, history_tokens=history_tokens)
    conversation = Conversation(PersonaConfig(), chat, outfits=CATALOGUE)
    conversation.remember_in(StoreHistory(store), StoreMemory(store))
    return conversation


@pytest.fixture
def key() -> RawKey:
    return RawKey(secrets.token_bytes(32))


def test_she_remembers_where_your_sister_lives_after_a_restart_until_you_forget_it(companion, tmp_path: Path,  # noqa: F811
                                                                                    key: RawKey):
    path = tmp_path / "stella.db"
    with Store.open(path, key) as store:  # Monday
        converse(companion, ["My sister Lena lives in Lisbon.", "Tell me a short joke."], session(store))
    # Tuesday: the transcript is left out of the prompt, so only what she remembers can answer
    with Store.open(path, key) as store:
        conversation = session(store, history_tokens=0)
        persona, example, greeting, known = conversation.prefix()  # no exchange of the transcript
        assert known["role"] == "system" and "Lisbon" in known["content"]
        (answer,), _ = converse(companion, ["Where does my sister live?"], conversation)
        assert "Lisbon" in answer, answer
        lisbon = next(f for f in store.facts() if f.value == "Lisbon")
        assert store.forget_facts([lisbon.id]) == 1  # the Memory panel's Forget
    with Store.open(path, key) as store:  # Wednesday, with the whole transcript this time
        conversation = session(store)
        (answer,), _ = converse(companion, ["Where does my sister live?"], conversation)
        assert "Lisbon" not in answer, answer
        assert "Lisbon" not in str(conversation.messages("Where does my sister live?"))
        assert all("Lisbon" not in f.said for f in store.facts())
    # the store's pages, decrypted: the forgotten fact, its exchange and her answer about it are gone
    pages = decrypted(path, key)
    assert b"Lisbon" not in pages and "Lisbon".encode("utf-16-le") not in pages
    assert b"short joke" in pages  # what was not forgotten is still there to find


def test_forget_that_said_to_her_forgets_the_last_exchange(companion, tmp_path: Path, key: RawKey):  # noqa: F811
    path = tmp_path / "stella.db"
    with Store.open(path, key) as store:
        replies, _ = converse(companion, ["我最喜欢的颜色是蓝色。", "忘掉这个", "My dog is called Biscuit.",
                                          "Forget that."], session(store))
        assert replies[1] == "好的，我已经忘掉了。" and replies[3] == "Okay, I've forgotten that."
        assert store.facts() == []
        said = " ".join(t.text for t in store.history())
        assert "蓝色" not in said and "Biscuit" not in said
    pages = decrypted(path, key)
    assert "蓝色".encode() not in pages and b"Biscuit" not in pages
