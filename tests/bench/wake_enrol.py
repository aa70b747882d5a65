"""Personal enrolment's false rejects and false accepts: each voice of a wake set enrolled in turn.

Run: ``OPENBLAS_NUM_THREADS=1 nice .venv/bin/python tests/bench/wake_enrol.py`` (the held-out set;
writes ``tests/bench/results/wake-enrol-heldout.md``). About 15 minutes on 2 cores; the model's hops
of each stream are cached. It needs the untaught phrase engine's report on the same set
(``tests/bench/wake_rates.py --set heldout --only phrase``, in results/): see below.

For each voice of the set, as a user of that voice would: its first three wake utterances (clean)
go through the app's `TakeRecorder` exactly as the microphone's hops would, and `Enrolment` makes
the verifier against the shipped bank (`others`). Then, as the app's acoustic wake and turn taker
weigh them (`AcousticOpinion` with the verifier's scores of the hops over the model's floor, for
each pair of bands in POLICIES): the voice's other three wake utterances, clean and with the
corpus's noise at 10 dB SNR, are false rejects if they do not wake her; every hop in the set's
other speech (an hour of it, all voices, the enrolled voice's own among them) that the model scores
over its floor opens a candidate, candidates closer than the refractory time are one, and each that
wakes her is a false accept. Other voices' wake utterances that would still wake her are counted
too ("raises the bar for other voices"). Between the bands the taught engine decides as the
untaught one does, on whisper's reading: that outcome is taken from the untaught report (the same
utterances, the same rule), not run again here.

Not through the microphone sink: `tests/desktop/test_wake_enrol.py` covers that path.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from remote_api.shared.models.provision import Models  # noqa: E402
from sidecar.config import VoiceConfig  # noqa: E402
from sidecar.voice.wake import WakeModel  # noqa: E402
from sidecar.voice.wake_confirm import SLACK_S, AcousticOpinion  # noqa: E402
from sidecar.voice.wake_verifier import TAKES, Enrolment, TakeRecorder, others  # noqa: E402
from tests.voice import wake_corpus  # noqa: E402
from tests.voice.wake_corpus import SNR_DB, Span, Stream  # noqa: E402

RESULTS = Path(__file__).parent / "results"
# (wake_personal, wake_stranger): her voice from the first, another voice under the second, whisper
# decides in between; (p, p) is two bands (under `personal`, never), (p, 0) never refuses a voice
POLICIES = ((0.9, 0.9), (0.9, 0.8), (0.9, 0.7), (0.9, 0.5), (0.9, 0.0), (0.8, 0.6), (0.95, 0.7))
REFRACTORY_S = 1.5  # AcousticWake's


@dataclass
class Hops:
    """One stream's hops through the app's model: scores, windows (all, or those over the floor) and audio."""

    score: np.ndarray  # (n,)
    t: np.ndarray  # (n,) each hop's end (s)
    window: np.ndarray  # (k, 1536)
    kept: np.ndarray  # (k,) which hops the windows are of
    pcm: np.ndarray | None  # int16, for the wake streams (enrolment's takes)


def hops_of(model: WakeModel, stream: Stream, condition: str, floor: float, keep_all: bool) -> Hops:
    name = f"{stream.name}-{condition}-{'all' if keep_all else floor}.npz"
    cache = wake_corpus.ROOT / "enrol2" / stream.folder / name
    pcm = stream.pcm(condition)
    if cache.exists():
        with np.load(cache) as f:
            return Hops(f["score"], f["t"], f["window"].astype(np.float32), f["kept"], pcm if keep_all else None)
    model.reset()
    hops = model.hops(pcm)
    score = np.array([h.score for h in hops], np.float32)
    kept = np.arange(len(hops)) if keep_all else np.where(score >= floor)[0]
    window = np.stack([hops[i].window for i in kept]) if len(kept) else np.zeros((0, 1536), np.float32)
    ends = np.array([len(h.pcm) > 0 for h in hops])  # a step's last hop carries its audio (`wake.Hop`)
    t = (np.cumsum(ends) + ~ends) * model.step / 16000  # the end of each hop's step
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, score=score, t=t, window=window.astype(np.float16), kept=kept)
    return Hops(score, t, window, kept, pcm if keep_all else None)


def candidates(h: Hops, floor: float) -> list[np.ndarray]:
    """The kept hops over the floor, grouped as the acoustic wake's refractory time groups them."""
    over = [i for i, k in enumerate(h.kept) if h.score[k] >= floor]
    groups: list[list[int]] = []
    for i in over:
        if groups and h.t[h.kept[i]] < h.t[h.kept[groups[-1][0]]] + REFRACTORY_S:
            groups[-1].append(i)
        else:
            groups.append([i])
    return [np.array(g) for g in groups]


