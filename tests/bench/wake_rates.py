"""Wake-word false accepts / false rejects and idle CPU, per engine, on a held-out corpus.

Run: ``nice -n 19 .venv/bin/python tests/bench/wake_rates.py`` (held-out set; writes
``tests/bench/results/wake-heldout.md``, or ``wake-heldout-<engine>.md`` with ``--only``).
``--set tuning`` (or ``seen`` to ``seen9``) runs tuning voices instead and writes nothing: thresholds and
matcher rules are chosen there, never on the held-out voices. ``--baseline`` adds the
single-stage openWakeWord engine (costly: ~140 ms of CPU per second). ``--wakes-only`` skips
the other speech (a quick look at false rejects).

Each miss is put down to the stage that lost it — the trigger (no candidate), the VAD / gate
(no transcript), whisper (the name in neither the transcript nor the n-best readings), the
matcher (the name is in the transcript, but not where a wake word may be) or the name check
(the name where a wake word may be, but unlikely to whisper without the prompt) — and each hit and
false accept to what found the name: whisper's transcript or its n-best readings.

The corpus (tests/voice/wake_corpus.py) is generated once and cached. Every stream goes
through the real front end, as a microphone would deliver it — [trigger], VAD, wake gate,
whisper, turn taker — and every wake it announces is counted: inside a wake utterance a hit,
anywhere in the other speech a false accept. Whisper's transcripts are memoised on disk by
(audio, prompt, model) — whisper is deterministic for the same input — so a second run
costs minutes; the CPU figures come from a separate pass over one other-speech stream with
nothing memoised.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from remote_api.shared.models.provision import Models  # noqa: E402
from sidecar.clock import Clock  # noqa: E402
from sidecar.config import VoiceConfig  # noqa: E402
from sidecar.frames import Frame, TranscriptFrame, UserTurnFrame, WakeFrame  # noqa: E402
from sidecar.pipeline import Direction, Pipeline, Processor  # noqa: E402
from sidecar.voice.asr import Transcribes  # noqa: E402
from sidecar.voice.audio import snr_db  # noqa: E402
from sidecar.voice.capture import FileSource  # noqa: E402
from sidecar.voice.turn_taking import TurnTaker, WakeGate  # noqa: E402
from sidecar.voice.wake import MicroWakeModel, NameMatch, NameMatcher, WakeModel, words  # noqa: E402
from sidecar.voice.wake_confirm import SLACK_S, WakeCandidateFrame  # noqa: E402
from sidecar.voice.wake_nbest import NameHypotheses, NameOdds  # noqa: E402
from sidecar.voice_loop import LoadedModels, listening, name_hypotheses  # noqa: E402
from tests.voice import wake_corpus  # noqa: E402
from tests.voice.speech import heard_fraction  # noqa: E402
from tests.voice.wake_corpus import SNR_DB, Corpus, Span, Stream  # noqa: E402

RESULTS = Path(__file__).parent / "results"
T = TypeVar("T")
TARGETS = "false accepts < 0.5 per hour of speech, false rejects < 5 % clean and < 10 % at 10 dB SNR"


@dataclass(frozen=True)
class Engine:
    label: str
    corpus: str  # which wake streams: "acoustic" ("Hey Jarvis") or "phrase" ("Hey Stella")
    config: VoiceConfig
    describe: str


def engines_to_run(trigger: float, baseline: bool, asr: str, floor: float, sure: float, lead: float) -> list[Engine]:
    """Every engine listens for "hey stella": the acoustic ones with our trained model of it."""
    ours = dict(asr_engine=asr, wake_model="hey_stella", wake_acoustic_floor=floor, wake_acoustic_sure=sure,
                wake_acoustic_lead_s=lead)
    early = f"its scores in the utterance's first {lead} s only"
    out = [
        Engine("phrase", "phrase", VoiceConfig(**ours, wake_engine="phrase", wake_phrase="hey stella"),
               "VAD + whisper (prompted \"Hey Stella.\") + name token (first or after lead-ins, \"why\" after a "
               "greeting among them; one edit or the same phonetic key) in the transcript or in whisper's 4 best "
               "readings of the first 3 s (unless its unprompted readings write another name shaped like it), "
               f"weighed against the hey_stella model's best score in the utterance ({early}): a name whisper wrote "
               f"counts from {floor}, and the model alone wakes her from {sure} (in a quiet room only if whisper "
               "base, prompted so, writes the name first, second or after lead-ins in one of its 4 readings); a "
               "phonetic match ends as the name does"),
        Engine("two_stage", "phrase", VoiceConfig(**ours, wake_engine="two_stage", wake_trigger_threshold=trigger),
               f"the hey_stella model at {trigger} opens a candidate + VAD gate + whisper (prompted \"Hey Stella.\") "
               f"confirms the name in its transcript or its 4 best readings of the first 3 s; the model alone wakes "
               f"her from {sure} ({early}; in a quiet room only if whisper base's prompted readings have the name "
               "first, second or after lead-ins)"),
        Engine("acoustic", "phrase", VoiceConfig(**ours, wake_engine="openwakeword"),
               f"the hey_stella model alone at {VoiceConfig().wake_threshold} (openWakeWord's features, our head), "
               "single stage, no whisper"),
    ]
    if baseline:
        out.append(Engine("phrase_whisper_only", "phrase",
                          VoiceConfig(asr_engine=asr, wake_engine="phrase", wake_acoustic=False),
                          "the phrase engine without the acoustic model (the engine before it)"))
    return out


def memo_path(folder: Path, tag: str, prompt: str, audio: np.ndarray) -> Path:
    key = hashlib.sha1(tag.encode() + prompt.encode() + np.ascontiguousarray(audio).tobytes()).hexdigest()
    return folder / key[:2] / key


def remember(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def recalled(path: Path, work: Callable[[], T]) -> T:
    """The value kept at `path`, or `work`'s, kept there."""
    if path.exists():
        return json.loads(path.read_text())
    value = work()
    remember(path, value)
    return value


