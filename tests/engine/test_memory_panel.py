"""The Memory panel's commands against the engine in this process: what she remembers with its source,
forgetting one fact and all, on the real store (key in the real keyring)."""

from __future__ import annotations

import asyncio

import pytest

from sidecar.conversation import Exchange
from sidecar.engine.stored import StoreHistory
from sidecar.store import KeyringKey, Store
from tests.engine.conftest import Home, running

pytestmark = pytest.mark.keyring


def told(home: Home) -> None:
    """Monday's conversation, kept in the store the engine opens."""
    home.store.parent.mkdir(parents=True, exist_ok=True)
    with Store.open(home.store, KeyringKey()) as store:
        history = StoreHistory(store)
        history.append(Exchange("My sister Lena lives in Lisbon.", "Lisbon! How lovely."))
        history.append(Exchange("I work as a nurse.", "That must be demanding."))


def test_the_panel_lists_each_fact_with_its_source_and_forgets_one_then_all(home: Home) -> None:
    told(home)

    async def scenario() -> None:
        async with running(home) as engine, engine.window() as page, engine.window() as other:
            await page.send({"cmd": "memory", "action": "list"})
            facts = (await page.next("memory"))["facts"]
            assert [f["said"] for f in facts] == ["The user's sister is called Lena.",
                                                  "The user's sister lives in Lisbon.", "The user works as a nurse."]
            assert facts[1]["source"] == "My sister Lena lives in Lisbon." and facts[1]["when_ms"] > 0
            assert "Lisbon" in str(engine.app.conversation.prefix())  # she knows it

            await page.send({"cmd": "memory", "action": "forget", "id": facts[1]["id"]})
            for window in (page, other):  # every page hears what is left, and the history without the exchange
                left = (await window.next("memory"))["facts"]
                assert [f["said"] for f in left] == ["The user's sister is called Lena.", "The user works as a nurse."]
                assert left[0]["source"] == ""  # its words went with the forgotten exchange
                turns = (await window.next("history"))["turns"]
                assert [t["text"] for t in turns] == ["I work as a nurse.", "That must be demanding."]
            assert "Lisbon" not in str(engine.app.conversation.messages("Where does my sister live?"))

            await page.send({"cmd": "memory", "action": "forget", "id": facts[1]["id"]})
            assert "no fact" in (await page.next("error"))["message"]
            await page.send({"cmd": "memory", "action": "forget"})
            assert "needs its id" in (await page.next("error"))["message"]

            await page.send({"cmd": "memory", "action": "forget_all"})
            assert (await page.next("memory"))["facts"] == []
            assert "nurse" not in str(engine.app.conversation.messages("What is my job?"))
        async with running(home) as engine, engine.window() as page:  # and after a restart
            await page.send({"cmd": "memory", "action": "list"})
            assert (await page.next("memory"))["facts"] == []
            assert page.greeted("history")["turns"] == []

    asyncio.run(scenario())
