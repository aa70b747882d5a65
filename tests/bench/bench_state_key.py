"""State-key benchmark: what sealing the replicas' Redis state costs per write.

Run: ``.venv/bin/python tests/bench/bench_state_key.py [--writes N]``. Starts a throw-away
redis-server and prints the figures: AES-256-GCM seal + open of one token envelope as the
replicas store it, and the median / p99 of one `save_session` write (one token envelope and its
progress, the write every relayed token costs a replica) through a real Redis on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from remote_api.envelope import Type  # noqa: E402
from remote_api.protocol import Outbound  # noqa: E402
from remote_api.state import SessionDelta  # noqa: E402
from remote_api.state_key import StateKeys, new_key_line  # noqa: E402
from remote_api.state_redis import RedisState  # noqa: E402
from tests import services  # noqa: E402

BODY = {"rid": "0123456789abcdef0123456789abcdef", "i": 17, "text": " hello"}


def seal_open_us(keys: StateKeys, runs: int) -> float:
    value = json.dumps({"t": "token", "b": BODY, "ts": 1.0}).encode()
    began = time.perf_counter()
    for i in range(runs):
        keys.open(keys.seal(value, f"stella:s:{{sid}}:env#{i}"), f"stella:s:{{sid}}:env#{i}")
    return (time.perf_counter() - began) / runs * 1e6


async def writes_ms(url: str, keys: StateKeys, writes: int) -> list[float]:
    state = RedisState(url, keys)
    await state.create_session("sid", "replica", "device")
    times = []
    try:
        for seq in range(1, writes + 1):
            delta = SessionDelta(seq, 0, seq - 1, [Outbound(seq, Type.TOKEN, BODY, 1.0)],
                                 progress={BODY["rid"]: (seq, "ab" * 32)})
            began = time.perf_counter()
            assert await state.save_session("sid", "replica", delta)
            times.append((time.perf_counter() - began) * 1000)
    finally:
        await state.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=2000)
    args = parser.parse_args()
    keys = StateKeys.parse(new_key_line("bench"), "the bench")
    seal = seal_open_us(keys, 20000)
    with services.Redis() as redis:
        times = asyncio.run(writes_ms(redis.url, keys, args.writes))
    p99 = statistics.quantiles(times, n=100)[98]
    print(f"seal + open of one token envelope: {seal:.1f} µs")
    print(f"save_session (1 envelope + progress, sealed), {args.writes} writes: median "
          f"{statistics.median(times):.3f} ms, p99 {p99:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
