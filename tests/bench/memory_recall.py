"""Does she remember you? Multi-session conversations on the real default model and the real encrypted store.

    .venv/bin/python tests/bench/memory_recall.py [--set seen|held|all] [--model qwen2.5-1.5b] [--out FILE]

The people, what they say and what they are asked are tests/bench/memory_prompts.md (committed before the
first run; the scoring rules are there). Each person's two sessions go through the app's own conversation
(`sidecar.conversation.Conversation` with the store's history and memory, `sidecar.engine.stored`) and
chat settings, to a real llama-server running the model with the catalogue's template and the embedded
default's thread count, the prefix warmed before each turn as the app warms it; the store is closed and
opened again between sessions (the app restarted). Each question is then asked three ways (`MODES`): as the
app does (history and memory), without memory (history only, as before memory), and with the full-text
recall alone (no history, no newest facts: only what the question's words find), and timed: building the
turn's messages (the recall: the store's queries, on the critical path) and the first token after the
prefix was warmed as the app warms it. Last, facts are forgotten and the store's decrypted pages searched
for them.

Appends the figures and every answer to tests/bench/results/memory.md; prints the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import secrets
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from remote_api.config import LlamaSection
from remote_api.llama_server import LlamaServer, default_binary
from remote_api.shared.models.catalogue import DEFAULT_LLM, find
from remote_api.shared.models.provision import Models
from remote_api.upstream import Upstream
from remote_api.upstream_types import ChatRequest, Finished, TokenDelta
from sidecar.config import ChatConfig, PersonaConfig
from sidecar.conversation import Conversation
from sidecar.engine.stored import StoreHistory, StoreMemory
from sidecar.outfit_catalogue import load_catalogue
from sidecar.outfit_tags import strip_tags
from sidecar.store import RawKey, Store
from sidecar.voice.sentences import sentences_of
from tests.store.pages import decrypted

HERE = Path(__file__).resolve().parent
PROMPTS = HERE / "memory_prompts.md"
RESULTS = HERE / "results" / "memory.md"
SEED = 42
ROW = re.compile(r"^\|(.+)\|\s*$")
# How each question is asked: the chat settings' history and memory budgets (tokens).
MODES = {"app": {}, "history only": {"memory_tokens": 0, "recall_tokens": 0},
         "recall only": {"history_tokens": 0, "memory_tokens": 0}}


@dataclass(frozen=True)
class Told:
    person: str
    set: str
    session: int
    text: str


@dataclass(frozen=True)
class Asked:
    person: str
    set: str
    question: str
    answer: str  # a regular expression
    wrong: str
    forget: str

    def recalls(self, reply: str) -> bool:
        return names(self.answer, reply)


def names(pattern: str, reply: str) -> bool:
    """The reply names what `pattern` matches, spaces and case ignored ("SpiritedAway" is Spirited Away;
    memory_prompts.md, amendment of 2026-12-07)."""
    return bool(re.search(pattern, reply, re.I) or re.search(pattern.replace(" ", ""), re.sub(r"\s+", "", reply), re.I))


@dataclass
class Reply:
    asked: Asked
    mode: str
    text: str
    build_ms: float  # building the messages: the recall's cost on the critical path
    first_token_ms: float


def _cells(line: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", ROW.match(line)[1])]


def read_prompts(path: Path = PROMPTS) -> tuple[list[Told], list[Asked]]:
    told, asked, section = [], [], ""
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif ROW.match(line) and not set(line) <= set("|- ") and not line.startswith("| person"):
            cells = _cells(line)
            if section == "Told":
                told.append(Told(cells[0], cells[1], int(cells[2]), cells[3]))
            elif section == "Asked":
                asked.append(Asked(*cells[:6]))
    return told, asked


async def _stream(upstream: Upstream, req: ChatRequest) -> tuple[str, float]:
    began, first, pieces = time.perf_counter(), float("nan"), []
    async with contextlib.aclosing(upstream.stream(req)) as stream:
        async for item in stream:
            if isinstance(item, TokenDelta):
                if first != first:
                    first = (time.perf_counter() - began) * 1000
                pieces.append(item.text)
            elif isinstance(item, Finished):
                pass
    return "".join(pieces), first


def _request(messages: list[dict[str, str]], chat: ChatConfig) -> ChatRequest:
    s = chat.sampling()
    return ChatRequest(messages, max_tokens=s["max_tokens"], temperature=0.0, seed=SEED, stop=s["stop"],
                       repeat_penalty=s["repeat_penalty"], dry_multiplier=s["dry_multiplier"])


class Bench:
    def __init__(self, upstream: Upstream, folder: Path) -> None:
        self.upstream = upstream
        self.folder = folder
        self.keys: dict[str, RawKey] = {}
        self.persona = PersonaConfig()
        self.catalogue = load_catalogue()

    def open(self, person: str) -> Store:
        key = self.keys.setdefault(person, RawKey(secrets.token_bytes(32)))
        return Store.open(self.folder / f"{person}.db", key)

    def conversation(self, store: Store, mode: str = "app") -> Conversation:
        """The app's conversation after a start, with the budgets of `mode`."""
        chat = ChatConfig(temperature=0.0, **MODES[mode])
        conversation = Conversation(self.persona, chat, outfits=self.catalogue)
        conversation.remember_in(StoreHistory(store), StoreMemory(store))
        return conversation

    async def tell(self, person: str, said: list[Told]) -> None:
        """One session: each sentence answered by the model and kept as the app keeps a typed turn."""
        with self.open(person) as store:
            conversation = self.conversation(store)
            for told in said:
                await _stream(self.upstream, ChatRequest(conversation.prefix(), warm=True, temperature=0.0))
                reply, _ = await _stream(self.upstream, _request(conversation.messages(told.text), conversation.chat))
                conversation.record(told.text, " ".join(sentences_of(strip_tags(reply))))

    async def ask(self, store: Store, asked: Asked, mode: str) -> Reply:
        conversation = self.conversation(store, mode)
        await _stream(self.upstream, ChatRequest(conversation.prefix(), warm=True, temperature=0.0))
        began = time.perf_counter()
        messages = conversation.messages(asked.question)
        build_ms = (time.perf_counter() - began) * 1000
        text, first = await _stream(self.upstream, _request(messages, conversation.chat))
        return Reply(asked, mode, strip_tags(text).strip(), build_ms, first)


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f} %" if d else "–"


