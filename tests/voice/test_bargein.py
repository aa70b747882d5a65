"""Barge-in end to end: the user talks over a reply, in a headless run against the real gateway
and llama-server, with Stella's own voice echoed back into the microphone.

One session, several checks: playback stops within 150 ms of the user's first sound (out.wav
and in.wav share a timeline), the server stops generating the cut reply, the interrupting
question is answered, the next request's history holds only what was heard (marked), and the
mouth levels follow the audio actually played.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass

import httpx
import numpy as np
import pytest

from sidecar.config import AppConfig, ChatConfig
from sidecar.conversation import INTERRUPTED, Conversation
from sidecar.frames import AudioOutFrame, EndFrame, InterruptionFrame, RequestSentFrame, SpeechAudioFrame
from sidecar.headless import Options, run, with_wake
from sidecar.reply import Reply
from sidecar.voice.audio import RATE
from tests.helpers import tokens_decoding, tokens_predicted

from .speech import concat, heard_fraction, load, save, silence, words
from .test_headless import first, read_events

pytestmark = pytest.mark.llama

STORY = "Tell me a long story about a dragon who loves tea."
QUESTION = "What is the capital of France?"
ECHO = (50.0, -12.0)  # speaker -> microphone: 50 ms, 12 dB down


class RecordingConversation(Conversation):
    """The real conversation, keeping the messages of every request sent (`sent`, called when one
    is): the messages it built last. It also builds them for warm-ups, which are no requests."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.requests: list[list[dict[str, str]]] = []
        self._built: list[dict[str, str]] = []

    def messages(self, user_text: str) -> list[dict[str, str]]:
        self._built = super().messages(user_text)
        return self._built

    def sent(self) -> None:
        self.requests.append(self._built)