class MemoTranscriber:
    """Whisper's transcripts kept on disk by (model, prompt, audio): the same input gives the
    same text, so reruns skip it. Aborted (early, superseded) runs are not kept."""

    def __init__(self, inner: Transcribes, folder: Path, tag: str) -> None:
        self.inner, self.folder, self.tag = inner, folder, tag
        self.calls = self.hits = 0

    def prepare(self, prompt: str) -> None:
        self.inner.prepare(prompt)

    def __call__(self, audio: np.ndarray, abort: threading.Event | None = None, prompt: str = "") -> str:
        path = memo_path(self.folder, self.tag, prompt, audio)
        self.calls += 1
        if path.exists():
            self.hits += 1
            return json.loads(path.read_text())
        text = self.inner(audio, abort, prompt)
        if abort is None or not abort.is_set():
            remember(path, text)
        return text


class MemoHypotheses:
    """The same for the n-best second guess (wake_nbest.NameHypotheses); with a `matcher`, it
    counts in `ranks` which reading (1 = the best) first held the name, "-" for none."""

    def __init__(self, inner: NameHypotheses, folder: Path, tag: str, noisy_tag: str = "") -> None:
        self.inner, self.folder, self.tag = inner, folder, f"{tag} n-best {inner.n} {inner.head_s}"
        self.noisy_tag = f"{noisy_tag} n-best {inner.n} {inner.head_s}"
        self.head_s = inner.head_s
        self.matcher: NameMatcher | None = None
        self.ranks: dict[str, int] = {}
        self.odds: list[float | None] = []  # the name's odds at each check, in order

    def __call__(self, audio: np.ndarray, prompt: str = "") -> list[str]:
        path = memo_path(self.folder, self.noisy_tag if self.inner.noisy(audio) else self.tag, prompt, audio)
        readings = recalled(path, lambda: self.inner(audio, prompt))
        if self.matcher is not None:
            count(self.ranks, next((str(i) for i, r in enumerate(readings, 1) if self.matcher.match(r)), "-"))
        return readings

    def primed(self, audio: np.ndarray, prompt: str) -> list[str]:
        path = memo_path(self.folder, self.noisy_tag if self.inner.noisy_model else self.tag, prompt, audio)
        return recalled(path, lambda: self.inner.primed(audio, prompt))

    def in_noise(self, audio: np.ndarray) -> bool:
        return self.inner.in_noise(audio)

    @property
    def name_check(self) -> bool:
        return self.inner.name_check

    def prepare(self, words: str) -> None:
        self.inner.prepare(words)

    def check(self, audio: np.ndarray, found: NameMatch, spellings: list[str]) -> NameOdds:
        """The inner check, memoised like the readings; each name's odds are noted in `odds`, in
        noise too (where the check leaves them unscored)."""
        path = memo_path(self.folder, f"{self.tag} odds {found.lead} {spellings}", "", audio)
        odds = recalled(path, lambda: self.inner.name_odds(audio, found, spellings))
        self.odds.append(odds)
        return self.inner.judge(audio, lambda: odds)


