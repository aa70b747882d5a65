"""Voice latency benchmark: end of the user's speech -> first reply audio, by stage.

Run: ``.venv/bin/python tests/bench/voice_latency.py [--turns 12] [--server URL]``. Without
--server it starts the bundled llama-server (gemma3 270M) and a gateway. It prints the
figures and writes them to ``tests/bench/results/voice.md``; ``--endpoint smart_turn`` ends
turns with the turn model, ``--asr-engine whisper.cpp`` transcribes as before CTranslate2,
``--no-speculate`` only warms the likely turn at a pause instead of asking for its reply,
``--interim-s 0`` transcribes nothing while the user is still speaking.

A scripted microphone says "Hey Stella, <question>" (the app's default phrase wake word; or
"Hey Jarvis, …" with ``--wake openwakeword``) in voices that take turns (piper joe at two
speeds, espeak-ng voices; real-time pace), waits for the reply to be heard in full, pauses a
second, and asks the next question — a conversation, so the prompt grows with the history as it
does for a user; the first turn counts like the others. Everything else is the real voice loop
(`sidecar.voice_loop.build`): silero VAD [+ Smart Turn], the wake word, whisper tiny.en, the link to the
gateway, the sentence splitter, piper and the playback buffer (into a WAV file).

"total" is measured from the true end of the user's speech (the last sample of the clip the
microphone played) to the first sample of the reply in the output; the stages come from the
turn timeline: hang-over (speech end -> end of turn decided: Smart Turn's wait and its own
time, or the fixed hang-over), ASR still running after that,
request -> first token (gateway + llama-server), first token -> first sentence, sentence ->
first audio (piper + buffer).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from remote_api.client import LinkClient  # noqa: E402
from remote_api.shared.models.provision import Models  # noqa: E402
from remote_api.shared.processes import NotHealthy, free_port, stop_process, wait_healthy  # noqa: E402
from sidecar.clock import Clock  # noqa: E402
from sidecar.config import AppConfig, VoiceConfig  # noqa: E402
from sidecar.events import EventLog, TurnTimeline  # noqa: E402
from sidecar.frames import (  # noqa: E402
    AudioFrame,
    EndFrame,
    Frame,
    SpeechAudioFrame,
    TranscriptFrame,
    TurnEndedFrame,
    TurnTimelineFrame,
    UserTurnFrame,
)
from sidecar.pipeline import Direction, Source  # noqa: E402
from sidecar.voice.audio import RATE, to_int16  # noqa: E402
from sidecar.voice.playback import FileOutput  # noqa: E402
from sidecar.voice.vad import Segmenter  # noqa: E402
from sidecar.voice.wake import NameMatcher  # noqa: E402
from sidecar.voice_loop import LoadedModels, build  # noqa: E402
from tests import services  # noqa: E402
from tests.voice.speech import QUESTIONS, heard_fraction, voices  # noqa: E402

OUT = Path(__file__).parent / "results" / "voice.md"
STAGES = ["hangover", "asr", "turn_taking", "llm_first_token", "first_sentence", "tts_and_buffer"]


class ConversationMic(Source):
    """A microphone on which the user asks each question once the previous reply was heard."""

    def __init__(self, clips: list[np.ndarray], block_ms: int, pause_s: float = 1.0, patience_s: float = 60) -> None:
        super().__init__()
        self.clips = [to_int16(c) for c in clips]
        self.block = RATE * block_ms // 1000
        self.pause_s = pause_s
        self.patience_s = patience_s
        self.spoken_ends: list[float] = []  # true end of each question on the timeline
        self.turn_over = asyncio.Event()

    def observe(self, source: object, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, TurnEndedFrame):
            self.turn_over.set()

    async def produce(self) -> None:
        self.clock.start()
        n = 0
        silence = np.zeros(self.block, np.int16)

        async def feed(pcm: np.ndarray) -> None:
            nonlocal n
            for i in range(0, len(pcm), self.block):
                await self.clock.wait_until((n + self.block) / RATE)
                chunk = pcm[i:i + self.block]
                chunk = np.concatenate([chunk, silence[:self.block - len(chunk)]])
                await self.push(AudioFrame(pcm=chunk, rate=RATE, t=n / RATE))
                n += self.block

        await feed(np.zeros(int(self.pause_s * RATE), np.int16))
        for clip in self.clips:
            self.turn_over.clear()
            start = n
            await feed(clip)
            self.spoken_ends.append((start + len(clip)) / RATE)
            deadline = time.monotonic() + self.patience_s
            while not self.turn_over.is_set() and time.monotonic() < deadline:
                await feed(silence)
            await feed(np.zeros(int(self.pause_s * RATE), np.int16))
        await self.push(EndFrame())


def start_gateway(upstream: str, env: dict[str, str]) -> tuple[str, subprocess.Popen]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "remote_api.cli", "serve", "--port", str(port), "--upstream",
                             upstream, "--log-level", "WARNING"], cwd=REPO, env={**os.environ, **env})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, 30)
    except NotHealthy:
        stop_process(proc, 5)
        raise
    return url, proc


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


async def session(config: AppConfig, engines: LoadedModels, clips: list[np.ndarray], workdir: Path):
    mic = ConversationMic(clips, config.voice.block_ms)
    timelines: list[TurnTimelineFrame] = []
    transcripts: list[TranscriptFrame] = []
    turns: list[UserTurnFrame] = []
    speech: list[SpeechAudioFrame] = []
    events = EventLog(workdir / "events.jsonl")

    def on_turn(frame: TurnTimelineFrame) -> None:
        timelines.append(frame)
        events(None, frame)

    def collect(source: object, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, TranscriptFrame):
            transcripts.append(frame)
        elif isinstance(frame, UserTurnFrame):
            turns.append(frame)
        elif isinstance(frame, SpeechAudioFrame) and frame.index == 0:
            speech.append(frame)

    async with LinkClient(config.server_url, config.link) as link:
        pipeline = build(config, engines, mic, FileOutput(workdir / "out.wav", RATE), link, Clock(),
                         observers=[events, TurnTimeline(on_turn), mic.observe, collect])
        await pipeline.run()
    events.close()
    return mic.spoken_ends, timelines, transcripts, turns, [s.tts_ms for s in speech]


def whisper_threads(config: VoiceConfig, clip: np.ndarray, runs: int = 5) -> dict[int, float]:
    """Median whisper time for one question with 1 and 2 threads (what asr_threads trades)."""
    out = {}
    for threads in (1, 2):
        transcriber = LoadedModels.load(replace(config, asr_threads=threads, endpoint="silence"), Models()).transcriber
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            transcriber(clip)
            times.append((time.perf_counter() - began) * 1000)
        out[threads] = statistics.median(times)
    return out


def endpointing(voice: VoiceConfig) -> str:
    if voice.endpoint == "silence":
        return f"silence (hang-over {voice.hangover_ms} ms)"
    return (f"smart_turn (asked after {voice.turn_ask_ms} ms, threshold {voice.turn_threshold}, again every "
            f"{voice.turn_retry_ms} ms, at most {voice.turn_max_ms} ms)")


def report(config: AppConfig, turns: list[dict], asr_ms: list[float], tts_ms: list[float], accuracy: float,
           load: tuple[float, float], wall: float, threads: dict[int, float], *, wake_words: str,
           voice_names: list[str], cut: int, missed: int, command: str) -> str:
    totals = [t["total"] for t in turns]
    rows = [("**speech end -> first audio (total)**", totals)]
    rows += [(name, [t[name] for t in turns if name in t]) for name in STAGES]
    rows += [("VAD speech end after the true end", [t["vad_lag"] for t in turns]),
             ("whisper run (whole, from the pause)", asr_ms), ("piper, first sentence", tts_ms)]
    lines = [
        "## Voice latency (tests/bench/voice_latency.py)",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}; load average "
        f"{load[0]:.1f} before / {load[1]:.1f} after the run (other work shares the cores). Models: whisper "
        f"tiny.en on {config.voice.asr_engine} ({config.voice.whisper_threads} thread(s)), piper "
        f"{config.voice.piper_voice}, "
        f"gemma3 270M Q4_K_M on llama-server (2 threads, 2 slots) behind the gateway, WebSocket link on loopback. "
        f"Settings: endpoint {endpointing(config.voice)}, pre-roll {config.voice.preroll_ms} ms, max "
        f"{config.chat.max_tokens} tokens, first clause cut after {config.voice.first_clause_words} words, "
        f"reply asked for at the pause: {'yes' if config.chat.speculate else 'no (only its prompt warmed)'}, "
        f"words so far warmed every {config.voice.interim_s:g} s of speech (0: never).",
        "",
        f"{len(turns)} turns of \"{wake_words}, <question>\" in one conversation ({config.voice.wake_engine} wake "
        f"word), voices in turn: {', '.join(voice_names)}; the questions taken (wake word stripped) had "
        f"{accuracy:.0%} of their words right; {cut} utterance(s) heard but not taken as a turn (the rest of a "
        f"question split by a pause, or a question after a misheard wake word) and "
        f"{missed} with no reply. Wall time {wall:.0f} s. Command: `.venv/bin/python tests/bench/voice_latency.py"
        f"{command}`.",
        "",
        "| stage | p50 ms | p90 ms | mean ms |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, values in rows:
        if values:
            lines.append(f"| {name} | {pct(values, 50):.0f} | {pct(values, 90):.0f} | {statistics.mean(values):.0f} |")
    lines += [
        "",
        f"whisper threads (median of 5 on one question, idle pipeline): 1 thread {threads[1]:.0f} ms, 2 threads "
        f"{threads[2]:.0f} ms ({config.voice.asr_engine}); `voice.asr_threads` 0 (the default) uses every core, "
        "at most 4.",
        "",
        "The hang-over and ASR overlap: whisper starts on the words so far as soon as a pause begins",
        f"({Segmenter.TAIL_S * 1000:.0f} ms of silence), so while the hang-over confirms the end, most of the",
        "transcription is done; \"asr\" is only what is left after the endpoint. The stages add up to the",
        "total, plus the VAD lag (how far after the true end the VAD's last voiced window ends).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--server", help="an existing gateway (default: start llama-server + gateway)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave results/voice.md alone")
    parser.add_argument("--asr-threads", type=int, default=0, help="voice.asr_threads (0: the default)")
    parser.add_argument("--asr-engine", choices=["ctranslate2", "whisper.cpp"], default=VoiceConfig.asr_engine)
    parser.add_argument("--endpoint", choices=["smart_turn", "silence"], default=VoiceConfig.endpoint)
    parser.add_argument("--wake", choices=["phrase", "openwakeword"], default="phrase")
    parser.add_argument("--no-speculate", dest="speculate", action="store_false",
                        help="chat.speculate off: at a pause only warm the likely turn, ask at the turn's end")
    parser.add_argument("--interim-s", type=float, default=VoiceConfig.interim_s,
                        help="voice.interim_s: words so far transcribed (and warmed) every this many seconds of speech")
    args = parser.parse_args()
    if args.turns > len(QUESTIONS):
        parser.error(f"at most {len(QUESTIONS)} turns")

    workdir = Path(tempfile.mkdtemp(prefix="stella-voice-bench-"))
    llama = gateway = None
    if args.server:
        url = args.server
    else:
        llama = services.llama_server(workdir)
        llama.start()
        url, gateway = start_gateway(llama.url, llama.env)
    try:
        voice = VoiceConfig(wake_engine=args.wake, wake_model="hey_jarvis", asr_threads=args.asr_threads,
                            asr_engine=args.asr_engine, endpoint=args.endpoint, interim_s=args.interim_s)
        base = AppConfig(server_url=url)
        config = replace(base, voice=voice, chat=replace(base.chat, speculate=args.speculate))
        engines = LoadedModels.load(voice)
        wake_words = "Hey Stella" if args.wake == "phrase" else "Hey Jarvis"
        speakers = voices()
        names = list(speakers)
        questions = QUESTIONS[:args.turns]
        clips = [speakers[names[i % len(names)]](f"{wake_words}, {q}") for i, q in enumerate(questions)]
        load_before = os.getloadavg()[0]
        began = time.monotonic()
        ends, timelines, transcripts, asked, tts = asyncio.run(session(config, engines, clips, workdir))
        wall = time.monotonic() - began
        load_after = os.getloadavg()[0]
        threads = whisper_threads(voice, clips[0])
    finally:
        if gateway is not None:
            stop_process(gateway, 10)
        if llama is not None:
            llama.stop()

    turns = []
    for frame in sorted(timelines, key=lambda f: f.turn):
        marks, gaps = frame.marks, dict(frame.latency_ms)
        if "first_audio" not in marks or "speech_end" not in marks:
            continue
        true_end = max((e for e in ends if e <= marks["speech_end"] + 0.5), default=marks["speech_end"])
        gaps["total"] = (marks["first_audio"] - true_end) * 1000
        gaps["vad_lag"] = (marks["speech_end"] - true_end) * 1000
        turns.append(gaps)
    heard = {t.turn: t.text for t in asked}
    # each question against the turn that heard it best: a split or lost question must not shift the others
    accuracy = statistics.mean(max((heard_fraction(q, text) for text in heard.values()), default=0.0)
                               for q in questions)
    # a question split by a pause: its second part is transcribed but starts no turn (the wake word is spent)
    wake = NameMatcher(wake_words)
    taken = {t.speech_end for t in asked}
    bare_wake = [t for t in transcripts if (found := wake.match(t.text)) is not None and not found.rest]
    cut = sum(1 for t in transcripts if t.text and t.utterance.end not in taken and t not in bare_wake)
    command = "".join(f" --{k.replace('_', '-')} {v}" for k, v in (("endpoint", args.endpoint),
                      ("asr_engine", args.asr_engine), ("wake", args.wake), ("interim_s", args.interim_s))
                      if v != parser.get_default(k)) + ("" if args.speculate else " --no-speculate")
    text = report(config, turns, [t.asr_ms for t in transcripts], tts, accuracy, (load_before, load_after), wall,
                  threads, wake_words=wake_words, voice_names=names, cut=cut, missed=len(questions) - len(turns),
                  command=command)
    print(text)
    print(f"(events and audio in {workdir})")
    if not args.no_write:
        OUT.write_text(text)


if __name__ == "__main__":
    main()
