"""Which model makes the better embedded default: every catalogue LLM on the companion bench.

    .venv/bin/python tests/bench/compare_models.py [--models qwen2.5-0.5b gemma3-270m] [--set seen|held|all]
                                                  [--threads 1] [--out FILE]

The prompts and the scoring rules are tests/bench/companion_prompts.md (written and committed before
any reply was read; the table is read from there, so the two cannot drift apart). Each model runs
in a real llama-server with the template the app gives it (the catalogue's `chat_template`) and the
embedded default's thread count; each prompt goes through the app's own path: local intents first
(`sidecar.intents`: an outfit request may never reach the model), then the engine's conversation
(`sidecar.conversation.Conversation`), the app's chat settings and samplers (`ChatConfig.sampling`),
the gateway's upstream client (`remote_api.upstream`, streaming), the prefix warmed before each
turn as the app warms it, and the app's handling of unknown outfit tags (ask again once, then the
closest outfit). First token and first clause (the app's sentence splitter) are timed from the
request; RSS is llama-server's peak.

Writes the table, every reply with its points, and a side-by-side transcript to
tests/bench/results/companion.md; prints the table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from remote_api.config import LlamaSection
from remote_api.llama_server import LlamaServer, default_binary
from remote_api.shared.models.catalogue import DEFAULT_LLM, find
from remote_api.shared.models.provision import Models
from remote_api.upstream import Upstream
from remote_api.upstream_types import ChatRequest, Finished, TokenDelta
from sidecar.config import ChatConfig, PersonaConfig, VoiceConfig
from sidecar.conversation import Conversation
from sidecar.intents import Intents, Wear
from sidecar.outfit_catalogue import Outfit, load_catalogue
from sidecar.outfit_tags import ASK_AGAIN, OUTFIT_TAG, settle, strip_tags
from sidecar.voice.sentences import SentenceSplitter, sentences_of

HERE = Path(__file__).resolve().parent
PROMPTS = HERE / "companion_prompts.md"
RESULTS = HERE / "results" / "companion.md"
SEED = 42
MAX_WORDS, MAX_ZH_CHARS = 60, 90
MARKERS = ("USER:", "ASSISTANT:", "User:", "<|", "<start_of_turn>", "###")
NOT_IN_CHARACTER = re.compile(r"language model|as an ai\b|i'm an? (?:\w+ )?ai\b|i am an? (?:\w+ )?ai\b|"
                              r"artificial intelligence|chatbot|assistant|openai|qwen|alibaba|smollm|gemma|google",
                              re.IGNORECASE)
# another name for herself: "my name is Arjun", "I'm Arjun" (a capitalised word that is not an adjective
# she might use of herself is taken for a name)
OTHER_NAME = re.compile(r"\b(?:[Mm]y name is|I'm|I am|[Cc]all me)\s+(?!Stella\b)([A-Z][a-z]+)\b")
NOT_NAMES = {"Here", "Glad", "Happy", "Sorry", "Sure", "So", "Not", "Just", "Always", "Doing", "Great", "Good", "Fine",
             "Really", "Excited", "Thrilled", "Proud", "Very", "Also", "Still", "Ready", "Going", "Feeling"}
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(seen|held2|held)\s*\|\s*(\w+)\s*\|\s*([\w-]+)\s*\|\s*(.+?)\s*\|"
                 r"\s*(.+?)\s*\|\s*$")
CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class Prompt:
    number: int
    set: str  # seen | held | held2 (outfit requests written after the held-out half was read)
    conversation: str
    category: str
    text: str
    pattern: re.Pattern[str] | None  # None: an outfit row
    outfits: tuple[str, ...] = ()  # an outfit row: the outfits that honour it

    @property
    def chinese(self) -> bool:
        return bool(CJK.search(self.text))


def read_prompts(path: Path = PROMPTS) -> list[Prompt]:
    """The bench's prompt table, as written."""
    prompts = []
    for line in path.read_text().splitlines():
        m = ROW.match(line)
        if m is None:
            continue
        number, which, conversation, category, text, expect = int(m[1]), m[2], m[3], m[4], m[5], m[6]
        expect = expect.strip("`").replace("\\|", "|")
        tag = re.fullmatch(r"\[outfit: ([\w|]+)\]", expect)
        if tag:
            prompts.append(Prompt(number, which, conversation, category, text, None, tuple(tag[1].split("|"))))
        else:
            prompts.append(Prompt(number, which, conversation, category, text, re.compile(expect, re.IGNORECASE)))
    if len(prompts) < 60 or [p.number for p in prompts] != list(range(1, len(prompts) + 1)):
        raise SystemExit(f"{path} should hold at least 60 numbered prompts; read {len(prompts)}")
    return prompts