def counting_ranks(engines: LoadedModels, matcher: NameMatcher, into: dict[str, int],
                   odds: list[float | None]) -> None:
    if isinstance(engines.hypotheses, MemoHypotheses):
        engines.hypotheses.matcher, engines.hypotheses.ranks, engines.hypotheses.odds = matcher, into, odds


class Wakes(Processor):
    """Collects the confirmed wakes (WakeFrame) and the two-stage trigger's candidates."""

    def __init__(self) -> None:
        super().__init__()
        self.wakes: list[float] = []
        self.candidates: list[float] = []
        self.scored: list[tuple[float, float]] = []  # every candidate: (t, score)
        self.heard: list[tuple[float, float, str]] = []  # (start, end, transcript)
        self.scores: dict[float, float] = {}  # utterance start -> the acoustic model's best score in it
        self.snr: dict[float, float] = {}  # utterance start -> its estimated SNR (dB)
        self.audio: dict[float, np.ndarray] = {}  # utterance start -> its audio, if the model scored it (--keep-audio)
        self.turns: list[tuple[float, str]] = []  # (speech end, text) of each turn she took

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, WakeFrame):
            self.wakes.append(frame.t)
        elif isinstance(frame, UserTurnFrame) and frame.speech_end is not None:
            self.turns.append((frame.speech_end, frame.text))
        await self.push(frame, direction)


class Tap(Processor):
    """Passes frames on; notes in `into` what the gate and the turn taker swallow (candidates,
    transcripts)."""

    def __init__(self, into: Wakes) -> None:
        super().__init__()
        self.into = into

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, WakeCandidateFrame):
            self.into.candidates.append(frame.t)
            self.into.scored.append((frame.t, frame.score))
        elif isinstance(frame, TranscriptFrame):
            self.into.heard.append((frame.utterance.start, frame.utterance.end, frame.text))
            self.into.snr[frame.utterance.start] = round(snr_db(frame.utterance.audio), 1)
            if frame.utterance.wake_score is not None:
                self.into.scores[frame.utterance.start] = frame.utterance.wake_score
                if KEEP is not None and frame.utterance.wake_score >= KEEP_FROM:
                    self.into.audio[frame.utterance.start] = frame.utterance.audio
        await self.push(frame, direction)


def front_end(engines: LoadedModels, config: VoiceConfig, wav: Path) -> tuple[Wakes, float]:
    """The real front end over one stream: (what it announced, CPU seconds it took)."""
    wakes = Wakes()
    source = FileSource(wav, config.block_ms, fast=True, tail_limit_s=30.0)
    processors = listening(config, engines, source)
    for kind in (TurnTaker, WakeGate):  # later one first: inserting shifts what follows
        processors.insert(next(i for i, p in enumerate(processors) if isinstance(p, kind)), Tap(wakes))
    began = time.process_time()
    asyncio.run(Pipeline([*processors, wakes], Clock()).run())
    return wakes, time.process_time() - began