class SlotWatch:
    """Polls llama-server in a thread every 20 ms: (monotonic time, any slot busy, tokens generated
    so far: its /metrics counter for finished replies, /slots for the one under way), so a test can
    tell how much it generated after a moment. (With /metrics alone, a reply's tokens all appear at
    its end, so "after the barge-in" counted the whole cancelled reply: 163 tokens on a fast CPU.)"""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url = url
        self.headers = headers
        self.samples: list[tuple[float, bool, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> SlotWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        with httpx.Client(timeout=2) as http:
            while not self._stop.is_set():
                asked = time.monotonic()
                slots = http.get(self.url + "/slots", headers=self.headers).json()
                metrics = http.get(self.url + "/metrics", headers=self.headers).text
                # /metrics counts a reply only when its slot is released: the one under way is in /slots
                predicted = tokens_predicted(metrics) + tokens_decoding(slots)
                # the answers describe the server at some moment between question and answer
                busy = any(s["is_processing"] for s in slots)
                self.samples.append(((asked + time.monotonic()) / 2, busy, predicted))
                time.sleep(0.02)


@dataclass
class Session:
    events: list[dict]
    mic: np.ndarray  # in.wav (without the echo)
    out: np.ndarray
    onset: float  # the interrupting question's first sound in in.wav
    interrupted_at: float  # monotonic time of the barge-in decision
    slots: list[tuple[float, bool, int]]  # (time, busy, tokens generated so far)
    requests: list[list[dict[str, str]]]


@pytest.fixture(scope="module")
def session(gateway, llama_server, jarvis_engines, piper, tmp_path_factory) -> Session:
    """Hey Jarvis, a story please; in the middle of Stella's first long sentence the user asks
    something else (no wake word); once that answer is heard, the user stops it."""
    tmp = tmp_path_factory.mktemp("bargein")
    save(tmp / "in.wav", concat(silence(0.5), piper("Hey Jarvis."), silence(0.2), piper(STORY), silence(1.0)))
    cut_in = piper(QUESTION)
    # Greedy, so the story runs to its 400 tokens and is still being written when the user cuts in: at
    # temperature 0.8, 1 seed in 8 ended it after 53 tokens, and then there was no generation to cancel.
    config = with_wake(AppConfig(server_url=gateway.url, chat=ChatConfig(max_tokens=400, stop=[], temperature=0.0)),
                       "hey_jarvis")
    conversation = RecordingConversation(config.persona, config.chat)
    options = Options(audio_in=tmp / "in.wav", audio_out=tmp / "out.wav", events=tmp / "events.jsonl", echo=ECHO)
    marks: dict[str, float] = {}
    mic: list[np.ndarray] = []

    words: dict[int, int] = {}  # turn 1's sentences: index -> words

    def observe(processor, frame, direction) -> None:
        source = processor.pipeline.processors[0]
        if isinstance(frame, SpeechAudioFrame) and frame.turn == 1:
            words[frame.index] = len(frame.text.split())
        elif (isinstance(frame, AudioOutFrame) and frame.turn == 1 and frame.duration >= 1.0
              and words.get(frame.index, 0) >= 3 and "onset" not in marks):
            # in the middle of a sentence, with words heard before it and words after (a random
            # reply's "Yes, Stella." is over a second long)
            marks["onset"] = frame.t + 0.5
            source.insert(cut_in, marks["onset"])
        elif isinstance(frame, InterruptionFrame) and frame.reason == "barge_in":
            marks.setdefault("barge_in", time.monotonic())
        elif isinstance(frame, AudioOutFrame) and frame.turn == 2 and "stop" not in marks:
            # the answer has been heard: the user stops it there, so the session ends soon
            marks["stop"] = time.monotonic()
            asyncio.get_running_loop().call_later(
                1.5, lambda: asyncio.ensure_future(processor.pipeline.queue(InterruptionFrame(reason="stop"))))
        elif isinstance(frame, RequestSentFrame) and isinstance(processor, Reply):  # (each hop shows it)
            conversation.sent()
        elif isinstance(frame, EndFrame) and not mic:
            mic.append(source.audio)

    with SlotWatch(llama_server.url, llama_server.headers) as slots:
        asyncio.run(asyncio.wait_for(run(config, options, loaded=jarvis_engines, conversation=conversation,
                                         observers=[observe]), 180))
    assert "barge_in" in marks, "the user's speech over the reply did not interrupt it"
    save(tmp / "in.wav", mic[0])  # as the microphone heard it (without the echo): out.wav's timeline
    return Session(read_events(options.events), mic[0], load(options.audio_out), marks["onset"],
                   marks["barge_in"], slots.samples, conversation.requests)


def last_sound(out: np.ndarray, start: float, end: float) -> float:
    """The end of the last 5 ms of out.wav with sound in it between `start` and `end`."""
    block = RATE // 200
    part = out[int(start * RATE):int(end * RATE)]
    level = np.sqrt(np.mean(part[:len(part) // block * block].reshape(-1, block) ** 2, axis=1))
    loud = np.flatnonzero(level > 0.003)
    return start + (loud[-1] + 1) * 0.005 if len(loud) else start


def test_talking_over_the_reply_cuts_her_off_mid_sentence(session):
    """She stops while the user is still on their first word, long before her sentence ends. How
    soon (the 150 ms target) is a speed, measured by tests/bench/bargein_echo.py: here it ranged
    -0.1 to 0.2 s from run to run on a quiet machine (negative: she was between two words)."""
    onset = round(session.onset * RATE)
    before = session.out[onset - int(0.3 * RATE):onset]  # a pause between words is shorter than that
    assert np.max(np.abs(before)) > 0.05, "Stella must be speaking when the user cuts in"
    answer = [e["t"] for e in session.events if e["type"] == "audio_out" and e["turn"] == 2]
    stop = last_sound(session.out, session.onset - 0.3, answer[0] if answer else len(session.out) / RATE)
    sentence = next(e for e in session.events if e["type"] == "audio_out" and e["turn"] == 1
                    and e["t"] <= session.onset < e["t"] + e["duration"])
    print(f"playback stopped {1000 * (stop - session.onset):.0f} ms after the user's onset")
    assert stop < sentence["t"] + sentence["duration"] - 0.2, "her sentence played on to its end"
    assert stop - session.onset <= 0.5, f"playback went on {1000 * (stop - session.onset):.0f} ms after the onset"
    assert first(session.events, "interruption", reason="barge_in")["t"] >= session.onset, "not before the user spoke"


def test_the_cancelled_reply_stops_generating_on_the_llama_server(session):
    """Judged by what the server did, not by a clock (the machine is shared): after the barge-in
    its slot goes idle having generated a few more tokens, far from the 400 the reply could take."""
    assert first(session.events, "reply_done", turn=1)["reason"] == "cancelled", "the reply ended before the cut-in"
    before = [(busy, made) for t, busy, made in session.slots if t <= session.interrupted_at]
    assert before and before[-1][0], "the slot must have been busy with the reply"
    freed = next(made for t, busy, made in session.slots if t > session.interrupted_at and not busy)
    print(f"{freed - before[-1][1]} tokens after the barge-in, {before[-1][1]} before it")
    assert freed - before[-1][1] < 100, f"{freed - before[-1][1]} tokens generated after the barge-in"


def test_the_interrupting_question_is_transcribed_and_answered(session):
    turn = first(session.events, "user_turn", turn=2)
    assert heard_fraction("what is the capital of France", turn["text"]) >= 0.8, turn
    assert first(session.events, "request_sent", turn=2)["t"] >= turn["t"]
    assert first(session.events, "reply_done", turn=2)["text"].strip(), "the question got an answer"


def test_the_next_request_holds_only_what_was_heard_marked_interrupted(session):
    assert len(session.requests) == 2
    last_reply = session.requests[1][-2]
    assert last_reply["role"] == "assistant" and last_reply["content"].endswith(INTERRUPTED), last_reply
    heard = words(last_reply["content"].removesuffix(INTERRUPTED))
    spoken = words(" ".join(e["text"] for e in session.events if e["type"] == "sentence" and e["turn"] == 1))
    assert heard and heard == spoken[:len(heard)], "the history must be the start of the spoken reply"
    assert len(heard) < len(spoken), "words never played must not be in the history"
    assert first(session.events, "heard", turn=1)["interrupted"]


def test_mouth_levels_follow_the_played_audio(session):
    mouth = [(e["t"], e["level"]) for e in session.events if e["type"] == "mouth"]
    assert len(mouth) > 25, "half a second of speech at least"
    step = 0.005
    end = max(t for t, _ in mouth)
    grid = np.arange(0.0, end, step)
    level = np.zeros(len(grid))
    for t, value in mouth:  # each level holds for its 20 ms
        level[int(round(t / step)):int(round((t + 0.02) / step))] = value
    window = int(0.02 * RATE)
    envelope = np.array([np.sqrt(np.mean(session.out[int(g * RATE):int(g * RATE) + window] ** 2)) for g in grid])
    speaking = grid >= mouth[0][0]
    r = np.corrcoef(level[speaking], envelope[speaking])[0, 1]
    assert r > 0.8, f"mouth levels vs out.wav RMS: Pearson r = {r:.2f}"
    lags = range(-20, 21)  # +-100 ms
    best = max(lags, key=lambda k: np.corrcoef(np.roll(level, k)[speaking], envelope[speaking])[0, 1])
    assert abs(best * step) <= 0.040, f"mouth levels are {best * step * 1000:.0f} ms off the audio"
    blinks = [e["t"] for e in session.events if e["type"] == "blink"]
    assert blinks and blinks[0] <= 6.0, "the idle animation blinks every few seconds"
    assert all(2.0 <= b - a <= 6.05 for a, b in zip(blinks, blinks[1:], strict=False)), blinks
