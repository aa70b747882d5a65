"""Child process of the crash tests: appends turns until killed.

`crash_writer DB` closes and reopens the store now and then (closing checkpoints the WAL into the
database file, reopening replays it), so kills land in those too. `crash_writer DB N` writes N
turns in one session, then holds the store open: killing it leaves a WAL full of committed turns.

Prints `open` each time the store is open, then `<turn id>\\t<sha256 of its text>` after each
commit, so the parent knows exactly which turns were committed before its SIGKILL landed.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import time

from sidecar.store import RawKey, Store


def main() -> None:
    rng = random.Random(os.getpid())
    key = RawKey(bytes.fromhex(os.environ["STELLA_TEST_DB_KEY"]))
    hold_after = int(sys.argv[2]) if len(sys.argv) > 2 else None
    n = 0
    while True:
        with Store.open(sys.argv[1], key) as store:
            print("open", flush=True)
            for _ in range(hold_after or rng.randint(1, 25)):
                # From one line to ~6 pages, so checkpoints have real work to do when a kill lands.
                words = rng.randint(0, 2000 if n % 7 == 0 else 60)
                text = f"turn {n} of writer {os.getpid()}: " + "lorem ipsum " * words
                turn = store.append_turn(rng.choice(("user", "assistant")), text)
                if n % 5 == 4:
                    store.set_outfit(f"outfit-{n}")
                print(f"{turn.id}\t{hashlib.sha256(text.encode()).hexdigest()}", flush=True)
                n += 1
            while hold_after:
                time.sleep(1)


if __name__ == "__main__":
    main()