def p50(values: list[float]) -> float:
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def wrong(reply: Reply, asked: list[Asked]) -> bool:
    """Not recalled, but names what the person told for another question, or the value they replaced."""
    if reply.asked.recalls(reply.text):
        return False
    others = [a.answer for a in asked if a.person == reply.asked.person and a is not reply.asked]
    patterns = others + ([reply.asked.wrong] if reply.asked.wrong else [])
    return any(names(p, reply.text) for p in patterns)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("seen", "held", "held2", "all"), default="all")
    ap.add_argument("--modes", default=",".join(MODES),
                    help=f"which ways to ask, comma-separated (of {', '.join(MODES)}; app and history only at least)")
    ap.add_argument("--model", default=DEFAULT_LLM)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",")]
    if not {"app", "history only"} <= set(modes) <= set(MODES):
        ap.error(f"--modes {args.modes!r}: give app and history only, and optionally recall only, comma-separated")
    told, asked = read_prompts()
    told = [t for t in told if args.set in ("all", t.set)]
    asked = [a for a in asked if args.set in ("all", a.set)]
    people = list(dict.fromkeys(t.person for t in told))
    spec = find(args.model)
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = LlamaServer(default_binary(), Models().path(args.model), parallel=1, ctx=LlamaSection.ctx,
                             threads=LlamaSection.threads, chat_template=spec.chat_template,
                             log_path=folder / "llama-server.log")

        async def go() -> tuple[list[Reply], list[Reply], dict[str, list[str]], list[str]]:
            upstream = Upstream(server.url, api="chat", api_key=server.api_key)
            bench = Bench(upstream, folder)
            replies: list[Reply] = []
            after: list[Reply] = []
            kept: dict[str, list[str]] = {}
            traces: list[str] = []
            try:
                for person in people:
                    for session in sorted({t.session for t in told if t.person == person}):
                        await bench.tell(person, [t for t in told if t.person == person and t.session == session])
                    print(f"{person}: told", file=sys.stderr)
                for person in people:  # after a restart: each question with memory, then without
                    with bench.open(person) as store:
                        kept[person] = [f.said for f in store.facts()]
                        for mode in modes:  # one way at a time: its prefix stays in llama-server's cache
                            for a in [a for a in asked if a.person == person]:
                                replies.append(await bench.ask(store, a, mode))
                    print(f"{person}: asked", file=sys.stderr)
                for person in people:  # forgetting: two facts as the Memory panel does, then all
                    forget = [a for a in asked if a.person == person and a.forget]
                    with bench.open(person) as store:
                        values = [f.value for f in store.facts()]
                        ids = [f.id for f in store.facts() if any(a.forget == f.value for a in forget)]
                        store.forget_facts(ids)
                    with bench.open(person) as store:
                        for a in forget:
                            after.append(await bench.ask(store, a, "app"))
                    pages = decrypted(folder / f"{person}.db", bench.keys[person])
                    traces += [f"{person}: {a.forget}" for a in forget if a.forget.encode() in pages]
                    with bench.open(person) as store:
                        store.forget_facts(None)
                    pages = decrypted(folder / f"{person}.db", bench.keys[person])
                    traces += [f"{person}: {v} (after forget all)" for v in values if v.encode() in pages]
            finally:
                await upstream.aclose()
            return replies, after, kept, traces

        with server:
            replies, after, kept, traces = asyncio.run(go())
    report = write_report(args, replies, after, kept, traces, asked, started)
    print(report)
    return 0


