"""Link benchmark: what the gateway adds on top of llama-server, and how fast a cut heals.

Run: ``.venv/bin/python tests/bench/bench_link.py [--upstream URL] [--runs N]``. Without
--upstream it starts its own llama-server (the test fixture's helper: gemma3 270M, -np 2).
Prints the figures and writes them as a markdown section to ``tests/bench/results/link.md``.

- relay latency: for every token, the time from the gateway reading it off llama-server's SSE
  stream to the client library handing it to the app (same process, same clock), over the
  WebSocket and over long-poll;
- first token: request to first token, through the gateway vs reading llama-server directly
  (the same `Upstream` parser), p50/p99 and their ratio;
- reconnect and resume: a TCP proxy between client and gateway cuts the connection in the
  middle of a reply; time from the cut until the session is resumed, and until the next token
  reaches the app (nothing lost or repeated is checked on every run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from remote_api.client import Done, LinkClient, LinkStatus  # noqa: E402
from remote_api.link_config import LinkConfig  # noqa: E402
from remote_api.upstream import Upstream  # noqa: E402
from remote_api.upstream_types import ChatRequest, Finished, TokenDelta  # noqa: E402
from tests import services  # noqa: E402
from tests.remote_api.harness import GatewayThread, collect  # noqa: E402
from tests.remote_api.proxy import TcpProxy  # noqa: E402

OUT = Path(__file__).parent / "results" / "link.md"
PROMPT = [{"role": "user", "content": "Write a long story about a dragon who learns to sing."}]
CONFIG = LinkConfig()  # the shipped defaults


@dataclass
class Probe:
    """Times at which the gateway read each token of each reply off the upstream stream."""

    replies: list[list[float]] = field(default_factory=list)


class ProbedUpstream(Upstream):
    """The real upstream client, noting when each token was read (in the gateway's process)."""

    def __init__(self, url: str, api: str, probe: Probe, api_key: str) -> None:
        super().__init__(url, api, api_key=api_key)  # type: ignore[arg-type]
        self.probe = probe

    async def stream(self, req: ChatRequest) -> AsyncIterator[TokenDelta | Finished]:
        times: list[float] = []
        self.probe.replies.append(times)
        async for item in super().stream(req):
            if isinstance(item, TokenDelta):
                times.append(time.monotonic())
            yield item


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


async def direct_reply(upstream: Upstream, seed: int, tokens: int) -> float:
    """First-token time reading llama-server directly with the gateway's own parser."""
    sent = time.monotonic()
    first = None
    async for item in upstream.stream(ChatRequest(PROMPT, max_tokens=tokens, temperature=0, seed=seed)):
        if isinstance(item, TokenDelta) and first is None:
            first = time.monotonic() - sent
    assert first is not None, "llama-server sent no token"
    return first


async def gateway_reply(client: LinkClient, seed: int, tokens: int, probe: Probe) -> tuple[list[float], float]:
    """(relay latency of every token, first-token time) of one reply through the gateway."""
    arrivals: list[float] = []
    sent = time.monotonic()
    reply = await collect(client.chat(PROMPT, max_tokens=tokens, temperature=0, seed=seed),
                          lambda t: arrivals.append(time.monotonic()), timeout=300)
    assert isinstance(reply.end, Done), reply.end
    relay = [a - r for a, r in zip(arrivals, probe.replies[-1], strict=True)]
    return relay, arrivals[0] - sent


async def interleaved_runs(url: str, key: str, api: str, gw_url: str, runs: int, tokens: int,
                           probe: Probe) -> dict[str, list[float]]:
    """Direct, WebSocket and long-poll replies in turn, so load swings hit all three alike."""
    out: dict[str, list[float]] = {k: [] for k in ("direct_first", "ws_first", "lp_first", "ws_relay", "lp_relay")}
    upstream = Upstream(url, api, api_key=key)  # type: ignore[arg-type]
    async with (LinkClient(gw_url, CONFIG, transport="websocket", anonymous=True) as ws,
                LinkClient(gw_url, CONFIG, transport="longpoll", anonymous=True) as lp):
        await direct_reply(upstream, 0, tokens)  # warm-up: prompt cache, first-request costs
        await gateway_reply(ws, 0, tokens, probe)
        for i in range(runs):
            out["direct_first"].append(await direct_reply(upstream, i, tokens))
            for name, client in (("ws", ws), ("lp", lp)):
                relay, first = await gateway_reply(client, i, tokens, probe)
                out[f"{name}_relay"] += relay
                out[f"{name}_first"].append(first)
    await upstream.aclose()
    return out


async def cut_runs(gw: GatewayThread, runs: int, tokens: int) -> tuple[list, list]:
    """(cut -> session resumed, cut -> next token) over WebSocket through a cutting proxy."""
    resumed, next_token = [], []
    proxy = await TcpProxy(gw.port).start()
    connected_at: list[float] = []

    def on_status(s: LinkStatus) -> None:
        if s.connected:
            connected_at.append(time.monotonic())

    client = LinkClient(proxy.url, CONFIG, on_status=on_status, anonymous=True)
    await client.connect(10)
    try:
        for i in range(runs):
            reference = await collect(client.chat(PROMPT, max_tokens=tokens, temperature=0, seed=i), timeout=300)
            cut_at: list[float] = []
            after: list[float] = []

            def on_token(t, cut_at=cut_at, after=after) -> None:
                if t.index == 4 and not cut_at:
                    proxy.cut()
                    cut_at.append(time.monotonic())
                elif cut_at and not after:
                    after.append(time.monotonic())

            reply = await collect(client.chat(PROMPT, max_tokens=tokens, temperature=0, seed=i), on_token,
                                  timeout=300)
            assert reply.text == reference.text, "a cut changed the reply"
            resumed.append(min(t for t in connected_at if t > cut_at[0]) - cut_at[0])
            if after:
                next_token.append(after[0] - cut_at[0])
    finally:
        await client.close()
        await proxy.stop()
    return resumed, next_token


async def bench(url: str, key: str, api: str, runs: int, tokens: int) -> dict[str, list[float]]:
    probe = Probe()
    results: dict[str, list[float]] = {}
    with GatewayThread([url], api, CONFIG, upstream_factory=lambda u: ProbedUpstream(u, api, probe, key)) as gw:
        results.update(await interleaved_runs(url, key, api, gw.url, runs, tokens, probe))
        results["resumed"], results["next_token"] = await cut_runs(gw, max(3, runs // 2), tokens)
    return results


def report(results: dict[str, list[float]], upstream: str, api: str, runs: int, tokens: int) -> str:
    load = os.getloadavg()[0]
    d50, d99 = pct(results["direct_first"], 50), pct(results["direct_first"], 99)
    rows = [
        ("first token, llama-server read directly", results["direct_first"]),
        ("first token, through gateway (WebSocket)", results["ws_first"]),
        ("first token, through gateway (long-poll)", results["lp_first"]),
        ("relay per token, WebSocket", results["ws_relay"]),
        ("relay per token, long-poll", results["lp_relay"]),
        ("cut → session resumed (WebSocket)", results["resumed"]),
        ("cut → next token delivered", results["next_token"]),
    ]
    lines = [
        "### Link (tests/bench/bench_link.py)",
        "",
        f"Machine: 2-core VM, no GPU; upstream {upstream} ({api} API, gemma3 270M unless --upstream said "
        f"otherwise); {runs} replies of up to {tokens} tokens each read directly, over the WebSocket and over "
        f"long-poll, interleaved, at temperature 0; link defaults "
        f"(reconnect_min {CONFIG.reconnect_min:g} s ± {CONFIG.reconnect_jitter:.0%} jitter). Load average "
        f"during the run {load:.1f}.",
        "",
        "| measure | samples | p50 | p99 |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [f"| {name} | {len(s)} | {ms(pct(s, 50))} | {ms(pct(s, 99))} |" for name, s in rows]
    ws50, ws99 = pct(results["ws_first"], 50), pct(results["ws_first"], 99)
    lp50, lp99 = pct(results["lp_first"], 50), pct(results["lp_first"], 99)
    lines += [
        "",
        f"Gateway vs direct, first token: ×{ws50 / d50:.2f} at p50 and ×{ws99 / d99:.2f} at p99 over the "
        f"WebSocket (×{lp50 / d50:.2f} / ×{lp99 / d99:.2f} over long-poll). Relay per token is the time from "
        "the gateway reading a token off llama-server's SSE stream to the client library handing it to the "
        f"app: p50 {ms(pct(results['ws_relay'], 50))} over the WebSocket vs "
        f"{ms(pct(results['lp_relay'], 50))} over long-poll (one HTTP round trip per poll). Every cut run "
        "produced exactly the reply of the uncut run.",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", help="a running llama-server (default: start one; its --api-key in "
                        "STELLA_GATEWAY__UPSTREAM_KEY)")
    parser.add_argument("--api", choices=["chat", "completion"], default="chat")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=24)
    args = parser.parse_args()
    server = None
    url, key = args.upstream, os.environ.get("STELLA_GATEWAY__UPSTREAM_KEY", "")
    if url is None:
        server = services.llama_server(Path(tempfile.mkdtemp(prefix="bench-link-")))
        server.start()
        url, key = server.url, server.api_key
    try:
        results = asyncio.run(bench(url, key, args.api, args.runs, args.tokens))
    finally:
        if server is not None:
            server.stop()
    text = report(results, args.upstream or "started by the bench", args.api, args.runs, args.tokens)
    print(text)
    OUT.write_text(text)
    print(f"written to {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
