"""Which small model makes the better embedded default: every catalogue LLM on the companion rubric.

    .venv/bin/python tests/bench/compare_models.py [--models gemma3-270m smollm2-135m] [--out FILE]

The questions and the scoring rules are tests/bench/companion_rubric.md (written before any reply
was seen; its question table is read from there, so the two cannot drift apart). Each model runs
in a real llama-server with the template the app gives it (the catalogue's `chat_template`), and
each question goes through the engine's own conversation (`sidecar.conversation.Conversation`:
persona line with the outfit tag offer, the one-shot greeting, the history of the same
conversation) with the app's chat settings. The replies, their points and a summary are written
to tests/bench/results/compare_models.md; the summary is printed.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from remote_api.llama_server import LlamaServer, default_binary
from remote_api.shared.models.catalogue import find, llms
from remote_api.shared.models.provision import Models
from sidecar.config import ChatConfig, PersonaConfig
from sidecar.conversation import Conversation
from sidecar.outfit_catalogue import load_catalogue
from sidecar.outfit_tags import OUTFIT_TAG, strip_tags
from sidecar.voice.sentences import sentences_of

HERE = Path(__file__).resolve().parent
RUBRIC = HERE / "companion_rubric.md"
RESULTS = HERE / "results" / "compare_models.md"
SEED = 42
# the rubric's "clean" and "in character" rules, as written there
MARKERS = ("USER:", "ASSISTANT:", "User:", "[Name", "<|", "<start_of_turn>", "###")
NOT_IN_CHARACTER = re.compile(r"language model|as an ai\b|i'm an ai\b|i am an ai\b|artificial intelligence|chatbot|"
                              r"assistant|openai|hugging|smollm|gemma|google", re.IGNORECASE)
OTHER_NAME = re.compile(r"my name is (?!stella\b)[a-z]+", re.IGNORECASE)
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*(.+?)\s*\|\s*(.+)\|\s*$")


@dataclass(frozen=True)
class Question:
    number: int
    conversation: str
    text: str
    pattern: re.Pattern[str] | None  # None: an outfit row, answered by its tag
    outfit: str | None


def rubric_questions(path: Path = RUBRIC) -> list[Question]:
    """The rubric's question table, as written."""
    questions = []
    for line in path.read_text().splitlines():
        m = ROW.match(line)
        if m is None:
            continue
        number, conversation, text, expect = int(m[1]), m[2], m[3], m[4].strip()
        tag = re.search(r"\[outfit: (\w+)\]", expect)
        if tag:
            questions.append(Question(number, conversation, text, None, tag[1]))
        else:
            pattern = expect.strip("`").replace("\\|", "|")
            questions.append(Question(number, conversation, text, re.compile(pattern, re.IGNORECASE), None))
    if len(questions) != 30 or [q.number for q in questions] != list(range(1, 31)):
        raise SystemExit(f"{path} should hold questions 1-30; read {len(questions)}")
    return questions


@dataclass
class Scored:
    question: Question
    reply: str  # as the model wrote it
    finish: str
    clean: bool
    brief: bool
    answers: bool
    in_character: bool
    problems: list[str] = field(default_factory=list)

    @property
    def points(self) -> int:
        return 0 if not self.clean else 1 + self.brief + self.answers + self.in_character


def score(q: Question, reply: str, finish: str) -> Scored:
    """The rubric's four points for one reply."""
    said = strip_tags(reply).strip()
    problems = []
    if not said:
        problems.append("empty")
    problems += [f"marker {m}" for m in MARKERS if m in said]
    sentences = [s.strip().lower() for s in re.split(r"(?<=[.!?])\s+", said) if s.strip()]
    if len(sentences) != len(set(sentences)):
        problems.append("a sentence repeated")
    words = re.findall(r"[a-z']+", said.lower())
    grams = [" ".join(words[i:i + 4]) for i in range(len(words) - 3)]
    if any(grams.count(g) >= 3 for g in set(grams)):
        problems.append("4 words thrice")
    if q.outfit is not None:
        tags = OUTFIT_TAG.findall(reply)
        answers = bool(tags) and all(t == q.outfit for t in tags)
    else:
        assert q.pattern is not None
        answers = bool(q.pattern.search(said))
    in_character = not NOT_IN_CHARACTER.search(said) and not OTHER_NAME.search(said)
    return Scored(q, reply, finish, not problems, finish != "length", answers, in_character, problems)


