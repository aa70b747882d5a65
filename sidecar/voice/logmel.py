"""Whisper's log-mel spectrogram in numpy: the input of the turn-completion model.

The recipe is whisper's own (25 ms Hann windows every 10 ms, centred with reflect padding,
power spectrum, 80 Slaney mel bands, log10, floor 8 below the peak, scaled to about [-1, 1]);
the mel filters are the ones the ggml converter writes into whisper models
(`remote_api.shared.models.whisper_ggml.mel_filters`), so both places agree on the bands.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from remote_api.shared.models.whisper_ggml import N_FFT, mel_filters

HOP = 160  # 10 ms at 16 kHz: 100 frames per second


@functools.cache
def _window() -> np.ndarray:
    n = np.arange(N_FFT)
    return (0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)).astype(np.float32)  # periodic Hann


@functools.cache
def _filters(n_mels: int) -> np.ndarray:
    return mel_filters(n_mels)


def log_mel(audio: np.ndarray, n_mels: int = 80) -> np.ndarray:
    """(n_mels, len(audio) // HOP) log-mel features of float32 16 kHz audio."""
    if audio.ndim != 1 or len(audio) <= N_FFT // 2:
        raise ValueError(f"log_mel needs 1-D audio longer than {N_FFT // 2} samples, got shape {audio.shape}")
    padded = np.pad(audio.astype(np.float32), N_FFT // 2, mode="reflect")
    frames = sliding_window_view(padded, N_FFT)[::HOP]
    power = np.abs(np.fft.rfft(frames * _window(), axis=-1)) ** 2
    mel = _filters(n_mels) @ power.T.astype(np.float32)
    logs = np.log10(np.maximum(mel, 1e-10))[:, :-1]  # whisper drops the last (half-empty) frame
    logs = np.maximum(logs, logs.max() - 8.0)
    return ((logs + 4.0) / 4.0).astype(np.float32)
