"""A simulated conversation for the echo guard: Stella's replies come back through a simulated
speaker -> microphone path, and a simulated user talks over some of them.

Typed questions get scripted replies (no server: the guard is under test, not the model),
spoken by the real voice and played into out.wav; the echo path feeds out.wav back into the
input. Every `talk_every`-th reply, the user starts speaking half a second into it. A barge-in
within a second of such an onset is a hit; any other barge-in is false; an onset without one is
a miss. Used by tests/voice/test_echo_guard.py and tests/bench/bargein_echo.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sidecar.clock import Clock
from sidecar.config import AppConfig
from sidecar.events import EventLog
from sidecar.frames import AudioOutFrame, HeardFrame, InterruptionFrame, UserTextFrame
from sidecar.loop import Engines, build
from sidecar.voice.audio import RATE
from sidecar.voice.capture import FileSource
from sidecar.voice.echo import EchoPath
from sidecar.voice.playback import FileOutput

from .harness import ScriptedLink
from .speech import load, noise, save

REPLIES = [
    "Sure, I can help with that. Let me think about it for a moment.",
    "Paris is the capital of France. It is famous for its museums and cafes.",
    "That sounds like a lovely plan! I hope the weather stays nice for you.",
    "Dragons in old stories often guard treasure. Some of them are quite friendly.",
    "I like rainy days. They are perfect for reading a good book with some tea.",
    "Let me tell you a secret. I practise my jokes when nobody is listening.",
    "The moon is about three hundred eighty thousand kilometres away from the earth.",
]
USER = ["What time is it?", "Hold on, I have a question.", "Can you say that again?", "Tell me about Paris.",
        "Wait a moment please.", "Do you like music?", "How far is the moon?"]


@dataclass
class Outcome:
    replies: int = 0  # replies that were heard (at least their first sentence)
    onsets: list[float] = field(default_factory=list)  # when the user started talking over one
    barge_ins: list[float] = field(default_factory=list)
    stop_ms: list[float] = field(default_factory=list)  # onset -> silence in out.wav

    @property
    def false(self) -> list[float]:
        return [b for b in self.barge_ins if not any(o <= b <= o + 1.0 for o in self.onsets)]

    @property
    def missed(self) -> list[float]:
        return [o for o in self.onsets if not any(o <= b <= o + 1.0 for b in self.barge_ins)]


def playback_stop(out: np.ndarray, after: float, quiet_s: float = 0.3) -> float:
    """When out.wav falls silent (for `quiet_s`) at or after `after`."""
    block = RATE // 200  # 5 ms
    level = np.sqrt(np.mean(out[:len(out) // block * block].reshape(-1, block) ** 2, axis=1))
    loud = level > 0.003
    need = int(quiet_s / 0.005)
    for b in range(int(after / 0.005), len(loud) - need):
        if not loud[b:b + need].any():
            return b * 0.005
    return len(out) / RATE


def simulate(config: AppConfig, engines: Engines, piper, folder: Path, *, replies: int, talk_every: int,
             echo: tuple[float, float], user_level: float = 0.5) -> Outcome:
    """Run the conversation; `echo` = (delay ms, gain dB) of the speaker -> microphone path."""
    outcome = Outcome()
    room = save(folder / "room.wav", noise(2.0, level=0.002))
    path = EchoPath(*echo)
    output = FileOutput(folder / "out.wav", RATE, config.voice.block_ms)
    path.connect(output)
    source = FileSource(room, config.voice.block_ms, echo=path)  # real time: barge-in latency is real
    link = ScriptedLink(REPLIES)
    events = EventLog(folder / "events.jsonl")
    seen: set[tuple[str, int]] = set()
    asked = 1

    def once(kind: str, turn: int) -> bool:
        if (kind, turn) in seen:
            return False
        seen.add((kind, turn))
        return True

    def observe(processor, frame, direction) -> None:
        nonlocal asked
        if isinstance(frame, AudioOutFrame) and frame.index == 0 and once("reply", frame.turn):
            outcome.replies += 1
            if outcome.replies % talk_every == 0:
                onset = max(frame.t + 0.5, source.position + 0.05)
                source.insert(piper(USER[len(outcome.onsets) % len(USER)], level=user_level), onset)
                outcome.onsets.append(onset)
        elif isinstance(frame, InterruptionFrame) and frame.reason == "barge_in" and once("barge_in", id(frame)):
            outcome.barge_ins.append(frame.t)
        elif isinstance(frame, HeardFrame) and not frame.interrupted and once("heard", frame.turn) \
                and asked < replies:
            asked += 1  # the user asks the next question once Stella has answered the last one
            asyncio.ensure_future(processor.pipeline.queue(UserTextFrame(text=f"Question {asked}?")))

    async def session() -> None:
        pipeline = build(config, engines, source, output, link, Clock(), observers=[observe, events])
        await pipeline.queue(UserTextFrame(text="Question 1?", t=0.0))
        try:
            await pipeline.run()
        finally:
            events.close()

    asyncio.run(asyncio.wait_for(session(), 60 + replies * 20))
    out = load(folder / "out.wav")
    outcome.stop_ms = [1000 * (playback_stop(out, o) - o) for o in outcome.onsets]
    return outcome