def write_report(args: argparse.Namespace, replies: list[Reply], after: list[Reply], kept: dict[str, list[str]],
                 traces: list[str], asked: list[Asked], started: datetime) -> str:
    lines = [f"\n## {started:%Y-%m-%d %H:%M} UTC — {args.model}, set {args.set}\n",
             f"Command: `.venv/bin/python tests/bench/memory_recall.py --set {args.set} --model {args.model}"
             f"{'' if args.modes == ','.join(MODES) else f' --modes {chr(39)}{args.modes}{chr(39)}'}`. "
             f"Machine: 2-core VM shared with other work (timings under load).\n",
             "| set | asked with | questions | recalled | wrong recall | messages built p50 | first token p50 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for which in ("seen", "held", "held2", "all"):
        for mode in MODES:
            rs = [r for r in replies if r.mode == mode and which in ("all", r.asked.set)]
            if not rs:
                continue
            ok = sum(r.asked.recalls(r.text) for r in rs)
            bad = sum(wrong(r, asked) for r in rs)
            lines.append(f"| {which} | {mode} | {len(rs)} | {ok} ({pct(ok, len(rs))}) | "
                         f"{bad} ({pct(bad, len(rs))}) | {p50([r.build_ms for r in rs]):.2f} ms | "
                         f"{p50([r.first_token_ms for r in rs]):.0f} ms |")
    by = {mode: {r.asked.question + r.asked.person: r for r in replies if r.mode == mode} for mode in MODES}
    on, off, alone = by["app"], by["history only"], by.get("recall only", {})
    added = [on[k].first_token_ms - off[k].first_token_ms for k in on if k in off]
    build = [on[k].build_ms - off[k].build_ms for k in on if k in off]
    recalling = [alone[k].first_token_ms - off[k].first_token_ms for k in alone if k in off]
    still = [r for r in after if r.asked.recalls(r.text)]
    lines += ["", f"Added by memory (app against history only), p50 over the questions: first token "
                  f"**{p50(added):+.0f} ms**, building the messages (the recall) **{p50(build):+.2f} ms**. The "
                  f"recall's own message evaluated after the question (recall only against history only): first token "
                  f"{p50(recalling):+.0f} ms.",
              f"Forgetting: {len(after)} facts forgotten through the panel's path, asked again: "
              f"**{len(still)}** still answered ({', '.join(r.asked.answer for r in still) or 'none'}); forgotten "
              f"values found in the decrypted pages afterwards: **{len(traces)}** ({'; '.join(traces) or 'none'}).",
              "", "Facts the rules took, per person:", ""]
    lines += [f"- {person}: {len(facts)} — {' '.join(facts)}" for person, facts in kept.items()]
    lines += ["", "| person | set | question | app | history only | recall only |",
              "| --- | --- | --- | --- | --- | --- |"]

    def cell(r: Reply) -> str:
        mark = "✓" if r.asked.recalls(r.text) else ("✗ wrong" if wrong(r, asked) else "✗")
        return f"{mark} {r.text}".replace("|", "/").replace("\n", " ")

    for k, r in on.items():
        lines.append(f"| {r.asked.person} | {r.asked.set} | {r.asked.question} | {cell(r)} | {cell(off[k])} | "
                     f"{cell(alone[k]) if k in alone else '–'} |")
    lines += ["", "After forgetting:", ""]
    lines += [f"- {r.asked.person} {r.asked.question} → {r.text}" for r in after]
    text = "\n".join(lines) + "\n"
    if not args.out.exists():
        args.out.write_text("# Memory bench (tests/bench/memory_recall.py)\n\nNewest runs last. The prompts and "
                            "rules: [memory_prompts.md](../memory_prompts.md).\n")
    with args.out.open("a") as f:
        f.write(text)
    return text


if __name__ == "__main__":
    sys.exit(main())
