"""silero VAD v5's 16 kHz network in numpy, its weights read from the model file silero ships.

Why not onnxruntime: a session of this 2 MB model held ~10 MiB of the engine for as long as she listens
(measured: +9.7 MiB a session, whatever its options), for a network that is six small matrix products and one
LSTM cell per 32 ms window. In numpy it takes the weights only (1.2 MiB) and less time a window.

The network (the graph's 16 kHz branch, read off the ONNX file; the 8 kHz branch is not used):
- the 576 samples heard (64 of the last window, then this one) padded on the right by reflecting their last
  64, cut into 4 frames of 256 at a hop of 128, and a Fourier transform of each as a matrix product with the
  model's own basis (258 rows: 129 real, 129 imaginary); the magnitude of each bin;
- four 3-tap convolutions (padding 1, strides 1, 2, 2, 1), each followed by ReLU: 4 frames become 1;
- an LSTM cell (PyTorch's gate order: input, forget, cell, output) carrying (h, c) from window to window;
- ReLU, a 1x1 convolution to one value and a sigmoid: the speech probability.
tests/voice/test_silero.py checks it window by window against onnxruntime running the file itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from remote_api.shared.models.errors import ConversionError
from remote_api.shared.models.onnx_wire import float_constants

FILTER, HOP = 256, 128  # the 16 kHz STFT
BINS = FILTER // 2 + 1
FRAMES = 4  # 576 samples padded to 640: frames of 256 at 0, 128, 256, 384
FRAME_INDEX = HOP * np.arange(FRAMES)[:, None] + np.arange(FILTER)[None, :]
STRIDES = (1, 2, 2, 1)
HIDDEN = 128
BASIS = "stft.forward_basis_buffer"
WEIGHTS = (BASIS, *(f"encoder.{i}.reparam_conv.{p}" for i in range(len(STRIDES)) for p in ("weight", "bias")),
           "decoder.rnn.weight_ih", "decoder.rnn.weight_hh", "decoder.rnn.bias_ih", "decoder.rnn.bias_hh",
           "decoder.decoder.2.weight", "decoder.decoder.2.bias")


@dataclass(frozen=True)
class Convolution:
    """A 3-tap convolution (padding 1) and ReLU over a fixed number of frames, as one matrix product: the
    taps are gathered with a precomputed index (a frame outside the input reads a column of zeros)."""

    weight: np.ndarray  # (out channels, in channels * 3): the taps of one input channel side by side
    bias: np.ndarray  # (out channels, 1)
    taps: np.ndarray  # (3, frames out): the input frame each tap reads, `frames` for the padding

    @classmethod
    def of(cls, weight: np.ndarray, bias: np.ndarray, stride: int, frames: int) -> Convolution:
        out = (frames - 1) // stride + 1
        source = np.arange(3)[:, None] + stride * np.arange(out)[None, :] - 1
        return cls(weight.reshape(len(weight), -1), bias[:, None],
                   np.where((source >= 0) & (source < frames), source, frames))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """ReLU(conv(x)) for x of (channels, frames)."""
        padded = np.concatenate([x, np.zeros((len(x), 1), np.float32)], axis=1)
        gathered = padded[:, self.taps].reshape(len(x) * 3, -1)
        return np.maximum(self.weight @ gathered + self.bias, 0)


@dataclass(frozen=True)
class SileroNet:
    basis: np.ndarray  # (2 * BINS, FILTER)
    encoder: tuple[Convolution, ...]
    lstm: np.ndarray  # (4 * HIDDEN, 2 * HIDDEN): [W_ih W_hh], gate rows reordered input, forget, output, cell
    lstm_bias: np.ndarray  # b_ih + b_hh, in the same order
    out_w: np.ndarray  # (HIDDEN,)
    out_b: float

    @classmethod
    def load(cls, path: Path) -> SileroNet:
        """The 16 kHz branch's weights: the set of constants whose STFT basis has 256-sample filters."""
        try:
            found = float_constants(Path(path).read_bytes())
        except ConversionError as exc:
            raise ConversionError(f"the silero VAD model {path} cannot be read ({exc}): reinstall Stella") from None
        for name, basis in found.items():
            if name.endswith(BASIS) and basis.shape == (2 * BINS, 1, FILTER):
                prefix = name[:-len(BASIS)]
                if all(prefix + key in found for key in WEIGHTS):
                    w = {key: np.array(found[prefix + key], np.float32) for key in WEIGHTS}
                    break
        else:
            raise ConversionError(f"the silero VAD model {path} has no 16 kHz network of silero v5's shape: "
                                  "reinstall Stella")
        encoder, frames = [], FRAMES
        for i, stride in enumerate(STRIDES):
            encoder.append(Convolution.of(w[f"encoder.{i}.reparam_conv.weight"], w[f"encoder.{i}.reparam_conv.bias"],
                                          stride, frames))
            frames = encoder[-1].taps.shape[1]  # 4, 4, 2, 1, 1: the LSTM hears one frame
        order = np.concatenate([np.arange(HIDDEN * g, HIDDEN * (g + 1)) for g in (0, 1, 3, 2)])  # i, f, o, g
        lstm = np.concatenate([w["decoder.rnn.weight_ih"], w["decoder.rnn.weight_hh"]], axis=1)[order]
        bias = (w["decoder.rnn.bias_ih"] + w["decoder.rnn.bias_hh"])[order]
        return cls(w[BASIS][:, 0, :], tuple(encoder), np.ascontiguousarray(lstm), bias,
                   w["decoder.decoder.2.weight"].reshape(-1), float(w["decoder.decoder.2.bias"].reshape(-1)[0]))

    def __call__(self, samples: np.ndarray, h: np.ndarray, c: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """(speech probability, h, c) for 576 float32 samples (64 heard before, 512 new) and the state the
        last window left."""
        padded = np.concatenate([samples, samples[-2:-2 - (FILTER - HOP) // 2:-1]])
        spectrum = self.basis @ padded[FRAME_INDEX].T
        x = np.sqrt(spectrum[:BINS] ** 2 + spectrum[BINS:] ** 2)
        for convolution in self.encoder:
            x = convolution(x)
        gates = self.lstm @ np.concatenate([x[:, 0], h]) + self.lstm_bias
        sigmoids = 1 / (1 + np.exp(-gates[:3 * HIDDEN]))
        c = sigmoids[HIDDEN:2 * HIDDEN] * c + sigmoids[:HIDDEN] * np.tanh(gates[3 * HIDDEN:])
        h = sigmoids[2 * HIDDEN:] * np.tanh(c)
        return float(1 / (1 + np.exp(-(self.out_w @ np.maximum(h, 0) + self.out_b)))), h, c
