"""A simulated conversation for barge-in and echo cancellation: Stella's replies come back
through a simulated speaker -> microphone path (a room), and a simulated user talks over some.

Typed questions get scripted replies (no server: the echo path is under test, not the model),
spoken by the real voice and played into out.wav; the echo path feeds out.wav back into the
input. Every `talk_every`-th reply, the user starts speaking half a second into it, with the
next of `clips` (piper's joe — Stella's own voice — or an espeak-ng voice). A barge-in by speech
that began within a second of such an onset is a hit; any other barge-in is false; an onset without one is a miss.
What was transcribed of each talk-over is kept, to compare with the same clip heard in silence:
the very samples spoken over her (piper renders a text differently each time: "Where do
penguins live?" read "lie", "life" or "live" by whisper in silence), read at a few leads of
silence (whisper tiny's reading of a clip can turn on a few ms of lead: "Tell me about Paris."
is "Tell me I'm out, Paris." in silence after 8 ms, right after 0 or 16).
`TUNING` clips are for tests and for tuning; `HELD_OUT` ones only for the benchmark's figures.
Used by tests/voice/test_echo_guard.py and tests/bench/bargein_echo.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sidecar.clock import Clock
from sidecar.config import AppConfig
from sidecar.events import EventLog
from sidecar.frames import (
    AudioFrame,
    AudioOutFrame,
    HeardFrame,
    InterruptionFrame,
    SpeechStartedFrame,
    UserTextFrame,
    UserTurnFrame,
)
from sidecar.voice.audio import RATE
from sidecar.voice.capture import FileSource
from sidecar.voice.playback import FileOutput
from sidecar.voice.simulated_echo import EchoPath
from sidecar.voice.vad import Endpointer
from sidecar.voice_loop import LoadedModels, build

from .harness import ScriptedLink
from .speech import espeak, load, noise, save, word_errors

REPLIES = [
    "Sure, I can help with that. Let me think about it for a moment.",
    "Paris is the capital of France. It is famous for its museums and cafes.",
    "That sounds like a lovely plan! I hope the weather stays nice for you.",
    "Dragons in old stories often guard treasure. Some of them are quite friendly.",
    "I like rainy days. They are perfect for reading a good book with some tea.",
    "Let me tell you a secret. I practise my jokes when nobody is listening.",
    "The moon is about three hundred eighty thousand kilometres away from the earth.",
]


@dataclass(frozen=True)
class Clip:
    voice: str  # "piper" (joe, Stella's own voice) or an espeak-ng voice
    text: str


TUNING = [Clip("piper", "What time is it?"), Clip("en-us", "Hold on, I have a question."),
          Clip("piper", "Can you say that again?"), Clip("en-gb", "Tell me about Paris."),
          Clip("piper", "Wait a moment please."), Clip("en-us+f3", "Do you like music?"),
          Clip("piper", "How far is the moon?")]
HELD_OUT = [Clip("piper", "Where do penguins live?"), Clip("en-us", "Stop, what is the weather like tomorrow?"),
            Clip("piper", "Actually, tell me a joke instead."), Clip("en-gb-scotland", "Who wrote that book?"),
            Clip("en-us+f4", "Please play some quiet music."), Clip("piper", "How old is the universe?"),
            Clip("en-gb", "Never mind, set a timer for ten minutes."),
            Clip("en-us+m3", "What is your favourite colour?"),
            Clip("piper", "Can dogs see colours?"), Clip("en-us+f3", "Hang on, how tall is Mount Everest?")]


def speak(piper, clip: Clip, level: float = 0.5) -> np.ndarray:  # noqa: ANN001
    """The clip's words, peak about `level`, 16 kHz."""
    return piper(clip.text, level=level) if clip.voice == "piper" else espeak(clip.text, voice=clip.voice, level=level)


ROOM_NOISE = 0.002  # RMS of the room's quiet noise, in the conversation and in the silence readings
READING_LEADS_MS = (0, 8, 16, 32, 48)