@dataclass
class Answer:
    """What the app did with one prompt."""

    prompt: Prompt
    reply: str  # as the model wrote it ("" when a local intent handled it)
    finish: str
    wore: str | None = None  # the outfit the app ends up wearing
    via: str = ""  # intent | tag | named | asked again | closest
    first_token_ms: float = float("nan")
    first_clause_ms: float = float("nan")


@dataclass
class Scored:
    answer: Answer
    said: str
    gate: bool
    fresh: bool
    short: bool
    relevant: bool
    language: bool
    in_character: bool
    outfit_ok: bool
    problems: list[str] = field(default_factory=list)

    @property
    def points(self) -> int:
        return 0 if not self.gate else sum((self.fresh, self.short, self.relevant, self.language, self.in_character,
                                            self.outfit_ok))


def opening(said: str) -> str:
    """The first three words (Chinese: four characters) of a reply, for the fresh-opening rule."""
    if CJK.search(said[:8]):
        return re.sub(r"\W", "", said)[:4]
    return " ".join(re.findall(r"[a-z0-9']+", said.lower())[:3])


def score(answer: Answer, catalogue: tuple[Outfit, ...], openings: set[str]) -> Scored:
    """The bench's rules for one answer; `openings` holds the earlier replies' openings (and gets this one's)."""
    p = answer.prompt
    if answer.via == "intent":  # the app changed the outfit itself; nothing was said
        return Scored(answer, "", True, True, True, True, True, True, answer.wore in p.outfits)
    said = strip_tags(answer.reply).strip()
    problems = []
    if not said:
        problems.append("empty")
    problems += [f"marker {m}" for m in MARKERS if m in said]
    sentences = [s.strip().lower() for s in re.split(r"(?<=[.!?。！？])\s*", said) if s.strip()]
    if len(sentences) != len(set(sentences)):
        problems.append("a sentence repeated")
    words = re.findall(r"[a-z']+", said.lower())
    grams = [" ".join(words[i:i + 4]) for i in range(len(words) - 3)]
    if any(grams.count(g) >= 3 for g in set(grams)):
        problems.append("4 words thrice")
    first = opening(said)
    fresh = bool(first) and first not in openings
    openings.add(first)
    if not fresh:
        problems.append(f"opening '{first}' again")
    length_ok = len(CJK.findall(said)) <= MAX_ZH_CHARS if p.chinese else len(said.split()) <= MAX_WORDS
    short = answer.finish != "length" and length_ok
    if p.pattern is not None:
        relevant = bool(p.pattern.search(said))
    else:
        relevant = answer.wore in p.outfits
    if p.category == "unsafe" and not relevant:
        problems.append("does what it should refuse")
    letters = [ch for ch in said.lower().replace("stella", "") if ch.isalpha()]  # her name may stay in Latin
    cjk = len(CJK.findall(said))
    language = (cjk >= len(letters) / 2) if p.chinese else cjk == 0
    names = [n for n in OTHER_NAME.findall(said) if n not in NOT_NAMES]
    in_character = not NOT_IN_CHARACTER.search(said) and not names
    if names:
        problems.append(f"calls herself {names[0]}")
    ids = {o.id for o in catalogue}
    tags = OUTFIT_TAG.findall(answer.reply)
    outfit_ok = all(t in ids for t in tags) and (p.pattern is not None or answer.wore in p.outfits)
    return Scored(answer, said, not [x for x in problems if not x.startswith("opening")], fresh, short, relevant,
                  language, in_character, outfit_ok, problems)


