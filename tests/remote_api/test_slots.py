"""The slot rules of remote_api.slots: pins, warm-ups that never hold up a real turn, fallbacks."""

from __future__ import annotations

from remote_api.slots import Lease, SlotMap


def test_sessions_are_pinned_to_the_least_shared_slot_and_keep_it():
    slots = SlotMap(2)
    assert [slots.pinned(s) for s in ("a", "b", "c")] == [0, 1, 0]
    assert slots.chat("b").slot == 1 and slots.pinned("b") == 1
    slots.forget("a")
    assert slots.pinned("d") == 0, "a forgotten session's slot goes to the next one"


def test_a_real_turn_preempts_a_warm_up_on_its_slot():
    slots = SlotMap(2)
    warm = slots.warm("a")
    assert warm is not None and warm.slot == 0 and warm.preempt is None
    chat = slots.chat("a")
    assert (chat.slot, chat.preempt) == (0, "a")
    slots.release(warm)  # the cancelled warm-up ends after the turn took its slot
    assert slots.warm("a") is None, "the turn still holds the slot"
    slots.release(chat)
    assert slots.warm("a") is not None


def test_a_real_turn_preempts_another_sessions_warm_up_when_they_share_a_slot():
    slots = SlotMap(1)
    assert slots.warm("a") is not None
    assert slots.chat("b") == Lease("b", "chat", 0, "a")


def test_a_busy_slot_sends_the_turn_unpinned_instead_of_making_it_wait():
    slots = SlotMap(1)
    first = slots.chat("a")
    second = slots.chat("a")  # e.g. a typed turn while a spoken one is still streaming
    assert (first.slot, second.slot) == (0, None)
    slots.release(second)
    assert slots.warm("a") is None, "releasing the unpinned turn leaves the pinned one holding the slot"
    slots.release(first)
    assert slots.warm("a") is not None


def test_warm_ups_never_take_a_slot_from_a_turn_or_another_session():
    slots = SlotMap(1)
    chat = slots.chat("a")
    assert slots.warm("a") is None
    slots.release(chat)
    warm_b = slots.warm("b")
    assert warm_b is not None and slots.warm("a") is None
    newer = slots.warm("b")
    assert newer is not None and newer.preempt == "b", "a newer warm-up replaces the session's older one"
    slots.release(warm_b)  # the replaced one ending frees nothing
    assert slots.warm("a") is None


def test_without_a_known_slot_count_turns_go_unpinned_and_nothing_is_warmed():
    slots = SlotMap(None)
    assert slots.chat("a").slot is None and slots.warm("a") is None
    slots.resize(2)
    assert slots.chat("a").slot == 0


def test_a_server_restarted_with_fewer_slots_drops_the_pins_beyond_them():
    slots = SlotMap(2)
    assert [slots.pinned(s) for s in ("a", "b")] == [0, 1]
    busy = slots.chat("b")
    slots.resize(1)
    assert slots.pinned("b") == 0 and slots.chat("a").slot == 0
    slots.release(busy)  # a lease on a slot that is gone releases nothing
    assert slots.chat("b").slot is None, "slot 0 is still held by a's turn"
