"""Text to speech: piper (neural, offline voice) with espeak-ng as the fallback.

Each sentence is synthesized in a worker thread as soon as it arrives, so sentence n+1 is
being made while sentence n plays. If piper cannot load or fails on a sentence, espeak-ng
speaks instead — a robotic voice beats silence.
"""

from __future__ import annotations

import asyncio
import io
import logging
import shutil
import subprocess
import threading
import time
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sidecar.frames import Frame, ReplyDoneFrame, SentenceFrame, SpeechAudioFrame, TurnEndedFrame
from sidecar.memory import give_back
from sidecar.pipeline import Direction, Processor, VoiceError

log = logging.getLogger(__name__)


class Synthesizer(Protocol):
    name: str

    def __call__(self, text: str) -> tuple[np.ndarray, int]:
        """Float32 mono audio of `text` and its sample rate."""
        ...

    def release(self) -> None:
        """Give back the working memory the last sentences used (a reply has been made)."""
        ...


class ArenaSession:
    """An onnxruntime session whose arena can be asked to give back what runs grew it by.

    VITS's activations grow with the sentence, and the arena keeps the largest ever made (measured:
    +100 MiB after a six-sentence reply, held for good). Shrinking it after every run would make every
    sentence fault in fresh pages, so it shrinks only when asked, by a run with `shrink` set:
    `PiperSynth.release`, once a reply has been made in full.
    """

    def __init__(self, session: Any) -> None:
        import onnxruntime

        self.session = session
        self.shrink = False
        self._options = onnxruntime.RunOptions()
        self._options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def run(self, output_names: list[str] | None, input_feed: dict[str, Any]) -> list[Any]:
        return self.session.run(output_names, input_feed, self._options if self.shrink else None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


class PiperSynth:
    name = "piper"

    def __init__(self, model_path: Path, threads: int = 0) -> None:
        """`threads`: onnxruntime's intra-op threads (0: its default, one per core)."""
        import json

        import onnxruntime
        from piper import PiperConfig, PiperVoice, SynthesisConfig
        from piper.voice import ESPEAK_DATA_DIR

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        # a memory pattern is planned per input shape, and each sentence has its own length: measured
        # 20 MiB more with it, and no faster (the arena stays: without it a first clause took 10-35 ms longer)
        options.enable_mem_pattern = False
        config = json.loads(Path(f"{model_path}.json").read_text(encoding="utf-8"))
        # PiperVoice.load, but with our session options (it gives onnxruntime the defaults)
        self._session = ArenaSession(onnxruntime.InferenceSession(str(model_path), sess_options=options,
                                                                   providers=["CPUExecutionProvider"]))
        self._lock = threading.Lock()  # a release and a sentence never share the session's arena
        self._voice = PiperVoice(config=PiperConfig.from_dict(config), espeak_data_dir=Path(ESPEAK_DATA_DIR),
                                 session=self._session, download_dir=Path.cwd())
        self._config = SynthesisConfig(volume=0.8)  # piper peak-normalizes; leave headroom

    def __call__(self, text: str) -> tuple[np.ndarray, int]:
        with self._lock:
            chunks = list(self._voice.synthesize(text, self._config))
        rate = self._voice.config.sample_rate
        if not chunks:
            return np.zeros(0, np.float32), rate
        return np.concatenate([c.audio_float_array for c in chunks]).astype(np.float32), rate

    def release(self) -> None:
        """Shrink the arena to what one short word needs (a run that shrinks it when done)."""
        with self._lock:
            self._session.shrink = True
            try:
                list(self._voice.synthesize("Hm.", self._config))
            finally:
                self._session.shrink = False


class EspeakSynth:
    name = "espeak-ng"

    def __init__(self, voice: str, speed: int = 165, pitch: int = 50) -> None:
        exe = shutil.which("espeak-ng")
        if exe is None:
            raise VoiceError("espeak-ng is not installed (Debian: apt install espeak-ng)")
        self._cmd = [exe, "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout"]

    def __call__(self, text: str) -> tuple[np.ndarray, int]:
        out = subprocess.run([*self._cmd, text], capture_output=True, check=True, timeout=30).stdout
        with wave.open(io.BytesIO(out)) as w:  # espeak's streamed header has no real length
            rate = w.getframerate()
            raw = w.readframes(w.getnframes())
        return np.frombuffer(raw[:len(raw) // 2 * 2], "<i2").astype(np.float32) / 32768.0, rate

    def release(self) -> None:
        """Nothing to give back: each sentence is its own espeak-ng process."""


class TTS(Processor):
    """Sentences in, their audio out. Once a reply has been made in full, the synthesizer's working memory
    goes back to the system (piper: 30-100 MiB) while she speaks it: held between turns, it was most of the
    engine's growth after a turn. The next reply's first clause takes fresh pages again: ~30 ms (measured with
    the int8 voice, whose weights are made float in the arena as it runs; sidecar/memory.py). Once the turn is
    over (playback says so, upstream), the heap's free pages go back too: what the turn's other work freed."""

    def __init__(self, primary: Synthesizer, fallback: Synthesizer | None = None) -> None:
        super().__init__()
        self.primary = primary
        self.fallback = fallback
        self._background: set[asyncio.Task[None]] = set()  # held until done (the loop keeps only weak references)

    async def stop(self) -> None:
        for task in self._background:
            task.cancel()

    async def process(self, frame: Frame, direction: Direction) -> None:
        if not isinstance(frame, SentenceFrame):
            await self.push(frame, direction)
            if isinstance(frame, ReplyDoneFrame):
                self._in_background(self._give_back)
            elif isinstance(frame, TurnEndedFrame):  # she has said it all: what playing it took goes back too
                self._in_background(give_back)
            return
        await self.push(frame, direction)
        began = time.perf_counter()
        engine = self.primary
        try:
            audio, rate = await asyncio.to_thread(engine, frame.text)
        except Exception as exc:
            if self.fallback is None:
                raise
            log.warning("%s failed on a sentence of %d chars (%s); using %s", engine.name, len(frame.text), exc,
                        self.fallback.name)
            engine = self.fallback
            audio, rate = await asyncio.to_thread(engine, frame.text)
        took = (time.perf_counter() - began) * 1000
        await self.push(SpeechAudioFrame(turn=frame.turn, index=frame.index, text=frame.text, audio=audio,
                                         rate=rate, tts_ms=took, engine=engine.name))

    def _in_background(self, work: Callable[[], None]) -> None:
        """Each one runs: a heap trim under way must not stand in for a reply's release (the release runs
        under the voice's lock; trims may overlap, glibc's malloc_trim is thread-safe)."""
        task = asyncio.create_task(asyncio.to_thread(work), name="tts-release")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _give_back(self) -> None:
        for engine in (self.primary, self.fallback):
            try:
                if engine is not None:
                    engine.release()
            except Exception as exc:  # noqa: BLE001 - only memory is at stake: the next sentence loads what it needs
                log.warning("%s could not give its working memory back: %s", engine.name, exc)
        give_back()
        log.debug("the voice's working memory given back (the reply is made)")
