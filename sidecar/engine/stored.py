"""What the engine keeps in the encrypted store: the conversation, the settings, the pairing, the outfit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from remote_api.credentials import Credentials
from sidecar.channel import Event
from sidecar.conversation import Exchange
from sidecar.store import DeviceCredentials, Store

HISTORY_SHOWN = 50


class StoreHistory:
    """The conversation's history in the encrypted store (sidecar.conversation.History)."""

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
        self.store.append_turn("user", exchange.user)
        # an interrupted reply is kept as far as it was heard, and marked so
        self.store.append_turn("assistant", exchange.assistant,
                               heard_text=exchange.assistant if exchange.interrupted else None)


@dataclass(frozen=True)
class Saved:
    """What the store remembers for the engine, read once when it opens."""

    settings: dict[str, Any]
    pairing: Credentials | None
    outfit: str | None

    @classmethod
    def read(cls, store: Store) -> Saved:
        settings = store.get_setting("settings", {})
        creds = store.credentials()
        pairing = None if creds is None else Credentials(creds.gateway_url, creds.device_id, creds.refresh_credential)
        return cls(settings if isinstance(settings, dict) else {}, pairing, store.outfit())


def save_pairing(store: Store, creds: Credentials) -> None:
    store.set_credentials(DeviceCredentials(creds.gateway_url, creds.device_id, creds.refresh_credential))


def history_event(store: Store | None) -> Event:
    """The last turns, as the transcript shows them (what the user heard of an interrupted reply)."""
    turns = [] if store is None else store.history(HISTORY_SHOWN)
    return {"type": "history", "turns": [{"role": t.role, "text": t.as_heard, "interrupted": t.interrupted}
                                         for t in turns]}