def in_silence(engines: LoadedModels, spoken: list[np.ndarray]) -> list[list[str]]:
    """What whisper makes of each talk-over's audio alone, over the same quiet room noise as the
    conversation, after each of `READING_LEADS_MS` of it: the readings an echo-free ear gives."""
    readings = []
    for audio in spoken:
        leads = [np.concatenate([np.zeros(RATE * ms // 1000, np.float32), audio]) for ms in READING_LEADS_MS]
        readings.append([engines.transcriber(a + noise(len(a) / RATE, level=ROOM_NOISE)[:len(a)]) for a in leads])
    return readings


def errors_over_her(readings: list[str], over_her: str) -> int:
    """The words heard over her voice that no echo-free reading of the same audio has."""
    return min(word_errors(reading, over_her) for reading in readings)


@dataclass
class Outcome:
    replies: int = 0  # replies that were heard (at least their first sentence)
    in_full: int = 0  # replies heard to the end
    onsets: list[float] = field(default_factory=list)  # when the user started talking over one
    said: list[Clip] = field(default_factory=list)  # what the user said at each onset
    spoken: list[np.ndarray] = field(default_factory=list)  # its audio, as inserted into the microphone
    ends: list[float] = field(default_factory=list)  # when each of those clips ended
    heard: dict[int, str] = field(default_factory=dict)  # onset index -> the transcript of its user turn
    barge_ins: list[float] = field(default_factory=list)  # where in the audio the speech that cut her off began
    stop_ms: list[float] = field(default_factory=list)  # onset -> silence in out.wav
    # How far behind real time each microphone block reached the VAD (ms): a loaded machine shows
    # here first, and a barge-in can be no sooner than the block that holds the user's onset.
    mic_lag_ms: list[float] = field(default_factory=list)

    def lag(self) -> str:
        """The microphone path's lag, median / 99th percentile / max, in ms."""
        if not self.mic_lag_ms:
            return "-"
        lag = np.asarray(self.mic_lag_ms)
        return f"{np.median(lag):.0f} / {np.percentile(lag, 99):.0f} / {lag.max():.0f}"

    @property
    def false(self) -> list[float]:
        """Barge-ins by speech that began while the user was silent: her own voice.

        (A clip with a pause — "Never mind, set a timer" — may end one turn at the comma and cut
        off the reply to it with the rest: that is the user talking, not her echo.)
        """
        talking = list(zip(self.onsets, self.ends, strict=True))
        return [b for b in self.barge_ins if not any(o <= b <= e + 0.3 for o, e in talking)]

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


def simulate(config: AppConfig, engines: LoadedModels, piper, folder: Path, *, replies: int, talk_every: int,
             echo: tuple[float, float, float], clips: list[Clip] = TUNING, user_level: float = 0.5) -> Outcome:
    """Run the conversation; `echo` = (delay ms, gain dB, RT60 ms) of the speaker -> microphone room."""
    outcome = Outcome()
    # Spoken before the conversation starts: synthesising a clip inside it would stall the event
    # loop for as long as piper takes (~1 s under load), and that stall counted as stop latency.
    voiced = {clip: speak(piper, clip, user_level) for clip in clips}
    room = save(folder / "room.wav", noise(2.0, level=ROOM_NOISE))
    path = EchoPath(*echo)
    output = FileOutput(folder / "out.wav", RATE, config.voice.block_ms)
    path.connect(output)
    source = FileSource(room, config.voice.block_ms, echo=path)  # real time: barge-in latency is real
    link = ScriptedLink(REPLIES)
    events = EventLog(folder / "events.jsonl")
    seen: set[tuple[str, int]] = set()
    asked = 1
    speech_start = 0.0  # the audio time of the last speech onset (what a barge-in answers to)
    interruptions: list[InterruptionFrame] = []  # the barge-ins seen, held: ids are not reused while held
    vad_feeder = None  # the processor that hands the microphone blocks to the VAD (found once built)

    def once(kind: str, turn: int) -> bool:
        if (kind, turn) in seen:
            return False
        seen.add((kind, turn))
        return True

    def observe(processor, frame, direction) -> None:
        nonlocal asked, speech_start
        if isinstance(frame, AudioFrame) and processor is vad_feeder:
            outcome.mic_lag_ms.append(1000 * (processor.clock.now() - frame.t) - config.voice.block_ms)
        elif isinstance(frame, SpeechStartedFrame):
            speech_start = frame.t
        elif isinstance(frame, AudioOutFrame) and frame.index == 0 and once("reply", frame.turn):
            outcome.replies += 1
            if outcome.replies % talk_every == 0:
                onset = max(frame.t + 0.5, source.position + 0.05)
                clip = clips[len(outcome.onsets) % len(clips)]
                audio = voiced[clip]
                source.insert(audio, onset)
                outcome.onsets.append(onset)
                outcome.ends.append(onset + len(audio) / RATE)
                outcome.said.append(clip)
                outcome.spoken.append(audio)
        elif isinstance(frame, InterruptionFrame) and frame.reason == "barge_in" and not any(
                f is frame for f in interruptions):  # each hop shows it; an id() could be a freed one's again
            interruptions.append(frame)
            outcome.barge_ins.append(speech_start)  # not when it was decided: a loaded machine may lag
        elif isinstance(frame, UserTurnFrame) and frame.source == "voice" and once("user", frame.turn):
            spoken = [k for k, o in enumerate(outcome.onsets) if o <= (frame.speech_end or 0.0)]
            if spoken:  # the user only speaks over replies: this is (part of) the latest talk-over
                k = spoken[-1]
                outcome.heard[k] = f"{outcome.heard[k]} {frame.text}" if k in outcome.heard else frame.text
        elif isinstance(frame, HeardFrame) and not frame.interrupted and once("heard", frame.turn):
            outcome.in_full += 1
            if asked < replies:
                asked += 1  # the user asks the next question once Stella has answered the last one
                asyncio.ensure_future(processor.pipeline.queue(UserTextFrame(text=f"Question {asked}?")))

    async def session() -> None:
        nonlocal vad_feeder
        pipeline = build(config, engines, source, output, link, Clock(), observers=[observe, events])
        chain = pipeline.processors
        vad_feeder = next(p for p, after in zip(chain, chain[1:], strict=False) if isinstance(after, Endpointer))
        await pipeline.queue(UserTextFrame(text="Question 1?", t=0.0))
        try:
            await pipeline.run()
        finally:
            events.close()

    asyncio.run(asyncio.wait_for(session(), 60 + replies * 20))
    out = load(folder / "out.wav")
    outcome.stop_ms = [1000 * (playback_stop(out, o) - o) for o in outcome.onsets]
    return outcome