@dataclass
class Tally:
    """One engine on one condition: hits on wake utterances, wakes in the other speech."""

    wake_total: int = 0
    missed: list[tuple[Span, str]] = field(default_factory=list)  # and what whisper heard there
    other_s: float = 0.0  # seconds of speech in the other streams
    lookalike_s: float = 0.0  # ... of it in look-alike scenes ("Hey Della, ..."): a stress test, not ordinary speech
    lookalikes: int = 0  # look-alike utterances said
    false: list[tuple[str, Span | None, str]] = field(default_factory=list)  # (stream, span it fell in, heard)
    trigger_missed: int = 0
    trigger_false: int = 0
    lost: dict[str, int] = field(default_factory=dict)  # misses by the stage that lost them
    found_by: dict[str, int] = field(default_factory=dict)  # hits by what found the name
    false_by: dict[str, int] = field(default_factory=dict)  # false accepts by what found the name
    hit_ranks: dict[str, int] = field(default_factory=dict)  # n-best checks on wake utterances: the name's rank
    false_ranks: dict[str, int] = field(default_factory=dict)  # the same in the other speech
    hit_odds: list[float | None] = field(default_factory=list)  # the name's odds without the prompt, wake utterances
    asked: int = 0  # wake utterances with a request after the name that woke her
    answered: dict[str, int] = field(default_factory=dict)  # ... whose request became her turn, by what found the name
    dropped: dict[str, int] = field(default_factory=dict)  # ... whose request did not
    false_odds: list[float | None] = field(default_factory=list)  # the same in the other speech

    @property
    def fr(self) -> float:
        return len(self.missed) / max(1, self.wake_total)

    @property
    def fa_per_h(self) -> float:
        return len(self.false) / max(1e-9, self.other_s / 3600)

    @property
    def lookalikes_taken(self) -> int:
        return sum(s is not None and s.scene == "lookalikes" for _, s, _ in self.false)

    @property
    def ordinary_fa_per_h(self) -> float:
        """False accepts an hour in conversation, TV and requests (and between utterances)."""
        return (len(self.false) - self.lookalikes_taken) / max(1e-9, (self.other_s - self.lookalike_s) / 3600)


def inside(t: float, spans: list[Span]) -> Span | None:
    return next((s for s in spans if s.start - 0.2 <= t <= s.end + 1.5), None)


def matcher_of(config: VoiceConfig) -> NameMatcher:
    return NameMatcher(config.wake_phrase if config.wake_engine == "phrase" else config.wake_model)


def count(into: dict[str, int], key: str) -> None:
    into[key] = into.get(key, 0) + 1


# What whisper wrote in one utterance, and the acoustic model's best score in it (None: no model listened).
Heard = tuple[str, float | None]


def heard_over(seen: Wakes, start: float, end: float) -> list[Heard]:
    """The utterances the front end transcribed between `start` and `end`, in order."""
    return [(text, seen.scores.get(s)) for s, e, text in seen.heard if s < end and e > start]


def near(seen: Wakes, t: float) -> list[Heard]:
    """The utterance that woke her at `t` (it ends there)."""
    start, _, text = min(seen.heard, key=lambda h: abs(h[1] - t), default=(0.0, 0.0, ""))
    return [(text, seen.scores.get(start))]


def shown(heard: list[Heard]) -> str:
    """As the report writes it: "Hey Stella. (acoustic 0.98) / What time is it?"."""
    return " / ".join(text + ("" if score is None else f" (acoustic {score:.2f})") for text, score in heard)


def finder(matcher: NameMatcher, heard: list[Heard], sure: float) -> str:
    """What found the name in an accepted utterance (the first heard): its transcript, the acoustic
    model alone (at `sure` or over), or else whisper's n-best check."""
    text, score = heard[0] if heard else ("", None)
    if matcher.match(text):
        return "transcript"
    return "acoustic model" if score is not None and score >= sure else "n-best"


def loser(matcher: NameMatcher, triggered: bool, heard: list[Heard]) -> str:
    """The stage that lost a missed wake utterance, given what whisper heard in it."""
    if not triggered:
        return "trigger"
    if not heard:
        return "VAD / gate"
    if any(matcher.match(text) for text, _ in heard):
        # the name where a wake word may be, refused: it did not sound like the name to the acoustic
        # model, or whisper found it unlikely without the prompt
        return "acoustic model" if any(score is not None for _, score in heard) else "name check"
    said = words(" ".join(text for text, _ in heard))
    return "matcher" if any(matcher.is_name(w, b) for w, b in zip(said, ["", *said], strict=False)) else "whisper"


