"""The warm prompt against a real llama-server (gemma3 270M, -np 2): a session's prefix warmed
through the link is served from the slot's cache on its next turn, judged by llama-server's
own `timings.cache_n` / `prompt_n`, never by a clock."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from remote_api.client import Done, LinkClient

from .harness import FAST, GatewayThread, collect

pytestmark = pytest.mark.llama

PERSONA = ("You are Vega, a patient astronomy guide who loves comets, telescopes and quiet nights. "
           "You answer in one or two short sentences.")


def prefix(tag: str) -> list[dict[str, str]]:
    """Persona + one exchange, unique to `tag` so no earlier test left it in a slot's cache."""
    return [{"role": "system", "content": f"{PERSONA} Tonight's sky: {tag}."}, *PREFIX]


PREFIX = [{"role": "user", "content": "Hello, who are you?"},
          {"role": "assistant", "content": "Hi, I'm Vega. I can tell you about the night sky."},
          {"role": "user", "content": "What is a comet made of?"},
          {"role": "assistant", "content": "Mostly ice and dust, like a dirty snowball."}]
QUESTION = {"role": "user", "content": "Why do they have tails?"}


def _prompt_tokens(server) -> float:
    """Prompt tokens llama-server has taken in so far (evaluated plus served from cache), from /metrics."""
    text = httpx.get(server.url + "/metrics", headers=server.headers, timeout=10).text
    found = dict(re.findall(r"^llamacpp:(prompt_tokens_total|prompt_tokens_cached_total|requests_processing) "
                            r"([0-9.e+]+)$", text, re.M))
    return float(found["prompt_tokens_total"]) + float(found.get("prompt_tokens_cached_total", 0)), \
        float(found["requests_processing"])


async def _warmed(client: LinkClient, server, messages) -> None:
    """Send a warm-up and wait until llama-server has taken its prompt in and is idle again."""
    before, _ = await asyncio.to_thread(_prompt_tokens, server)
    client.warm(messages)
    for _ in range(600):
        seen, busy = await asyncio.to_thread(_prompt_tokens, server)
        if seen > before and not busy:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("llama-server never received the warm-up")


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_a_warmed_prefix_is_served_from_cache_on_the_first_turn(llama_server, api):
    with GatewayThread([llama_server.url], api, upstream_key=llama_server.api_key) as gw:
        async def scenario():
            async with LinkClient(gw.url, FAST, anonymous=True) as client:
                await _warmed(client, llama_server, prefix(f"warm {api}"))
                return await collect(client.chat([*prefix(f"warm {api}"), QUESTION], max_tokens=8, temperature=0),
                                     timeout=120)

        reply = asyncio.run(scenario())
    assert isinstance(reply.end, Done), reply.end
    timings = reply.end.timings
    # The prefix is ~90 tokens; only the question (and the template's turn markers) is new.
    assert timings["cache_n"] >= 60 and timings["prompt_n"] <= 24, timings


def test_without_a_warm_up_the_first_turn_is_evaluated_cold(llama_server):
    """The control for the test above: a prefix no slot has seen is evaluated in full."""
    fresh = prefix("cold")
    with GatewayThread([llama_server.url], "chat", upstream_key=llama_server.api_key) as gw:
        async def scenario():
            async with LinkClient(gw.url, FAST, anonymous=True) as client:
                return await collect(client.chat([*fresh, QUESTION], max_tokens=8, temperature=0), timeout=120)

        reply = asyncio.run(scenario())
    assert isinstance(reply.end, Done) and reply.end.timings["prompt_n"] >= 60, reply.end.timings


def test_the_second_turn_after_a_warmed_reply_evaluates_only_the_new_words(llama_server):
    with GatewayThread([llama_server.url], "completion", upstream_key=llama_server.api_key) as gw:
        async def scenario():
            async with LinkClient(gw.url, FAST, anonymous=True) as client:
                first = await collect(client.chat([*prefix("second"), QUESTION], max_tokens=12, temperature=0),
                                      timeout=120)
                said = {"role": "assistant", "content": first.text.strip() or "Sunlight."}
                history = [*prefix("second"), QUESTION, said]
                await _warmed(client, llama_server, history)  # what the app does once the reply is heard
                again = {"role": "user", "content": "And how long are they?"}
                return await collect(client.chat([*history, again], max_tokens=8, temperature=0), timeout=120)

        reply = asyncio.run(scenario())
    assert isinstance(reply.end, Done), reply.end
    assert reply.end.timings["cache_n"] >= 80 and reply.end.timings["prompt_n"] <= 24, reply.end.timings


def test_a_turn_whose_first_words_were_warmed_evaluates_only_its_last_words(llama_server):
    """While the user speaks the app warms the turn with the words so far; at the pause the turn
    shares the slot's cache up to them (llama-server's prefix match on a partial user message)."""
    history = prefix("first words")
    asked = {"role": "user", "content": "Why do comets have such long and bright tails when they fly near the Sun?"}
    so_far = {"role": "user", "content": "Why do comets have such long and bright tails when they"}
    with GatewayThread([llama_server.url], "completion", upstream_key=llama_server.api_key) as gw:
        async def scenario():
            async with LinkClient(gw.url, FAST, anonymous=True) as client:
                await _warmed(client, llama_server, history)
                whole = await collect(client.chat([*history, asked], max_tokens=4, temperature=0), timeout=120)
                await _warmed(client, llama_server, history)  # back to the prefix alone
                await _warmed(client, llama_server, [*history, so_far])
                early = await collect(client.chat([*history, asked], max_tokens=4, temperature=0), timeout=120)
                return whole.end, early.end

        whole, early = asyncio.run(scenario())
    assert isinstance(whole, Done) and isinstance(early, Done), (whole, early)
    # the words so far are ~11 tokens: all of them come from the cache
    assert early.timings["prompt_n"] <= whole.timings["prompt_n"] - 8, (whole.timings, early.timings)
    assert early.timings["cache_n"] >= whole.timings["cache_n"] + 8, (whole.timings, early.timings)
