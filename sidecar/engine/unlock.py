"""Opening the encrypted store: with the key in the OS keyring, else with a passphrase typed in the window.

Without a usable keyring (or when the keyring holds no key that opens the file) the engine does
not fall back to anything: it tells the window, which asks the user to set a passphrase (first
run) or type it (later runs), to try the keyring again, or to go on without saving. A wrong
passphrase leaves the file untouched (sidecar/store/db.py) and is simply asked for again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal

from sidecar.channel_messages import AppEvent, Error, StoreLocked, StoreState, Unlock, bad_command
from sidecar.store import KeyringKey, KeyringUnavailableError, PassphraseKey, Store, StoreError, WrongKeyError
from sidecar.store.db import has_content

log = logging.getLogger(__name__)

MIN_PASSPHRASE = 8
KEYRING_HELP = ("On Linux the keyring is a Secret Service such as gnome-keyring or KeePassXC, running and unlocked "
                "in your desktop session.")
WHY = {
    ("no_keyring", "create"): (
        "Stella keeps your conversations, settings and pairing encrypted on this computer. Its key normally lives in "
        "your system's keyring, but no keyring was found. You can protect them with a passphrase instead: you type "
        "it each time Stella starts, and without it they cannot be read. Or install or unlock gnome-keyring and try "
        "the keyring again."),
    ("no_keyring", "unlock"): (
        "Your saved conversations are encrypted, and no keyring was found to unlock them. If you protected them with "
        "a passphrase, type it. If your keyring protects them, start or unlock it and try the keyring again."),
    ("no_key", "unlock"): (
        "Your saved conversations are encrypted, and the keyring holds no key that opens them. If you protected "
        "them with a passphrase, type it."),
}


class StoreUnlock:
    """Finds the key for the store, asking the window when the keyring cannot give it.

    `asking` is set while a prompt waits for the user; `event()` is where things stand, for a
    page that connects at any time.
    """

    def __init__(self, path: Path, service: str, send: Callable[[AppEvent], None]) -> None:
        self.path = path
        self.service = service
        self.send = send
        self.status: Literal["opening", "locked", "open", "off"] = "opening"
        self.key = ""  # how the open store was unlocked: "keyring" or "passphrase"
        self.asking = asyncio.Event()
        self._prompt: StoreLocked | None = None
        self._answer: asyncio.Future[Store | None] | None = None
        self._trying = asyncio.Lock()

    async def open(self) -> Store | None:
        """The open store, or None if the user chose to go on without it. Other StoreErrors propagate."""
        try:
            store = await asyncio.to_thread(Store.open, self.path, KeyringKey(service=self.service))
        except (KeyringUnavailableError, WrongKeyError) as exc:
            return await self._ask(exc)
        except StoreError:
            self.status = "off"
            raise
        self.status, self.key = "open", "keyring"
        return store

    async def _ask(self, exc: StoreError) -> Store | None:
        exists = await asyncio.to_thread(has_content, self.path)
        mode = "unlock" if exists else "create"
        reason = "no_keyring" if isinstance(exc, KeyringUnavailableError) else "no_key"
        log.warning("the store needs a passphrase (%s): %s", mode, exc)
        self._prompt = StoreLocked(mode=mode, message=WHY[(reason, mode)], keyring_help=KEYRING_HELP, detail=str(exc))
        self.status = "locked"
        self._answer = asyncio.get_running_loop().create_future()
        self.asking.set()
        self.send(self._prompt)
        try:
            return await self._answer
        finally:
            self.asking.clear()
            self.send(self.event())

    async def answer(self, command: Unlock) -> Error | None:
        """The window's `unlock` command, `how` being "passphrase" (with "passphrase"), "keyring" or "skip"."""
        how = command.how
        async with self._trying:  # one attempt at a time (a double click, two pages)
            if self._answer is None or self._answer.done() or self._prompt is None:
                return bad_command("the store is not waiting to be unlocked")
            if how == "skip":
                self.status = "off"
                self._answer.set_result(None)
                return None
            if how == "keyring" or command.passphrase is None:  # Unlock holds a passphrase when `how` says so
                key: KeyringKey | PassphraseKey = KeyringKey(service=self.service)
            else:
                if self._prompt.mode == "create" and len(command.passphrase) < MIN_PASSPHRASE:
                    return self._again(f"Choose a passphrase of at least {MIN_PASSPHRASE} characters.")
                try:
                    key = PassphraseKey(command.passphrase)
                except ValueError as exc:
                    return self._again(f"That passphrase cannot be used: {exc}.")
            try:
                store = await asyncio.to_thread(Store.open, self.path, key)
            except WrongKeyError:
                return self._again("That passphrase does not open your saved conversations (passphrases are "
                                   "case-sensitive). Nothing was changed; try again." if how == "passphrase" else
                                   "The keyring holds no key that opens your saved conversations.")
            except StoreError as exc:
                return self._again(f"{'The keyring is still not available' if how == 'keyring' else 'Not opened'}: "
                                   f"{exc}")
            self.status, self.key = "open", "keyring" if how == "keyring" else "passphrase"
            self._answer.set_result(store)
        return None

    def _again(self, error: str) -> None:
        """Still locked: the prompt again, saying what went wrong."""
        assert self._prompt is not None
        self._prompt = replace(self._prompt, error=error)
        self.send(self._prompt)

    def event(self) -> StoreState | StoreLocked:
        if self.status == "locked" and self._prompt is not None:
            return self._prompt
        return StoreState(status="opening" if self.status == "locked" else self.status, key=self.key)