@dataclass
class Untaught:
    """What the phrase engine decided on each utterance before anyone was taught: the wake utterances
    it missed and the other speech it woke on (wake_rates.py's report). Between the bands, a taught
    engine decides as the untaught one did (whisper's reading and the model's score, the same rule)."""

    missed: dict[str, set[tuple[str, str]]]  # condition -> {(voice, text)}
    false: set[tuple[str, str, str]]  # {(stream, voice, text)}

    @classmethod
    def read(cls, path: Path) -> Untaught:
        missed: dict[str, set[tuple[str, str]]] = {"clean": set(), "noisy": set()}
        false: set[tuple[str, str, str]] = set()
        section = ""
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("phrase, ") and line.endswith(": missed"):
                section = line.split(", ")[1].split(":")[0]
            elif line == "phrase: false accepts":
                section = "false"
            elif line.startswith("- ") and section and '" — heard "' in line:
                said = line[2:].split('" — heard "')[0]
                who, text = said.split(': "', 1)
                if section == "false":
                    stream, voice = who.split(": ", 1)
                    false.add((stream, voice.rsplit(" (", 1)[0], text))
                else:
                    missed[section].add((who, text))
            elif line and not line.startswith("- "):  # the section's list is over
                section = ""
        return cls(missed, false)


def woke(h: Hops, rows: np.ndarray, personal: np.ndarray, opinion: AcousticOpinion, untaught: bool) -> bool:
    """As the turn taker weighs an utterance's candidates (hops over the floor): their best score and
    the verifier's best; `untaught`, whether the engine woke there before anyone was taught (whisper's
    reading then decides, between the bands)."""
    if not len(rows):
        return False
    score, mine = float(h.score[h.kept[rows]].max()), float(personal[rows].max())
    return opinion.sure_of(score, mine) or (untaught and not opinion.stranger_to(mine))


def span_rows(h: Hops, start: float, end: float, floor: float) -> np.ndarray:
    """The kept hops inside the utterance that the model scored over its floor (the candidates)."""
    t = h.t[h.kept]
    return np.where((t >= start - SLACK_S) & (t <= end + SLACK_S) & (h.score[h.kept] >= floor))[0]


def span_at(stream: Stream, t: float) -> Span | None:
    """The utterance a candidate at `t` falls in (the wake fires up to SLACK_S after its end)."""
    return next((s for s in stream.spans if s.start - SLACK_S <= t <= s.end + SLACK_S), None)