@dataclass
class Run:
    model: str
    template: str
    scored: list[Scored]
    first_token_ms: list[float]
    tokens_per_s: list[float]

    def total(self, attr: str | None = None) -> int:
        return sum(s.points if attr is None else (s.clean and getattr(s, attr)) for s in self.scored)


def run_model(name: str, questions: list[Question], log_dir: Path) -> Run:
    spec = find(name)
    chat = ChatConfig()
    outfits = load_catalogue()
    server = LlamaServer(default_binary(), Models().path(name), parallel=1, ctx=2048,
                         chat_template=spec.chat_template, log_path=log_dir / f"{name}.log")
    scored: list[Scored] = []
    first_ms: list[float] = []
    speed: list[float] = []
    with server, httpx.Client(base_url=server.url, headers=server.headers, timeout=120) as http:
        conversation, convo = "", Conversation(PersonaConfig(), chat, outfits=outfits)
        for q in questions:
            if q.conversation != conversation:  # each conversation of the rubric starts fresh
                conversation, convo = q.conversation, Conversation(PersonaConfig(), chat, outfits=outfits)
            body = {"messages": convo.messages(q.text), "max_tokens": chat.max_tokens,
                    "temperature": chat.temperature, "stop": chat.stop, "seed": SEED, "stream": False}
            resp = http.post("/v1/chat/completions", json=body)
            resp.raise_for_status()
            data = resp.json()
            reply = data["choices"][0]["message"]["content"] or ""
            finish = data["choices"][0].get("finish_reason") or ""
            timings = data.get("timings", {})
            first_ms.append(float(timings.get("prompt_ms", 0.0)))
            speed.append(float(timings.get("predicted_per_second", 0.0)))
            scored.append(score(q, reply, finish))
            # what the app keeps of a typed turn's reply (sidecar/reply.py)
            convo.record(q.text, " ".join(sentences_of(strip_tags(reply))))
    return Run(name, spec.chat_template or "the GGUF's own (--jinja)", scored, first_ms, speed)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


def decide(runs: list[Run]) -> str:
    """The rubric's decision rule: higher total; within 4 points, more "answers"; then the smaller download."""
    def key(run: Run) -> tuple[int, int, int]:
        return (run.total(), run.total("answers"), -find(run.model).total_size)

    best = max(runs, key=key)
    for other in runs:
        if other is not best and abs(other.total() - best.total()) <= 4:
            best = max((best, other), key=lambda r: (r.total("answers"), -find(r.model).total_size))
    return best.model


def report(runs: list[Run], winner: str) -> str:
    lines = ["# Model comparison on the companion rubric", "",
             "Written by `python tests/bench/compare_models.py` (rules: companion_rubric.md). "
             "Points: clean/brief/answers/in character; a reply that is not clean scores 0.", "",
             "| model | template | total /120 | clean | brief | answers | in character | prompt ms (median) "
             "| tokens/s (median) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r.model} | {r.template} | {r.total()} | {sum(s.clean for s in r.scored)} | "
                     f"{r.total('brief')} | {r.total('answers')} | {r.total('in_character')} | "
                     f"{_median(r.first_token_ms):.0f} | {_median(r.tokens_per_s):.0f} |")
    lines += ["", f"**Embedded default by the rubric's rule: {winner}**", ""]
    for r in runs:
        lines += [f"## {r.model}", "", "| # | question | reply | points | problems |", "|---|---|---|---|---|"]
        for s in r.scored:
            reply = s.reply.strip().replace("|", "\\|").replace("\n", " ⏎ ") or "(empty)"
            marks = "".join(c if ok else "·" for c, ok in zip("CBAI", (s.clean, s.brief, s.answers, s.in_character),
                                                               strict=True))
            lines.append(f"| {s.question.number} | {s.question.text} | {reply} | {s.points} {marks} | "
                         f"{', '.join(s.problems) or ''} {'(cut at the limit)' if not s.brief else ''} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compare_models", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=[s.name for s in llms()])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    questions = rubric_questions()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            began = time.monotonic()
            runs.append(run_model(name, questions, Path(tmp)))
            print(f"{name}: {runs[-1].total()}/120 in {time.monotonic() - began:.0f} s", flush=True)
    winner = decide(runs)
    text = report(runs, winner)
    args.out.write_text(text + "\n")
    print(text.split("\n## ")[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
