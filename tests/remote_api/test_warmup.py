"""SlotKeeper (remote_api.warmup) over a fake llama-server: what a real turn does to a warm-up in hand."""

from __future__ import annotations

import asyncio

import pytest

from remote_api.upstream_types import Finished
from remote_api.warmup import SlotKeeper

PREFIX = [{"role": "system", "content": "You are Stella."}]
TURN = [*PREFIX, {"role": "user", "content": "Hi!"}]


class FakeUpstream:
    """Each request streams once `release` is set; what was asked and how it ended is kept."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.requests: list[tuple[str, int | None, str]] = []  # (warm|chat, slot, how it ended)

    async def stream(self, req):
        entry = ["warm" if req.warm else "chat", req.slot, "cancelled"]
        self.requests.append(entry)
        await self.release.wait()
        entry[2] = "done"
        yield Finished("length", 0, {"prompt_n": 1, "cache_n": 0})


class FakePool:
    def __init__(self, upstream: FakeUpstream, slots: int | None) -> None:
        self.upstream, self.slots = upstream, slots

    async def pick(self):
        return self.upstream

    def healthy(self, upstream) -> bool:
        return True

    def slot_count(self, upstream) -> int | None:
        return self.slots


async def _turn(keeper: SlotKeeper, up: FakeUpstream, sid: str, messages) -> int | None:
    async with keeper.chat(sid, messages) as (upstream, slot):
        up.requests.append(["chat", slot, "done"])
        return slot


def test_a_turn_cancels_another_sessions_warm_up_on_its_slot_and_goes_first():
    async def scenario():
        up = FakeUpstream()
        keeper = SlotKeeper(FakePool(up, 1))
        keeper.warm("a", PREFIX)
        await asyncio.sleep(0.01)
        slot = await asyncio.wait_for(_turn(keeper, up, "b", TURN), 5)  # never released: it must not wait
        return slot, up.requests, await keeper.warmed("a")

    slot, requests, warmed = asyncio.run(scenario())
    assert slot == 0 and requests == [["warm", 0, "cancelled"], ["chat", 0, "done"]]
    assert warmed is None


def test_a_turn_waits_for_its_own_warm_up_of_its_prefix_then_uses_the_same_slot():
    async def scenario():
        up = FakeUpstream()
        keeper = SlotKeeper(FakePool(up, 2))
        keeper.warm("a", PREFIX)
        await asyncio.sleep(0.01)
        turn = asyncio.create_task(_turn(keeper, up, "a", TURN))
        await asyncio.sleep(0.05)
        waiting = not turn.done()
        up.release.set()
        return waiting, await asyncio.wait_for(turn, 5), up.requests

    waiting, slot, requests = asyncio.run(scenario())
    assert waiting and slot == 0 and requests == [["warm", 0, "done"], ["chat", 0, "done"]]


@pytest.mark.parametrize("words, waits", [("Where do", True), ("Where did", False), ("", True)])
def test_a_turn_waits_for_a_warm_up_of_its_user_s_first_words_but_not_of_other_words(words, waits):
    """While the user speaks, the turn's start is warmed (sidecar.reply): the turn needs that work."""
    async def scenario():
        up = FakeUpstream()
        keeper = SlotKeeper(FakePool(up, 2))
        keeper.warm("a", [*PREFIX, {"role": "user", "content": words}])
        await asyncio.sleep(0.01)
        asked = [*PREFIX, {"role": "user", "content": "Where do penguins live?"}]
        turn = asyncio.create_task(_turn(keeper, up, "a", asked))
        await asyncio.sleep(0.05)
        waiting = not turn.done()
        up.release.set()
        await asyncio.wait_for(turn, 5)
        return waiting, up.requests[0][2]

    waiting, warm_ended = asyncio.run(scenario())
    assert (waiting, warm_ended) == ((True, "done") if waits else (False, "cancelled"))


def test_a_warm_up_of_an_older_prefix_is_cancelled_by_the_turn():
    async def scenario():
        up = FakeUpstream()
        keeper = SlotKeeper(FakePool(up, 2))
        keeper.warm("a", [{"role": "system", "content": "You were someone else."}])
        await asyncio.sleep(0.01)
        return await asyncio.wait_for(_turn(keeper, up, "a", TURN), 5), up.requests

    slot, requests = asyncio.run(scenario())
    assert slot == 0 and requests == [["warm", 0, "cancelled"], ["chat", 0, "done"]]


def test_without_a_slot_count_nothing_is_warmed_and_turns_go_unpinned():
    async def scenario():
        up = FakeUpstream()
        keeper = SlotKeeper(FakePool(up, None))
        keeper.warm("a", PREFIX)
        warmed = await keeper.warmed("a")
        return warmed, await _turn(keeper, up, "a", TURN), up.requests

    warmed, slot, requests = asyncio.run(scenario())
    assert warmed is None and slot is None and requests == [["chat", None, "done"]]


def test_warm_ups_sent_while_one_runs_collapse_into_the_newest():
    async def scenario():
        up = FakeUpstream()
        keeper = SlotKeeper(FakePool(up, 2))
        for n in range(50):  # a client sending many: one runs, then only the newest
            keeper.warm("a", [*PREFIX, {"role": "user", "content": f"{n}"}, {"role": "assistant", "content": "ok"}])
            await asyncio.sleep(0)
        up.release.set()
        await keeper.warmed("a")
        return up.requests

    assert asyncio.run(scenario()) == [["warm", 0, "done"], ["warm", 0, "done"]]
