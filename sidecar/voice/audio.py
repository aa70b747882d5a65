"""Sample formats, WAV files and resampling, in one place.

Inside the pipeline audio is float32 in [-1, 1]; int16 only at the edges (devices, WAV
files, the wake-word and VAD models' inputs). Every rate change goes through soxr (VHQ), a
band-limited resampler — never linear interpolation, which aliases and dulls speech.
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import soxr

RATE = 16000  # what the microphone path runs at: VAD, wake word and whisper all want 16 kHz


class AudioFileError(ValueError):
    """A WAV file could not be used; the message names the file and what is wrong."""


def to_float(pcm: np.ndarray) -> np.ndarray:
    return pcm.astype(np.float32) / 32768.0


def to_int16(audio: np.ndarray) -> np.ndarray:
    return (np.clip(audio, -1.0, 1.0) * 32767.0).round().astype(np.int16)


def snr_db(audio: np.ndarray, hop: int = 320) -> float:
    """A signal-to-noise estimate of speech (dB): its loud 20 ms frames (90th percentile) over its
    quiet ones (10th), the noise between words. Clean speech in a quiet room: 30 dB and more; over
    a television or a fan: 10-20 dB."""
    n = len(audio) // hop
    if n < 2:
        return 0.0
    energy = 10 * np.log10(np.mean(np.square(audio[:n * hop].reshape(n, hop), dtype=np.float64), axis=1) + 1e-10)
    return float(np.percentile(energy, 90) - np.percentile(energy, 10))


def resample(audio: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """One complete signal (a sentence, a file) to another rate, float32 in and out."""
    if rate_in == rate_out or len(audio) == 0:
        return audio.astype(np.float32, copy=False)
    return soxr.resample(audio.astype(np.float32, copy=False), rate_in, rate_out, quality="VHQ").astype(np.float32)


def fade_edges(audio: np.ndarray, rate: int, ms: float = 5.0) -> np.ndarray:
    """Raised-cosine fade-in and fade-out, so a sentence starts and ends at zero (no click)."""
    n = min(len(audio) // 2, int(rate * ms / 1000))
    if n == 0:
        return audio
    ramp = (0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, n, dtype=np.float32))).astype(np.float32)
    out = audio.astype(np.float32, copy=True)
    out[:n] *= ramp
    out[-n:] *= ramp[::-1]
    return out


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """A WAV file as mono float32 and its rate (channels are averaged)."""
    try:
        with wave.open(str(path), "rb") as w:
            width, channels, rate = w.getsampwidth(), w.getnchannels(), w.getframerate()
            raw = w.readframes(w.getnframes())
    except FileNotFoundError:
        raise AudioFileError(f"audio file {path} does not exist") from None
    except (wave.Error, EOFError) as exc:
        raise AudioFileError(f"{path} is not a PCM WAV file ({exc}); convert it, e.g. "
                             f"`sox in.mp3 -r 16000 -c 1 -b 16 {path.name}`") from None
    if width == 2:
        samples = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
    elif width == 4:
        samples = np.frombuffer(raw, "<i4").astype(np.float32) / 2147483648.0
    elif width == 1:
        samples = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    else:
        raise AudioFileError(f"{path} has {width * 8}-bit samples; use 8, 16 or 32-bit PCM")
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1)
    return samples.astype(np.float32), rate


def write_wav(path: Path, audio: np.ndarray, rate: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(to_int16(audio).tobytes())


def level_db(x: np.ndarray) -> float:
    """Mean-square level of float audio, in dB (full scale 0 dB; digital silence -120 dB)."""
    return float(10 * np.log10(np.mean(np.square(x, dtype=np.float64)) + 1e-12))