async def _stream(upstream: Upstream, req: ChatRequest, began: float, answer: Answer | None = None) -> tuple[str, str]:
    """One reply through the gateway's upstream client; times its first token and first clause."""
    voice = VoiceConfig()
    splitter = SentenceSplitter(voice.first_clause_words, first_break_words=voice.first_break_words)
    pieces, finish = [], ""
    async with contextlib.aclosing(upstream.stream(req)) as stream:
        async for item in stream:
            if isinstance(item, TokenDelta):
                pieces.append(item.text)
                if answer is not None:
                    now = (time.perf_counter() - began) * 1000
                    if answer.first_token_ms != answer.first_token_ms:  # NaN: the first one
                        answer.first_token_ms = now
                    if answer.first_clause_ms != answer.first_clause_ms and splitter.feed(strip_tags(item.text)):
                        answer.first_clause_ms = now
            elif isinstance(item, Finished):
                finish = item.reason
    return "".join(pieces), finish


async def ask(upstream: Upstream, convo: Conversation, intents: Intents, chat: ChatConfig, p: Prompt) -> Answer:
    """What the app does with one typed prompt (sidecar.voice.turn_taking, sidecar.reply)."""
    intent = intents.parse(p.text)
    if isinstance(intent, Wear):
        return Answer(p, "", "stop", wore=intent.outfit, via="intent")
    sampling = chat.sampling()
    await _stream(upstream, ChatRequest(convo.prefix(), warm=True, temperature=0.0), 0.0)  # as the app warms it
    messages = convo.messages(p.text)
    began = time.perf_counter()
    answer = Answer(p, "", "")
    req = ChatRequest(messages, max_tokens=sampling["max_tokens"], temperature=sampling["temperature"], seed=SEED,
                      stop=sampling["stop"], repeat_penalty=sampling["repeat_penalty"],
                      dry_multiplier=sampling["dry_multiplier"])
    answer.reply, answer.finish = await _stream(upstream, req, began, answer)
    async def again(follow_up: list[dict[str, str]]) -> str:
        return (await _stream(upstream, ChatRequest(follow_up, **ASK_AGAIN), 0.0))[0]

    settled = await settle(answer.reply, p.text, messages, intents, again)
    answer.wore, answer.via = settled.wear, settled.via
    convo.record(p.text, " ".join(sentences_of(strip_tags(answer.reply))))  # what the app keeps of a typed turn
    return answer


@dataclass
class Run:
    model: str
    template: str
    threads: int
    scored: list[Scored]
    rss_mb: float

    def of(self, which: str) -> list[Scored]:
        return [s for s in self.scored if which == "all" or s.answer.prompt.set == which]

    def total(self, which: str = "all") -> int:
        return sum(s.points for s in self.of(which))

    def count(self, rule: str, which: str = "all") -> int:
        return sum(bool(s.gate and getattr(s, rule)) for s in self.of(which))

    def timing(self, attr: str) -> tuple[float, float]:
        values = sorted(v for s in self.scored if (v := getattr(s.answer, attr)) == v)
        if not values:
            return float("nan"), float("nan")
        return statistics.median(values), values[min(len(values) - 1, int(0.9 * len(values)))]


def run_model(name: str, prompts: list[Prompt], threads: int, log_dir: Path, persona: PersonaConfig,
              chat: ChatConfig) -> Run:
    spec = find(name)
    catalogue = load_catalogue()
    server = LlamaServer(default_binary(), Models().path(name), parallel=1, ctx=LlamaSection.ctx, threads=threads,
                         chat_template=spec.chat_template, log_path=log_dir / f"{name}.log")

    async def go() -> list[Answer]:
        answers: list[Answer] = []
        upstream = Upstream(server.url, api="chat", api_key=server.api_key)
        try:
            conversation, convo = "", Conversation(persona, chat, outfits=catalogue)
            intents = Intents(catalogue, persona.name)
            for p in prompts:
                if p.conversation != conversation:  # each conversation starts fresh
                    conversation, convo = p.conversation, Conversation(persona, chat, outfits=catalogue)
                answers.append(await ask(upstream, convo, intents, chat, p))
        finally:
            await upstream.aclose()
        return answers

    with server:
        answers = asyncio.run(go())
        assert server.process is not None
        status = Path(f"/proc/{server.process.pid}/status").read_text()
        rss_mb = int(re.search(r"VmHWM:\s+(\d+)", status)[1]) / 1024
    openings: set[str] = set()
    scored = [score(a, catalogue, openings) for a in answers]
    return Run(name, spec.chat_template or "the GGUF's own (--jinja)", threads, scored, rss_mb)


