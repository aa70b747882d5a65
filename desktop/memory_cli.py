"""`stella memory`: what Stella remembers about you, where each fact came from, and forgetting it.

The facts live only in the encrypted store (docs/memory.md); this opens it with the key in the OS keyring,
or with the passphrase you protected it with (asked for on the terminal). Forgetting works while the app
runs: she no longer knows the fact from her next turn on.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from datetime import datetime
from pathlib import Path

from sidecar.store import (
    KeyringKey,
    KeyringUnavailableError,
    PassphraseKey,
    Store,
    StoreConfig,
    StoreError,
    WrongKeyError,
)
from sidecar.store.db import has_content


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("memory", help="what she remembers of you: list, forget",
                              description="The facts Stella remembers about you, kept only in her encrypted store, "
                                          "with the words each came from; forget one, or all.")
    p.add_argument("--store", type=Path, default=None, help="the encrypted database (default: in your user data "
                                                             "folder)")
    sub = p.add_subparsers(dest="memory_cmd", required=True)
    sub.add_parser("list", help="each fact with its id, when you said it and your words")
    f = sub.add_parser("forget", help="forget one fact (by the id `list` shows) or --all, with the exchanges that "
                                      "mention it")
    f.add_argument("id", nargs="?", type=int, metavar="ID", help="the fact's id, from `stella memory list`")
    f.add_argument("--all", action="store_true", help="forget every fact")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.memory_cmd == "forget" and (args.id is None) == (not args.all):
        print("stella memory forget: give one fact's ID (see `stella memory list`) or --all, not both",
              file=sys.stderr)
        return 2
    path = args.store or StoreConfig().path
    if not has_content(path):
        print(f"Stella remembers nothing yet: there is no store at {path}.")
        return 0
    try:
        store = _open(path)
    except StoreError as exc:
        print(f"stella memory: {exc}", file=sys.stderr)
        return 1
    with store:
        if args.memory_cmd == "list":
            return _list(store)
        if args.all:
            print(f"Forgot {_count(store.forget_facts(None))}, and the exchanges that mentioned them.")
            return 0
        if store.forget_facts([args.id]) == 0:
            print(f"stella memory: there is no fact {args.id}; `stella memory list` shows their ids", file=sys.stderr)
            return 1
        print(f"Forgot fact {args.id}, and the exchanges that mentioned it.")
        return 0


def _open(path: Path) -> Store:
    """The store, with the keyring's key, else the passphrase typed on the terminal."""
    try:
        return Store.open(path, KeyringKey(service=StoreConfig().keyring_service))
    except (KeyringUnavailableError, WrongKeyError) as exc:
        if not sys.stdin.isatty():
            raise StoreError(f"{exc}; run this in a terminal to type the store's passphrase") from exc
        return Store.open(path, PassphraseKey(getpass.getpass("The passphrase that protects Stella's store: ")))


def _list(store: Store) -> int:
    facts = store.facts()
    if not facts:
        print("Stella remembers no facts about you.")
        return 0
    width = max(len(f.said) for f in facts)
    for f in facts:
        when = datetime.fromtimestamp(f.created_at_ms / 1000).strftime("%Y-%m-%d %H:%M")
        source = f"“{f.source}”" if f.source is not None else "(the words were forgotten)"
        print(f"{f.id:>4}  {f.said:<{width}}  {when}  {source}")
    print(f"{_count(len(facts))}. Forget one with `stella memory forget ID`, all with `stella memory forget --all`.")
    return 0


def _count(n: int) -> str:
    return f"{n} fact{'s' if n != 1 else ''}"
