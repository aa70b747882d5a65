"""What she says, on the real default model: the embedded default's llama-server (the catalogue's
DEFAULT_LLM with its own chat template) behind the real gateway, the app's typed path (turn taker with
local intents, reply, outfit tags), the app's persona line and samplers, temperature 0 so a run is
repeatable. The behaviour a user notices: she keeps her name and the user's, does not loop or open
every reply alike, keeps replies short enough to speak, and outfit requests change her outfit."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from remote_api.client import LinkClient
from remote_api.config import LlamaSection
from remote_api.llama_server import LlamaServer, default_binary
from remote_api.shared.models.catalogue import DEFAULT_LLM, find
from remote_api.shared.models.provision import Models
from remote_api.shared.processes import free_port, running
from sidecar.clock import Clock
from sidecar.config import AppConfig, ChatConfig, PersonaConfig
from sidecar.conversation import Conversation
from sidecar.frames import EndFrame, Frame, OutfitFrame, ReplyDoneFrame, UserTextFrame
from sidecar.intents import Intents
from sidecar.outfit_catalogue import load_catalogue
from sidecar.outfit_tags import OutfitTags
from sidecar.pipeline import Pipeline
from sidecar.reply import Reply
from sidecar.voice.turn_taking import TurnTaker

from .conftest import ROOT
from .harness import Collect, Feed

pytestmark = pytest.mark.llama
CATALOGUE = load_catalogue()


@pytest.fixture(scope="module")
def companion(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The embedded default's model in llama-server, and `stella-server serve` in front of it: its URL."""
    logs = tmp_path_factory.mktemp("companion")
    server = LlamaServer(default_binary(), Models().path(DEFAULT_LLM), parallel=1, ctx=LlamaSection.ctx,
                         threads=2, chat_template=find(DEFAULT_LLM).chat_template, log_path=logs / "llama-server.log")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with server, (logs / "gateway.log").open("wb") as log, running(
            [sys.executable, "-m", "remote_api.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--upstream", server.url, "--log-level", "WARNING"], url, timeout=30, grace=10, cwd=ROOT, stdout=log,
            stderr=subprocess.STDOUT, env={**os.environ, **server.env}):
        yield url


def _turns_ended(sink: Collect) -> int:
    """Turns that have ended: a reply done, or an outfit request the app handled itself."""
    return sum(isinstance(f, ReplyDoneFrame) or (isinstance(f, OutfitFrame) and f.source == "user")
               for f in sink.frames)


def converse(url: str, said: list[str], conversation: Conversation | None = None) -> tuple[list[str], list[Frame]]:
    """Type `said` into the app's typed path, each turn once the one before has ended; her replies and
    every frame. `conversation`: one of the test's (its history and memory), else a fresh one."""
    async def go() -> list[Frame]:
        chat = ChatConfig(temperature=0.0)
        talk = conversation or Conversation(PersonaConfig(), chat, outfits=CATALOGUE)
        sink = Collect()
        script: list = []
        for n, text in enumerate(said, 1):
            script += [UserTextFrame(text=text), lambda n=n: _turns_ended(sink) >= n]
        async with LinkClient(url, AppConfig().link) as link:
            reply = Reply(link, talk, talk.chat)
            taker = TurnTaker("hey stella", 8.0, intents=Intents(CATALOGUE, "Stella"))
            await asyncio.wait_for(Pipeline([Feed([*script, EndFrame()]), taker, reply, OutfitTags(CATALOGUE), sink],
                                            Clock()).run(), 600)
        return sink.frames

    frames = asyncio.run(go())
    return [f.text for f in frames if isinstance(f, ReplyDoneFrame)], frames


def _opening(reply: str) -> str:
    return " ".join(re.findall(r"[a-z']+", reply.lower())[:3])


def test_she_keeps_her_name_and_the_users_and_does_not_loop(companion):
    replies, _ = converse(companion, [
        "Hi! My name is Arjun. Who are you?", "Tell me a short joke.", "I feel a bit lonely today.",
        "What should I cook for dinner?", "What's my name?"])
    assert len(replies) == 5, replies
    hello, *middle, name = replies
    assert "Stella" in hello and not re.search(r"\b(I'm|I am|[Mm]y name is) Arjun\b", hello), hello
    assert "Arjun" in name, f"the user's name remembered: {name!r}"
    for reply in replies:
        sentences = [s.strip().lower() for s in re.split(r"(?<=[.!?])\s+", reply) if s.strip()]
        assert len(sentences) == len(set(sentences)), f"a sentence repeated: {reply!r}"
        assert 0 < len(reply.split()) <= 60, f"short enough to speak: {reply!r}"
    openings = [_opening(r) for r in replies]
    assert len(set(openings)) == len(openings), f"replies open alike: {openings}"


def test_outfit_requests_change_her_outfit(companion):
    asked = ["Could you dress up for a trip to the moon?", "It's bedtime, get ready for sleep.",
             "Please put on your red dress.", "Wear something comfy and casual."]
    _, frames = converse(companion, asked)
    assert [f.id for f in frames if isinstance(f, OutfitFrame)] == ["space", "pyjamas", "red_dress", "hoodie"]
