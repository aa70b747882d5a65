"""What the engine keeps in the encrypted store: the conversation, the facts about the user, the settings, the
pairing, the outfit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from remote_api.credentials import Credentials
from sidecar.channel_messages import History, Memory, Remembered, Turn
from sidecar.conversation import Exchange
from sidecar.facts import facts_in
from sidecar.recall import query_of, within
from sidecar.store import DeviceCredentials, Store

HISTORY_SHOWN = 50


class StoreHistory:
    """The conversation's history in the encrypted store (sidecar.conversation.History); the facts about the
    user in each exchange are kept beside it, with the turn they came from (sidecar.facts)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def recent(self, limit: int) -> list[Exchange]:
        exchanges: list[Exchange] = []
        user: str | None = None
        for turn in self.store.history(limit * 2):
            if turn.role == "user":
                user = turn.text
            elif turn.role == "assistant" and user is not None:
                exchanges.append(Exchange(user, turn.as_heard, turn.interrupted))
                user = None
        return exchanges[-limit:] if limit > 0 else []

    def append(self, exchange: Exchange) -> None:
        turn = self.store.append_turn("user", exchange.user)
        for fact in facts_in(exchange.user):
            self.store.keep_fact(fact, turn.id)
        # an interrupted reply is kept as far as it was heard, and marked so
        self.store.append_turn("assistant", exchange.assistant,
                               heard_text=exchange.assistant if exchange.interrupted else None)


class StoreMemory:
    """What she remembers of the user, from the encrypted store (sidecar.conversation.Memory)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def known(self, budget_tokens: int) -> list[str]:
        newest = [f.said for f in reversed(self.store.facts(limit=budget_tokens // 8 + 1))]
        return within(newest, budget_tokens)[::-1]

    def recall(self, text: str, budget_tokens: int, known: list[str]) -> list[str]:
        query = query_of(text)
        if query.empty:
            return []
        found = self.store.search_facts(query.match, query.contains, limit=8)
        return within((f.said for f in found if f.said not in known), budget_tokens)

    def forget_last(self) -> int:
        return self.store.forget_last_exchange()


@dataclass(frozen=True)
class Saved:
    """What the store remembers for the engine, read once when it opens."""

    settings: dict[str, Any]
    pairing: Credentials | None
    outfit: str | None
    enrolment: Any = None  # the user's voice taught for the wake word (`wake_verifier.Verifier.to_stored`)

    @classmethod
    def read(cls, store: Store) -> Saved:
        settings = store.get_setting("settings", {})
        creds = store.credentials()
        pairing = None if creds is None else Credentials(creds.gateway_url, creds.device_id, creds.refresh_credential)
        return cls(settings if isinstance(settings, dict) else {}, pairing, store.outfit(),
                   store.get_setting("wake_enrolment"))


class EngineStore:
    """The encrypted store as the engine's parts use it, once it is open.

    Until then, and for good when the user goes on without it (or it cannot be opened), there is
    nothing to keep: every write is dropped and the history is empty.
    """

    def __init__(self) -> None:
        self._store: Store | None = None

    @property
    def is_open(self) -> bool:
        return self._store is not None

    def opened(self, store: Store) -> Saved:
        """The store is open: what it remembers."""
        self._store = store
        return Saved.read(store)

    def save_settings(self, values: dict[str, Any]) -> None:
        if self._store is not None:
            self._store.set_setting("settings", values)

    def save_enrolment(self, stored: dict[str, Any] | None) -> None:
        if self._store is not None:
            self._store.set_setting("wake_enrolment", stored)

    def save_pairing(self, creds: Credentials) -> None:
        if self._store is not None:
            self._store.set_credentials(DeviceCredentials(creds.gateway_url, creds.device_id,
                                                          creds.refresh_credential))

    def save_outfit(self, outfit: str) -> None:
        if self._store is not None:
            self._store.set_outfit(outfit)  # one small commit; the UI already shows the outfit

    def history_event(self) -> History:
        """The last turns, as the transcript shows them (what the user heard of an interrupted reply)."""
        turns = [] if self._store is None else self._store.history(HISTORY_SHOWN)
        return History(tuple(Turn(t.role, t.as_heard, t.interrupted) for t in turns))

    def memory_event(self) -> Memory:
        """What she remembers, each fact with the user's words it came from and when."""
        facts = [] if self._store is None else self._store.facts()
        return Memory(tuple(Remembered(f.id, f.said, f.source or "", f.created_at_ms) for f in facts))

    def forget(self, fact_id: int | None) -> int:
        """Forget one fact (all when None) and the exchanges that mention it; how many facts."""
        if self._store is None:
            return 0
        return self._store.forget_facts(None if fact_id is None else [fact_id])

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
