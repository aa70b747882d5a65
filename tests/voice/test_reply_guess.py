"""The reply asked for at a pause, against the real gateway and llama-server: a guess the user
talked on over is cancelled, and the turn's own request then finds the session's slot free and
warm — judged by llama-server's own prompt counts, never by a clock."""

from __future__ import annotations

import asyncio
import functools
import inspect

import pytest

from remote_api.client import LinkClient
from sidecar.clock import Clock
from sidecar.config import AppConfig, ChatConfig, PersonaConfig
from sidecar.conversation import Conversation
from sidecar.frames import (
    EndFrame,
    LikelyTurnFrame,
    ReplyDoneFrame,
    RequestSentFrame,
    SpeechResumedFrame,
    TokenFrame,
    UserTurnFrame,
)
from sidecar.pipeline import Pipeline
from sidecar.reply import Reply

from .harness import Collect, Feed

pytestmark = pytest.mark.llama

QUESTION = "What is the capital of France?"


def guess_generating(reply: Reply) -> bool:
    """The reply asked for at the pause is streaming: llama-server has read its prompt (in a
    loaded CI run that took longer than 0.3 s, and the guess was cancelled before it started)."""
    return reply._guess is not None and reply._guess.turn.answered


def converse(url: str, script: list) -> list:
    """Run `script` into a Reply on the real gateway; a step that takes the Reply is a condition
    on it to wait for."""
    async def go() -> list:
        async with LinkClient(url, AppConfig().link) as link:
            sink = Collect()
            chat = ChatConfig(temperature=0.0)
            reply = Reply(link, Conversation(PersonaConfig(), chat), chat)
            steps = [functools.partial(step, reply) if inspect.isfunction(step) else step for step in script]
            await asyncio.wait_for(Pipeline([Feed(steps), reply, sink], Clock()).run(), 120)
            return sink.frames

    return asyncio.run(go())


def test_a_guess_talked_over_is_dropped_and_the_turn_is_answered_from_a_warm_slot(gateway):
    out = converse(gateway.url, [
        1.0,  # the session's prefix is warmed at start
        LikelyTurnFrame(text="What is the"), guess_generating, 0.1,  # asked at the pause; generating
        SpeechResumedFrame(t=1.3),  # the user went on, and the turn comes at once
        UserTurnFrame(turn=1, text=QUESTION, source="voice"), 20.0, EndFrame()])
    (sent,) = [f for f in out if isinstance(f, RequestSentFrame)]
    assert sent.turn == 1
    (done,) = [f for f in out if isinstance(f, ReplyDoneFrame)]
    assert done.reason == "stop" and done.text.strip(), "the turn got its whole reply"
    assert [f for f in out if isinstance(f, TokenFrame)], "streamed"
    assert done.prompt_tokens is not None and done.cached_tokens is not None
    assert done.cached_tokens > 3 * done.prompt_tokens, (
        f"the slot was warm: {done.prompt_tokens} tokens evaluated, {done.cached_tokens} from the cache")