def dumped(seen: Wakes, stream: Stream, condition: str, matcher: NameMatcher) -> list[dict]:
    """One record per transcribed utterance: what whisper wrote, the model's best score in it and
    how long after the utterance's start it came, whether she woke, and the span it fell in."""
    out = []
    for start, end, text in seen.heard:
        inside_ = [(score, t) for t, score in seen.scored if start - SLACK_S <= t <= end + SLACK_S]
        score, at = max(inside_, default=(0.0, start))
        span = inside(end, stream.spans) or inside(start, stream.spans)
        kept = None
        if KEEP is not None and start in seen.audio:
            kept = KEEP / f"{stream.name}-{condition}-{start:.3f}.npy"
            np.save(kept, (np.clip(seen.audio[start], -1, 1) * 32767).astype(np.int16))
        out.append({"stream": stream.name, "condition": condition, "start": start, "end": end, "text": text,
                    "named": matcher.match(text) is not None, "score": score, "after_start": round(at - start, 3),
                    "candidates": [(round(t - start, 3), c) for c, t in inside_], "snr": seen.snr.get(start),
                    "woke": any(start <= t <= end + 0.05 for t in seen.wakes),
                    "said": span and span.text, "scene": span and span.scene, "voice": span and span.voice,
                    "audio": kept and str(kept)})
    return out


DUMP: list[dict] = []  # filled when --dump is given
KEEP: Path | None = None  # --keep-audio: where the audio of utterances the model scored is saved (int16 .npy)
KEEP_FROM = 0.3  # ... from this score


def run_wakes(engines: LoadedModels, engine: Engine, stream: Stream, condition: str, tally: Tally) -> None:
    matcher = matcher_of(engine.config)
    counting_ranks(engines, matcher, tally.hit_ranks, tally.hit_odds)
    seen, _ = front_end(engines, engine.config, stream.wav(condition))
    DUMP.extend(dumped(seen, stream, condition, matcher))
    hits = {id(s): t for t in seen.wakes if (s := inside(t, stream.spans))}
    triggered = {id(s) for t in seen.candidates if (s := inside(t, stream.spans))}
    two_stage = engine.config.wake_engine == "two_stage"
    tally.wake_total += len(stream.spans)
    alone = engine.config.wake_engine == "openwakeword"  # the model alone: whisper only hears what follows
    for s in stream.spans:
        heard = heard_over(seen, s.start, s.end)
        if id(s) in hits:
            sure = engine.config.wake_acoustic_sure
            found = "acoustic model" if alone else finder(matcher, heard, sure)
            count(tally.found_by, found)
            if (said := matcher.match(s.text)) and said.rest:  # the request said in the same breath
                tally.asked += 1
                taken = any(inside(t, [s]) and heard_fraction(said.rest, text) >= 0.5 for t, text in seen.turns)
                count(tally.answered if taken else tally.dropped, found)
        else:
            tally.missed.append((s, shown(heard)))
            count(tally.lost, "acoustic model" if alone else loser(matcher, id(s) in triggered or not two_stage, heard))
    tally.trigger_missed += sum(id(s) not in triggered for s in stream.spans)


def run_other(engines: LoadedModels, engine: Engine, streams: list[Stream], tally: Tally) -> None:
    matcher = matcher_of(engine.config)
    counting_ranks(engines, matcher, tally.false_ranks, tally.false_odds)
    for stream in streams:
        seen, _ = front_end(engines, engine.config, stream.wav("clean"))
        DUMP.extend(dumped(seen, stream, "other", matcher))
        tally.other_s += stream.speech_s
        lookalikes = [s for s in stream.spans if s.scene == "lookalikes"]
        tally.lookalike_s += sum(s.end - s.start for s in lookalikes)
        tally.lookalikes += len(lookalikes)
        tally.false += [(stream.name, inside(t, stream.spans), shown(near(seen, t))) for t in seen.wakes]
        for t in seen.wakes:
            count(tally.false_by, "acoustic model" if engine.config.wake_engine == "openwakeword"
                  else finder(matcher, near(seen, t), engine.config.wake_acoustic_sure))
        tally.trigger_false += len(seen.candidates)
        print(f"    {stream.name}: {len(seen.wakes)} false wakes, {len(seen.candidates)} candidates", flush=True)


def idle_cpu(engines: LoadedModels, engine: Engine, stream: Stream) -> float:
    """ms of CPU per second of audio while listening to speech not meant for her (no memo)."""
    _, cpu = front_end(engines, engine.config, stream.wav("clean"))
    return cpu * 1000 / stream.seconds


