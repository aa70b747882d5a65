"""The llama-server client (remote_api.upstream, upstream_events, upstream_pool): every fault we
map, and the real llama-server (the SSE parser: test_sse.py).

Fault tests run against the scenarios of tests/fakes/llama_server.py (a hand-rolled HTTP server
that breaks the protocol on demand); `@pytest.mark.llama` tests need the session `llama_server` fixture.
Async code runs under `asyncio.run` (no pytest-asyncio).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from remote_api.shared.processes import free_port
from remote_api.upstream import Upstream
from remote_api.upstream_pool import UpstreamPool
from remote_api.upstream_types import ChatRequest, Finished, TokenDelta, UpstreamError
from tests.fakes.llama_server import TOKENS, FakeLlamaServer
from tests.helpers import tokens_predicted

HELLO = ChatRequest(messages=[{"role": "user", "content": "Say hello."}], max_tokens=16)
APIS = ["chat", "completion"]


@pytest.fixture
def faults(fake_llama: FakeLlamaServer) -> FakeLlamaServer:
    """The fake llama-server, its misbehaviour picked per request by the URL (`scenario_url`)."""
    return fake_llama


@contextlib.asynccontextmanager
async def upstream(url: str, api: str = "chat", stall_timeout: float = 30.0,
                   api_key: str = "") -> AsyncIterator[Upstream]:
    up = Upstream(url, api, stall_timeout=stall_timeout, api_key=api_key)  # type: ignore[arg-type]
    try:
        yield up
    finally:
        await up.aclose()


async def collect(url: str, api: str, req: ChatRequest = HELLO, **kw) -> list[TokenDelta | Finished]:
    async with upstream(url, api, **kw) as up:
        return [item async for item in up.stream(req)]


async def failure(url: str, api: str, req: ChatRequest = HELLO, **kw) -> tuple[UpstreamError, list]:
    """The UpstreamError a stream ends with, and what it relayed before."""
    got: list[TokenDelta | Finished] = []
    async with upstream(url, api, **kw) as up:
        with pytest.raises(UpstreamError) as info:
            async for item in up.stream(req):
                got.append(item)
    return info.value, got


def texts(items: list) -> list[str]:
    return [i.text for i in items if isinstance(i, TokenDelta)]


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


# ---------------------------------------------------------------- requests and valid streams


def test_chat_request_is_validated():
    for bad in ([], [{"role": "user"}], [{"role": "user", "content": 3}]):
        with pytest.raises(ValueError):
            ChatRequest(messages=bad)
    with pytest.raises(ValueError):
        ChatRequest(messages=HELLO.messages, max_tokens=0)
    with pytest.raises(ValueError):
        Upstream("127.0.0.1:8080")


@pytest.mark.parametrize("api", APIS)
def test_streams_tokens_and_finish(faults, api):
    req = ChatRequest(messages=HELLO.messages, max_tokens=5, temperature=0.2, seed=7, stop=["\n\n"],
                      repeat_penalty=1.1, dry_multiplier=0.8)
    items = asyncio.run(collect(faults.scenario_url("ok"), api, req))
    assert texts(items) == TOKENS
    assert (items[-1].reason, items[-1].tokens, items[-1].timings["predicted_n"]) == ("length", 5, 5)
    if api == "completion":
        body = faults.last("/ok/completion").body
        assert faults.last("/ok/apply-template").body == {"messages": HELLO.messages}
        assert body["prompt"] == "<start_of_turn>user\nSay hello.<end_of_turn>\n<start_of_turn>model\n"
        assert body["n_predict"] == 5 and body["cache_prompt"] is True
    else:
        body = faults.last("/ok/v1/chat/completions").body
        assert body["messages"] == HELLO.messages and body["max_tokens"] == 5
    assert body["stream"] is True and body["stop"] == ["\n\n"] and body["seed"] == 7
    assert body["temperature"] == 0.2
    assert (body["repeat_penalty"], body["dry_multiplier"]) == (1.1, 0.8), "the loop preventers reach llama-server"


@pytest.mark.parametrize("api", APIS)
def test_keepalive_comments_other_fields_and_crlf_are_tolerated(faults, api):
    items = asyncio.run(collect(faults.scenario_url("pings"), api))
    assert texts(items) == TOKENS and isinstance(items[-1], Finished)


@pytest.mark.parametrize("api", APIS)
def test_a_missing_done_after_the_final_event_is_tolerated(faults, api):
    items = asyncio.run(collect(faults.scenario_url("no_done"), api))
    assert texts(items) == TOKENS[:2]
    assert (items[-1].reason, items[-1].tokens, items[-1].timings["predicted_n"]) == ("length", 2, 2)


def test_tokens_are_relayed_as_they_arrive_and_closing_hangs_up(faults):
    """No buffering: tokens 20 ms apart arrive 20 ms apart; aclose() closes the connection."""

    async def scenario() -> tuple[list[float], float]:
        arrivals = []
        async with upstream(faults.scenario_url("slow"), "completion") as up:
            stream = up.stream(HELLO)
            async for item in stream:
                assert isinstance(item, TokenDelta)
                arrivals.append(time.monotonic())
                if len(arrivals) == 5:
                    break
            closed_at = time.monotonic()
            await stream.aclose()
        return arrivals, closed_at

    arrivals, closed_at = asyncio.run(scenario())
    assert arrivals[-1] - arrivals[0] > 0.05  # 4 gaps of 20 ms, not one burst at the end
    assert _hung_up_within(faults, "/slow/completion", closed_at, 0.5)


def test_cancelling_the_consuming_task_hangs_up(faults):
    async def scenario() -> float:
        first = asyncio.Event()

        async def consume() -> None:
            async with upstream(faults.scenario_url("slow"), "chat") as up:
                async for _ in up.stream(HELLO):
                    first.set()

        task = asyncio.create_task(consume())
        await first.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return time.monotonic()

    cancelled_at = asyncio.run(scenario())
    assert _hung_up_within(faults, "/slow/v1/chat/completions", cancelled_at, 0.5)


def _hung_up_within(faults, suffix: str, since: float, limit: float) -> bool:
    rec = faults.last(suffix)
    deadline = since + limit
    while rec.hung_up_at is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return rec.hung_up_at is not None and rec.hung_up_at - since < limit


# ---------------------------------------------------------------- faults


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("scenario", "code", "relayed", "words"),
    [
        ("stall", "stalled", 2, "sent nothing for 0.3 s after 2 token"),
        ("stall_headers", "stalled", 0, "before it answered"),
        ("break", "broken_stream", 2, "broke after 2 token"),
        ("hang_up", "broken_stream", 0, "before it answered"),
        ("eof", "broken_stream", 2, "without its final event"),
        ("cut", "broken_stream", 2, "in the middle of an event"),
        ("midstream_error", "broken_stream", 2, "Context size has been exceeded."),
        ("context", "context_exceeded", 0, "3012 tokens for a context of 1024"),
        ("loading", "loading", 0, "still loading its model"),
        ("wrong_type", "bad_response", 0, "Content-Type 'application/json; charset=utf-8'"),
        ("text_plain", "bad_response", 0, "instead of text/event-stream"),
        ("garbage", "bad_response", 2, "not server-sent events (first: 'HTTP/1.1 200 OK')"),
        ("not_json", "bad_response", 2, "not a JSON object"),
        ("long_line", "bad_response", 2, "longer than"),
        ("http500", "bad_response", 0, "HTTP 500: Compute error."),
    ],
)
def test_faults_map_to_clear_errors(faults, api, scenario, code, relayed, words):
    started = time.monotonic()
    err, got = asyncio.run(failure(faults.scenario_url(scenario), api, stall_timeout=0.3))
    assert err.code == code, err
    assert words in err.message
    assert "llama-server" in err.message and err.message.rstrip().endswith(".")
    assert texts(got) == TOKENS[:relayed]  # what arrived before the fault was relayed, nothing else
    assert not any(isinstance(i, Finished) for i in got)
    assert time.monotonic() - started < 2.0
    if code in ("context_exceeded", "loading"):
        assert err.status == {"context_exceeded": 400, "loading": 503}[code]


@pytest.mark.parametrize("api", APIS)
def test_connection_refused_is_unreachable(api):
    err, _ = asyncio.run(failure(dead_url(), api))
    assert err.code == "unreachable" and "Check that it is running" in err.message


def test_completion_needs_apply_template(faults):
    err, _ = asyncio.run(failure(faults.scenario_url("template_404"), "completion"))
    assert err.code == "bad_response" and "HTTP 404" in err.message


def test_completion_refuses_a_template_that_drops_the_conversation(faults):
    err, _ = asyncio.run(failure(faults.scenario_url("template_name_as_jinja"), "completion"))
    assert err.code == "bad_response" and "--no-jinja" in err.message
    assert not any(r.path.endswith("/template_name_as_jinja/completion") for r in faults.requests)


# ---------------------------------------------------------------- health and pool


@pytest.mark.parametrize(
    ("scenario", "ok", "loading", "idle"),
    [("ok", True, False, 2), ("busy", True, False, 0), ("noslots", True, False, None),
     ("loading", False, True, None), ("impostor", False, False, None)],
)
def test_health(faults, scenario, ok, loading, idle):
    async def check():
        async with upstream(faults.scenario_url(scenario)) as up:
            return await up.health()

    health = asyncio.run(check())
    assert (health.ok, health.loading, health.idle_slots) == (ok, loading, idle), health


def test_health_of_a_dead_server():
    async def check():
        async with upstream(dead_url()) as up:
            return await up.health()

    health = asyncio.run(check())
    assert not health.ok and health.detail.startswith("unreachable")


def test_pool_prefers_idle_healthy_and_least_recently_failed(faults):
    async def scenario():
        dead, loading, busy, idle_a, idle_b = (
            Upstream(u) for u in (dead_url(), faults.scenario_url("loading"), faults.scenario_url("busy"),
                                  faults.scenario_url("ok"), faults.scenario_url("noslots")))
        pool = UpstreamPool([dead, loading, busy, idle_a, idle_b], check_interval=60)
        try:
            assert await pool.pick() is idle_a  # 2 idle slots
            assert await pool.pick() is idle_a  # 1 left
            assert await pool.pick() is idle_b  # unknown beats none idle
            pool.report_failure(idle_a)
            pool.report_failure(idle_b)
            assert await pool.pick() is busy  # the only one still healthy, though full
            pool.report_failure(busy)
            # All out of rotation: pick re-checks at once, finds them healthy again and prefers
            # the idle one that failed longest ago.
            assert await pool.pick() is idle_a
        finally:
            await pool.aclose()

    asyncio.run(scenario())


def test_pool_with_nothing_healthy_says_why(faults):
    async def scenario():
        pool = UpstreamPool([Upstream(dead_url()), Upstream(faults.scenario_url("loading"))], check_interval=60)
        try:
            with pytest.raises(UpstreamError) as info:
                await pool.pick()
            return info.value
        finally:
            await pool.aclose()

    err = asyncio.run(scenario())
    assert err.code == "no_healthy_upstream"
    assert "unreachable" in err.message and "loading its model" in err.message


def test_pool_sweeps_in_the_background(faults):
    """A reported failure is forgotten by the next sweep, without a pick having to wait."""

    async def scenario():
        a, b = Upstream(faults.scenario_url("ok")), Upstream(faults.scenario_url("ok"))
        pool = UpstreamPool([a, b], check_interval=0.05)
        try:
            assert await pool.pick() is a
            pool.report_failure(a)
            assert await pool.pick() is b
            await asyncio.sleep(0.2)
            health = pool._status[a].health
            assert health is not None and health.ok
        finally:
            await pool.aclose()

    asyncio.run(scenario())


# ---------------------------------------------------------------- the real llama-server

COUNT = ChatRequest(
    messages=[{"role": "user", "content": "Count from 1 to 200, separated by commas."}],
    max_tokens=400, temperature=0.0, seed=1,
)


@pytest.mark.llama
@pytest.mark.parametrize("api", APIS)
def test_real_server_streams_token_by_token(llama_server, api):
    async def scenario():
        async with upstream(llama_server.url, api, api_key=llama_server.api_key) as up:
            started = time.monotonic()
            items, first = [], None
            async for item in up.stream(ChatRequest(messages=HELLO.messages, max_tokens=24, seed=3)):
                if first is None:
                    first = time.monotonic() - started
                items.append(item)
            return items, first

    items, first = asyncio.run(scenario())
    deltas = [i for i in items if isinstance(i, TokenDelta)]
    print(f"{api}: first token after {first * 1000:.0f} ms, {len(deltas)} deltas")
    assert len(deltas) > 1 and "".join(texts(items)).strip()
    assert isinstance(items[-1], Finished) and items[-1].tokens > 0
    assert items[-1].reason in ("stop", "length") and "predicted_ms" in items[-1].timings


@pytest.mark.llama
@pytest.mark.parametrize("api", APIS)
def test_real_server_frees_the_slot_when_the_stream_is_closed(llama_server, api):
    """Closing the generator hangs up, and llama-server stops that reply instead of finishing it.

    Judged by what the server did, not by a clock (the machine is shared): the slot goes idle and
    the tokens it generated for the reply (its /metrics counter) are a handful past the four we
    read, far from the 400 asked for. The server notices the hang-up at its next token.
    """

    async def scenario() -> tuple[int, int, bool]:
        async with upstream(llama_server.url, api, api_key=llama_server.api_key) as up, httpx.AsyncClient() as probe:

            async def processing() -> int:
                slots = await probe.get(llama_server.url + "/slots", headers=llama_server.headers)
                return sum(s["is_processing"] for s in slots.json())

            async def predicted() -> int:
                metrics = (await probe.get(llama_server.url + "/metrics", headers=llama_server.headers)).text
                return tokens_predicted(metrics)

            before = await predicted()
            stream = up.stream(COUNT)
            read = 0
            async for item in stream:
                assert isinstance(item, TokenDelta), "the reply ended before we could cancel it"
                read += 1
                if read == 4:
                    break
            busy = await processing()
            await stream.aclose()
            deadline = time.monotonic() + 60  # only a guard against a hang, never the measure
            while (still := await processing()) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            return busy, await predicted() - before, not still

    busy, generated, freed = asyncio.run(scenario())
    print(f"{api}: slot freed after {generated} generated tokens (4 read, 400 asked)")
    assert busy == 1, "the slot was not generating before the close"
    assert freed, "the slot kept generating after the hang-up"
    assert generated < 100, f"llama-server generated {generated} tokens of a reply nobody was reading"


@pytest.mark.llama
@pytest.mark.parametrize("api", APIS)
def test_real_server_context_exceeded(llama_server, api):
    long = ChatRequest(messages=[{"role": "user", "content": "hello " * 3000}])
    err, got = asyncio.run(failure(llama_server.url, api, long, api_key=llama_server.api_key))
    assert err.code == "context_exceeded" and err.status == 400 and not got
    print(err.message)


@pytest.mark.llama
def test_real_server_health_and_pool(llama_server):
    async def scenario():
        real = Upstream(llama_server.url, api_key=llama_server.api_key)
        health = await real.health()
        pool = UpstreamPool([Upstream(dead_url()), real])
        dead_pool = UpstreamPool([Upstream(dead_url()), Upstream(dead_url())])
        try:
            picked = await pool.pick()
            with pytest.raises(UpstreamError) as info:
                await dead_pool.pick()
        finally:
            await pool.aclose()
            await dead_pool.aclose()
        return health, picked is real, info.value

    health, picked_real, err = asyncio.run(scenario())
    assert health.ok and not health.loading and health.idle_slots == 2, health
    assert picked_real
    assert err.code == "no_healthy_upstream"