def enrol(model: WakeModel, h: Hops, spans: list, bank: np.ndarray, floor: float):
    """The app's enrolment on the hops from just before the first take to just after the last."""
    assert h.pcm is not None
    recorder, enrolment = TakeRecorder(model.windows, floor), Enrolment()
    step = model.step
    # from just after the utterance before the first take (the corpus leaves 2.5 s between them)
    inside = np.where((h.t >= spans[0].start - 2.0) & (h.t <= spans[-1].end + 1.5))[0]
    for i in inside:
        n = int(round(h.t[i] * 16000 / step)) - 1  # the hop's step
        last = i + 1 == len(h.t) or h.t[i + 1] != h.t[i]
        pcm = h.pcm[n * step:(n + 1) * step] if last else np.zeros(0, np.int16)
        heard = recorder.hop(pcm, h.window[i], float(h.score[i]))
        if heard is not None and not enrolment.done:
            enrolment.takes.append(recorder.take(heard))
    return enrolment.verifier(bank) if enrolment.done else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=wake_corpus.SETS, default="heldout")
    args = parser.parse_args()
    started, load = time.time(), os.getloadavg()
    config = VoiceConfig()
    floor = config.wake_acoustic_floor
    corpus = wake_corpus.load((args.set,))
    model = WakeModel(Models().path("wakeword"), "hey_stella")
    wake_stream = corpus.wake[args.set]["phrase"]
    wake = {c: hops_of(model, wake_stream, c, floor, keep_all=True) for c in ("clean", "noisy")}
    other = [hops_of(model, s, "clean", floor, keep_all=False) for s in corpus.other[args.set]]
    other_s = sum(s.speech_s for s in corpus.other[args.set])
    other_voice = [np.array([next((sp.voice for sp in s.spans if sp.start - 0.2 <= h.t[k] <= sp.end + 1.0), "")
                             for k in h.kept]) for s, h in zip(corpus.other[args.set], other, strict=True)]
    report = RESULTS / f"wake-{args.set}-phrase.md"
    if not report.exists():
        raise SystemExit(f"{report} is missing: run tests/bench/wake_rates.py --set {args.set} --only phrase first "
                         "(whisper's reading decides between the bands)")
    untaught = Untaught.read(report)

    def untaught_woke_other(stream: Stream, h: Hops, rows: np.ndarray) -> bool:
        span = span_at(stream, float(h.t[h.kept[rows[0]]]))
        return span is not None and (stream.name, span.voice, span.text) in untaught.false

    other_before = [[untaught_woke_other(s, h, rows) for rows in candidates(h, floor)]
                    for s, h in zip(corpus.other[args.set], other, strict=True)]
    bank = others("hey_stella")
    voices = list(dict.fromkeys(s.voice for s in wake_stream.spans))
    tally = {p: dict(fr_clean=0, fr_noisy=0, tests=0, fa=0, fa_own=0, others_woke=0, others=0) for p in POLICIES}
    not_enrolled = []

    def wakes(c: str, s: Span, scored: np.ndarray, opinion: AcousticOpinion) -> bool:
        rows = span_rows(wake[c], s.start, s.end, floor)
        return woke(wake[c], rows, scored, opinion, (s.voice, s.text) not in untaught.missed[c])

    for voice in voices:
        spans = [s for s in wake_stream.spans if s.voice == voice]
        verifier = enrol(model, wake["clean"], spans[:TAKES], bank, floor)
        if verifier is None:
            not_enrolled.append(voice)
            continue
        scored = {c: verifier.score(h.window) for c, h in wake.items()}
        scored_other = [verifier.score(h.window) if len(h.kept) else np.zeros(0) for h in other]
        someone_else = [s for s in wake_stream.spans if s.voice != voice][::5]
        for (personal, stranger), t in tally.items():
            opinion = AcousticOpinion(floor, config.wake_acoustic_sure, personal, stranger)
            for s in spans[TAKES:]:
                t["tests"] += 1
                for c in ("clean", "noisy"):
                    t[f"fr_{c}"] += not wakes(c, s, scored[c], opinion)
            for h, p, who, before in zip(other, scored_other, other_voice, other_before, strict=True):
                for rows, was in zip(candidates(h, floor), before, strict=True):
                    if woke(h, rows, p, opinion, was):
                        t["fa"] += 1
                        t["fa_own"] += bool((who[rows] == voice).any())
            t["others"] += len(someone_else)
            t["others_woke"] += sum(wakes("clean", s, scored["clean"], opinion) for s in someone_else)
        print(f"  {voice} enrolled", flush=True)
    enrolled = len(voices) - len(not_enrolled)
    lines = [
        "## Personal enrolment (tests/bench/wake_enrol.py)",
        "",
        f"Command: `OPENBLAS_NUM_THREADS=1 nice .venv/bin/python tests/bench/wake_enrol.py --set {args.set}`. "
        f"Machine: {os.cpu_count()} cores, {platform.machine()}; load {load[0]:.1f} at the start; wall time "
        f"{time.time() - started:.0f} s. Set {args.set} (folder {wake_corpus.FOLDER[args.set]}): {len(voices)} voices, "
        f"each enrolled in turn on its first {TAKES} wake utterances; {enrolled} enrolled"
        + (f" (not: {', '.join(not_enrolled)} — no take reached the model's floor)" if not_enrolled
           else "") + f". Other speech: {other_s / 60:.1f} min of all voices. Model floor {floor}.",
        "",
        "| her voice from | another voice under | FR clean | FR 10 dB SNR | FA per hour (mean over enrolled "
        "voices) | of them in the enrolled voice's own speech | other voices' wake words still waking her |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (personal, stranger), t in tally.items():
        n = max(t["tests"], 1)
        lines.append(f"| {personal} | {stranger} | {t['fr_clean']}/{t['tests']} = {t['fr_clean'] / n:.1%} | "
                     f"{t['fr_noisy']}/{t['tests']} = {t['fr_noisy'] / n:.1%} | "
                     f"{t['fa'] / max(enrolled, 1) / (other_s / 3600):.2f} | {t['fa_own']} | "
                     f"{t['others_woke']}/{t['others']} = {t['others_woke'] / max(t['others'], 1):.0%} |")
    lines += ["", f"Noisy: the corpus's music, babble and noise beds at {SNR_DB} dB SNR (enrolment's own noisy "
              "copies are pink noise at 10 and 5 dB)."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.set == "heldout":
        (RESULTS / "wake-enrol-heldout.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