def with_wake(engines: LoadedModels, engine: Engine, models: Models) -> LoadedModels:
    """`engines` with the wake model `engine` needs (the n-best check stays for all: only the
    engines that check names ask it)."""
    if engine.config.wake_engine == "two_stage" and engine.config.wake_trigger == "micro":
        return dataclasses.replace(engines, wake=MicroWakeModel(engine.config.wake_model))
    listener = engine.config.wake_listener
    return dataclasses.replace(engines, wake=listener and WakeModel(models.path("wakeword"), listener))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=wake_corpus.SETS, default="heldout")
    parser.add_argument("--trigger", type=float, default=VoiceConfig().wake_trigger_threshold,
                        help="the two-stage engine's trigger threshold")
    parser.add_argument("--baseline", action="store_true", help="also the phrase engine without the acoustic model")
    parser.add_argument("--floor", type=float, default=VoiceConfig().wake_acoustic_floor,
                        help="the acoustic score a name whisper wrote needs")
    parser.add_argument("--sure", type=float, default=VoiceConfig().wake_acoustic_sure,
                        help="the acoustic score that wakes her without whisper")
    parser.add_argument("--lead", type=float, default=VoiceConfig().wake_acoustic_lead_s,
                        help="how far into an utterance (s) the acoustic model's scores count")
    parser.add_argument("--only", help="run only this engine")
    parser.add_argument("--other-files", type=int, default=0, help="only the first N other-speech streams")
    parser.add_argument("--wakes-only", action="store_true", help="only the wake utterances (no false accepts)")
    parser.add_argument("--asr", choices=["ctranslate2", "whisper.cpp"], default="ctranslate2",
                        help="the ASR engine (default: the app's faster option; whisper.cpp's 15 s window makes the "
                             "phrase engine's ~1700 transcripts take most of an hour here)")
    parser.add_argument("--noisy-nbest-model", default=VoiceConfig().wake_nbest_noisy_model,
                        help="whose n-best readings check the name in noisy speech (\"\": tiny.en's, as in clean)")
    parser.add_argument("--name-floor", default=default_floor(),
                        help="the unprompted odds a name whisper wrote needs (\"off\": every name is taken, the app's "
                             "default; the odds are reported either way)")
    parser.add_argument("--dump", type=Path, help="write one JSON record per transcribed utterance here")
    parser.add_argument("--keep-audio", type=Path,
                        help=f"save the audio of utterances the model scored {KEEP_FROM} or more here (rules to try)")
    args = parser.parse_args()
    if args.keep_audio:
        global KEEP
        KEEP = args.keep_audio
        KEEP.mkdir(parents=True, exist_ok=True)
    began, load_before = time.monotonic(), os.getloadavg()
    corpus = wake_corpus.load((args.set,))
    models = Models()
    asr = VoiceConfig(wake_engine="off", asr_engine=args.asr)
    base = LoadedModels.load(asr, models)
    floor = None if args.name_floor == "off" else float(args.name_floor)
    base.hypotheses = name_hypotheses(VoiceConfig(wake_engine="phrase", wake_nbest_noisy_model=args.noisy_nbest_model,
                                                  wake_name_check=floor is not None,
                                                  wake_name_floor=VoiceConfig().wake_name_floor if floor is None
                                                  else floor),
                                      models, base.transcriber)
    folder, tag = wake_corpus.ROOT / "transcripts", asr.ct2_model if args.asr == "ctranslate2" else asr.asr_model
    memo = MemoTranscriber(base.transcriber, folder, tag)
    memoised = dataclasses.replace(base, transcriber=memo, hypotheses=base.hypotheses and MemoHypotheses(
        base.hypotheses, folder, asr.ct2_model, args.noisy_nbest_model))
    others = corpus.other[args.set][:args.other_files or None]
    results: list[tuple[Engine, dict[str, Tally], float]] = []
    for engine in engines_to_run(args.trigger, args.baseline, args.asr, args.floor, args.sure, args.lead):
        if args.only and engine.label != args.only:
            continue
        print(f"{engine.label}: {engine.describe}", flush=True)
        engines = with_wake(memoised, engine, models)
        tallies = {}
        for condition in ("clean", "noisy"):
            tally = tallies[condition] = Tally()
            run_wakes(engines, engine, corpus.wake[args.set][engine.corpus], condition, tally)
            print(f"  {condition}: missed {len(tally.missed)}/{tally.wake_total} ({tally.fr:.1%}), lost at "
                  f"{tally.lost}; found by {tally.found_by}; n-best rank of the name {tally.hit_ranks}; "
                  f"the name's odds {odds_text(tally.hit_odds)}; of {tally.asked} requests said with the name, "
                  f"half their words or more became her turn in {sum(tally.answered.values())} (found by "
                  f"{tally.answered}), not in {tally.dropped}", flush=True)
        if args.wakes_only:
            continue
        run_other(engines, engine, others, tallies["clean"])
        cpu = idle_cpu(with_wake(base, engine, models), engine, others[0])
        print(f"  other: {len(tallies['clean'].false)} false wakes in {tallies['clean'].other_s / 60:.1f} min of "
              f"speech ({tallies['clean'].fa_per_h:.2f}/h), found by {tallies['clean'].false_by}, n-best rank of "
              f"the name {tallies['clean'].false_ranks}, the name's odds {odds_text(tallies['clean'].false_odds)}; "
              f"idle CPU {cpu:.0f} ms/s", flush=True)
        results.append((engine, tallies, cpu))
    print(f"whisper calls {memo.calls}, memoised {memo.hits}")
    if args.dump:
        args.dump.write_text("\n".join(json.dumps(r) for r in DUMP) + "\n")
    if not results:  # --wakes-only: the figures printed above are all there is (no false accepts to report)
        return
    text = report(args, corpus, results, load_before, os.getloadavg(), time.monotonic() - began)
    print(text)
    if args.set == "heldout" and not args.other_files:
        floor = f"-floor{args.name_floor}" if args.name_floor != default_floor() else ""
        (RESULTS / f"wake-heldout{'-' + args.only if args.only else ''}{floor}.md").write_text(text)


