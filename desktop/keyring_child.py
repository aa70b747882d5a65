"""The store's key from the OS keyring, asked by a forked child, so the window's process never loads the
keyring's client.

The shell opens the store once, at launch, for the window's size and place. Asking the Secret Service loads
secretstorage, jeepney and cryptography (its session is encrypted) into the process for good, and the shell
never needs them again: the child asks, sends back the key (or the error's words) through a pipe and exits.
Linux only, and only while the shell has no threads yet (it forks before the window, as the GL probe does);
elsewhere the key is asked in the process itself (macOS's keychain must not be used after a fork).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from sidecar.store import errors
from sidecar.store.keys import KeyringKey, RawKey

ERRORS = {cls.__name__: cls for cls in (errors.StoreError, errors.KeyringUnavailableError, errors.WrongKeyError)}


@dataclass(frozen=True)
class KeyringKeyInChild(KeyringKey):
    """KeyringKey, whose `load` runs in a forked child on Linux; the same key, messages and errors."""

    def load(self, path: Path, *, create: bool) -> RawKey:
        if not sys.platform.startswith("linux"):
            return super().load(path, create=create)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: answer, and leave without running the parent's exit handlers
            os.close(read)
            try:
                answer = b"K" + super().load(path, create=create).key.hex().encode()
            except errors.StoreError as exc:
                answer = f"E{type(exc).__name__}\n{exc}".encode()
            except BaseException as exc:  # noqa: BLE001 - whatever it was, the parent is told in words
                answer = f"EKeyringUnavailableError\nthe OS keyring could not be asked: {exc}".encode()
            with os.fdopen(write, "wb") as out:
                out.write(answer)
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as answer_pipe:
            answer = answer_pipe.read()
        os.waitpid(pid, 0)
        if answer.startswith(b"K"):
            return RawKey(bytes.fromhex(answer[1:].decode()))
        name, _, message = answer[1:].decode(errors="replace").partition("\n")
        raise ERRORS.get(name, errors.StoreError)(message or "the OS keyring's child process gave no answer")
