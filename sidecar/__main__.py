"""`python -m sidecar run ...`: the voice loop from files or the default devices.

    python -m sidecar run --audio-in in.wav --audio-out out.wav --events events.jsonl \\
        --server http://127.0.0.1:8765 --wake hey_jarvis
    python -m sidecar run --text "What is the capital of France?" --audio-out reply.wav
    python -m sidecar run --server http://gpu-box:8765            # microphone + speaker
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace
from pathlib import Path

from remote_api.client import LinkError
from remote_api.shared.config_loader import ConfigError
from remote_api.shared.logs import setup_logging
from remote_api.shared.models.errors import ModelError
from sidecar.config import LANGUAGES, WAKE_MODELS, load_app_config
from sidecar.headless import Options, run, with_wake
from sidecar.pipeline import VoiceError
from sidecar.voice.audio import AudioFileError
from sidecar.workers import with_background_workers


def _span(text: str) -> tuple[float, float]:
    try:
        start, end = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:END in seconds, got {text!r}") from None
    if not 0 <= start < end:
        raise argparse.ArgumentTypeError(f"push-to-talk span {text!r} must have 0 <= START < END")
    return start, end


def _echo(text: str) -> tuple[float, float, float]:
    try:
        values = [float(x) for x in text.split(":")]
    except ValueError:
        values = []
    if len(values) not in (2, 3):
        raise argparse.ArgumentTypeError(f"expected DELAY_MS:GAIN_DB or DELAY_MS:GAIN_DB:RT60_MS, got {text!r}")
    delay, gain, rt60 = (*values, 0.0)[:3]
    if not 20 <= delay <= 1000:
        raise argparse.ArgumentTypeError(f"echo delay {delay:g} ms must be 20-1000")
    if not 0 <= rt60 <= 2000:
        raise argparse.ArgumentTypeError(f"echo reverb time {rt60:g} ms must be 0-2000 (0: no reverb)")
    return delay, gain, rt60


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stella voice",
                                description="Stella's voice loop without a window (also: python -m sidecar)")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the voice loop (files or the default devices)")
    r.add_argument("--server", help="the Stella gateway URL (default: server_url from the config)")
    r.add_argument("--config", type=Path, help="TOML settings (env STELLA_SECTION__KEY overrides them)")
    r.add_argument("--audio-in", type=Path, help="WAV file fed as the microphone, at real-time pace")
    r.add_argument("--audio-out", type=Path, help="WAV file the speaker writes, on in.wav's timeline")
    r.add_argument("--events", type=Path, help="JSONL event log: one {type, t, ...} object per line")
    r.add_argument("--wake", help=f"wake word: {', '.join(WAKE_MODELS)} (acoustic), 'off', or a custom "
                                  "phrase such as 'hey stella'")
    r.add_argument("--language", choices=LANGUAGES,
                   help="en: English; zh: Mandarin (hears, speaks and wakes on 你好小星 in Chinese; default: "
                        "voice.language of the config)")
    r.add_argument("--text", action="append", default=[], help="a typed turn (skips ASR); repeatable")
    r.add_argument("--push-to-talk", action="append", default=[], type=_span, metavar="START:END",
                   help="hold push-to-talk over this span of --audio-in (seconds); repeatable")
    r.add_argument("--input-device", help="microphone name or index (default: the system's)")
    r.add_argument("--output-device", help="speaker name or index (default: the system's)")
    r.add_argument("--fast", action="store_true", help="read --audio-in as fast as possible (tests)")
    r.add_argument("--echo", type=_echo, metavar="DELAY_MS:GAIN_DB[:RT60_MS]",
                   help="feed --audio-out back into the input, delayed and attenuated (a simulated "
                        "speaker heard by the microphone, e.g. 50:-10); RT60_MS adds a room's reverb "
                        "tail that decays by 60 dB in that time (e.g. 50:-6:250)")
    r.add_argument("--log-level", help="DEBUG, INFO, WARNING or ERROR")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        config = load_app_config(args.config)
        if args.server:
            config = replace(config, server_url=args.server)
        if args.language:
            config = replace(config, voice=replace(config.voice, language=args.language))
        if args.wake:
            config = with_wake(config, args.wake)
        devices = {k: v for k, v in (("input_device", args.input_device), ("output_device", args.output_device)) if v}
        config = replace(config, voice=replace(config.voice, **devices))
    except (ConfigError, ValueError) as exc:
        print(f"stella: {exc}", file=sys.stderr)
        return 2
    setup_logging(args.log_level or config.log_level)
    options = Options(audio_in=args.audio_in, audio_out=args.audio_out, events=args.events, texts=args.text,
                      push_to_talk=args.push_to_talk, fast=args.fast, echo=args.echo)
    try:
        asyncio.run(with_background_workers(run(config, options), config.voice.work_nice))
    except (VoiceError, LinkError, ModelError, AudioFileError) as exc:
        print(f"stella: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