def default_floor() -> str:
    """The app's: its floor if the check decides by default, else "off"."""
    config = VoiceConfig()
    return str(config.wake_name_floor) if config.wake_name_check else "off"


def odds_text(odds: list[float | None]) -> str:
    """The name's unprompted odds at each check, lowest first."""
    return "[" + ", ".join(f"{o:.1f}" for o in sorted(o for o in odds if o is not None)) + "]"


def report(args, corpus: Corpus, results, load_before, load_after, wall: float) -> str:
    which = args.set
    voices = wake_corpus.voices(which)
    other = corpus.other[which][:args.other_files or None]
    scenes: dict[str, float] = {}
    for stream in other:
        for s in stream.spans:
            scenes[s.scene] = scenes.get(s.scene, 0.0) + s.end - s.start
    noisy_lookalikes = wake_corpus.FOLDER[which] in wake_corpus.NOISY_LOOKALIKES
    flite = f"flite {', '.join(wake_corpus.FLITE_VOICES[which])} (random speeds and pitches), " \
        if which in wake_corpus.FLITE_VOICES else ""
    festival = "Festival " + ", ".join(v + (f" played x{f}" if f != 1.0 else "") for v, f in
                                       wake_corpus.FESTIVAL_VOICES[which]) + " (random speeds), " \
        if which in wake_corpus.FESTIVAL_VOICES else ""
    shifts = f" and played x{', x'.join(map(str, wake_corpus.PIPER_SHIFTS[which]))} (pitch and formants moved)" \
        if which in wake_corpus.PIPER_SHIFTS else ""
    lines = [
        "## Wake-word accuracy (tests/bench/wake_rates.py)",
        "",
        f"Command: `nice -n 19 .venv/bin/python tests/bench/wake_rates.py --set {which}"
        f"{' --baseline' if args.baseline else ''}{' --only ' + args.only if args.only else ''}"
        f"{' --name-floor ' + args.name_floor if args.name_floor != default_floor() else ''}`. "
        f"Machine: {os.cpu_count()} cores, {platform.machine()}; load average {load_before[0]:.1f} at the start, "
        f"{load_after[0]:.1f} at the end (a shared machine); wall time {wall:.0f} s (whisper's transcripts memoised "
        "from earlier runs where the audio was the same).",
        "",
        f"**Set: {which}** (corpus folder {wake_corpus.FOLDER[which]}) — {len(voices)} voices"
        f"{', texts and noise seeds never used for tuning' if which == 'heldout' else ''}: espeak-ng "
        f"{', '.join(wake_corpus.ESPEAK_VOICES[which])} at random speeds (130–200 wpm) and "
        f"pitches, {flite}{festival}and piper joe at length scales "
        f"{', '.join(map(str, wake_corpus.PIPER_SCALES[which]))}{shifts}. "
        f"Wake utterances: {wake_corpus.WAKES_PER_VOICE[which]} forms per voice (\"Hey <name>\" alone or with a "
        f"request), clean and with pink noise at {SNR_DB} dB SNR. Other speech: "
        f"{sum(scenes.values()) / 60:.1f} min of speech in {len(other)} streams "
        f"({', '.join(f'{k} {v / 60:.0f} min' for k, v in sorted(scenes.items()))}); TV scenes are over music, "
        "babble or noise beds at 5–15 dB SNR"
        f"{', and so are half the look-alike scenes' if noisy_lookalikes else ''}.",
        "",
        f"ASR: whisper tiny.en on {args.asr}. Targets: {TARGETS}.",
        "",
        "| engine | FR clean | FR 10 dB SNR | false accepts | FA per hour of speech | FA per hour, ordinary speech "
        "| look-alikes that woke her | idle CPU (ms per s of audio) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for engine, t, cpu in results:
        c, n = t["clean"], t["noisy"]
        lines.append(f"| {engine.label} | {len(c.missed)}/{c.wake_total} = {c.fr:.1%} | "
                     f"{len(n.missed)}/{n.wake_total} = {n.fr:.1%} | {len(c.false)} | {c.fa_per_h:.2f} | "
                     f"{c.ordinary_fa_per_h:.2f} | {c.lookalikes_taken}/{c.lookalikes} | {cpu:.0f} |")
    c = results[0][1]["clean"]  # the same other speech for every engine
    lines += ["", "Ordinary speech: the conversations, TV scenes and requests "
              f"({(c.other_s - c.lookalike_s) / 60:.1f} min); the look-alike scenes ({c.lookalike_s / 60:.1f} min) "
              "are greetings to other names chosen to sound like hers, counted apart."]
    lines += ["", "Where the misses were lost, and what found the name in each hit and false accept:", ""]
    for engine, t, _ in results:
        lines += [f"- **{engine.label}**: " + "; ".join(
            f"{condition}: lost at {tally.lost or 'none'}, found by {tally.found_by}, n-best rank of the name "
            f"{tally.hit_ranks}" for condition, tally in t.items())
            + "; requests said with the name that became her turn (half their words or more): " + ", ".join(
                f"{condition} {sum(tally.answered.values())}/{tally.asked} (not: {tally.dropped or 'none'})"
                for condition, tally in t.items())
            + f"; false accepts found by {t['clean'].false_by or 'none'}, n-best rank of the name in the other "
            f"speech {t['clean'].false_ranks} (\"-\": in no reading). The name's unprompted odds at each check "
            f"(a log-probability; taken from {args.name_floor}): wake utterances clean "
            f"{odds_text(t['clean'].hit_odds)}, noisy {odds_text(t['noisy'].hit_odds)}; other speech "
            f"{odds_text(t['clean'].false_odds)}."]
    lines += ["", "Engines:", ""]
    lines += [f"- **{engine.label}**: {engine.describe}." for engine, _, _ in results]
    for engine, t, _ in results:
        if engine.config.wake_engine == "two_stage":
            c, n = t["clean"], t["noisy"]
            lines += ["", f"Stage 1 alone ({engine.label}'s trigger, every candidate taken as a wake): misses "
                      f"{c.trigger_missed}/{c.wake_total} clean, {n.trigger_missed}/{n.wake_total} noisy; "
                      f"{c.trigger_false} candidates in the other speech "
                      f"({c.trigger_false / max(1e-9, c.other_s / 3600):.1f} per hour), which the second stage "
                      "must refuse."]
    for engine, t, _ in results:
        for condition, tally in t.items():
            if tally.missed:
                lines += ["", f"{engine.label}, {condition}: missed", ""]
                lines += [f"- {s.voice}: \"{s.text}\" — heard \"{heard}\"" for s, heard in tally.missed]
            if tally.false:
                lines += ["", f"{engine.label}: false accepts", ""]
                lines += [f"- {name}: " + (f"{s.voice} ({s.scene}): \"{s.text}\"" if s else "outside speech")
                          + f" — heard \"{heard}\"" for name, s, heard in tally.false]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