def table(runs: list[Run]) -> list[str]:
    n = {w: len(runs[0].of(w)) for w in ("seen", "held", "held2")} if runs else {}
    lines = [f"| model | threads | held /{6 * n.get('held', 0)} | seen /{6 * n.get('seen', 0)} "
             f"| held2 /{6 * n.get('held2', 0)} | loops "
             "| repeated openings | outfit requests honoured | identity kept | right language | first token ms p50/p90 "
             "| first clause ms p50/p90 | RSS MB |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        outfit = [s for s in r.scored if s.answer.prompt.pattern is None]
        honoured = sum(s.answer.wore in s.answer.prompt.outfits for s in outfit)
        (t50, t90), (c50, c90) = r.timing("first_token_ms"), r.timing("first_clause_ms")
        lines.append(f"| {r.model} | {r.threads} | {r.total('held')} | {r.total('seen')} | {r.total('held2')} | "
                     f"{sum(not s.gate for s in r.scored)} | {sum(not s.fresh for s in r.scored)} | "
                     f"{honoured}/{len(outfit)} | {r.count('in_character')}/{len(r.scored)} | "
                     f"{r.count('language')}/{len(r.scored)} | {t50:.0f}/{t90:.0f} | {c50:.0f}/{c90:.0f} | "
                     f"{r.rss_mb:.0f} |")
    return lines


def report(runs: list[Run], command: str) -> str:
    lines = ["# Companion bench", "", f"Written by `{command}` (prompts and rules: "
             "tests/bench/companion_prompts.md). Points per reply 0-6: fresh opening, short, relevant, right language, "
             "in character, valid outfit; a reply that loops scores 0. Outfit rows handled by a local intent score "
             "full marks and show `(intent)`.", "", *table(runs), ""]
    for r in runs:
        cats: dict[str, list[int]] = {}
        for s in r.scored:
            cats.setdefault(s.answer.prompt.category, []).append(s.points)
        by = ", ".join(f"{c} {sum(v)}/{6 * len(v)}" for c, v in cats.items())
        lines.append(f"- **{r.model}** by category: {by}")
    lines += ["", "## Side by side", "", "| # | set | prompt | " + " | ".join(r.model for r in runs) + " |",
              "|---|---|---|" + "---|" * len(runs)]
    for i, s0 in enumerate(runs[0].scored if runs else []):
        cells = []
        for r in runs:
            s = r.scored[i]
            a = s.answer
            text = "(intent)" if a.via == "intent" else (a.reply.strip().replace("|", "\\|").replace("\n", " ⏎ ")
                                                           or "(empty)")
            extra = f" → wears {a.wore} ({a.via})" if a.wore and a.via != "intent" else ""
            marks = "".join(c if ok else "·" for c, ok in zip("FSRLIO", (s.fresh, s.short, s.relevant, s.language,
                                                                          s.in_character, s.outfit_ok), strict=True))
            why = f" — {', '.join(s.problems)}" if s.problems else ""
            cells.append(f"{text}{extra} **{s.points}** `{marks}`{why}")
        p = s0.answer.prompt
        lines.append(f"| {p.number} | {p.set} | {p.text} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compare_models", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=[DEFAULT_LLM])
    parser.add_argument("--set", choices=["seen", "held", "held2", "all"], default="all",
                        help="which prompts to ask (tune on seen; judge on held and held2)")
    parser.add_argument("--threads", type=int, default=LlamaSection.threads,
                        help="llama-server threads (default: the embedded default's)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    prompts = [p for p in read_prompts() if args.set == "all" or p.set == args.set]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            began = time.monotonic()
            runs.append(run_model(name, prompts, args.threads, Path(tmp), PersonaConfig(), ChatConfig()))
            print(f"{name}: {runs[-1].total()}/{6 * len(prompts)} in {time.monotonic() - began:.0f} s", flush=True)
    command = "python tests/bench/compare_models.py " + " ".join(
        ["--models", *args.models, "--set", args.set, "--threads", str(args.threads)])
    text = report(runs, command)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    print("\n".join(table(runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
