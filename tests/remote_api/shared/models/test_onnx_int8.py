"""ONNX convolution weights stored as int8 (remote_api/shared/models/onnx_int8.py), checked by onnxruntime
running the model before and after; the models are written here field by field (the `onnx` package is not
a dependency)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from remote_api.shared.models.errors import ConversionError
from remote_api.shared.models.onnx_int8 import SUFFIX, convolution_weights_as_int8, quantize_weights, store_as_int8
from remote_api.shared.models.onnx_wire import fields

from .onnx_builder import msg, num, tensor, value_info, varint


def conv_model(weights: dict[str, np.ndarray], weight_inputs: tuple[str, ...] = ()) -> bytes:
    """X (1, 32, 20) through one Conv per weight in turn (each (32, 32, k), padded to keep the length) to Y."""
    nodes, inits, previous = [], [], "X"
    for i, (name, w) in enumerate(weights.items()):
        out = "Y" if i == len(weights) - 1 else f"h{i}"
        pads = msg(5, msg(1, b"pads") + msg(8, b"".join(varint(w.shape[2] // 2) for _ in range(2))) + num(20, 7))
        nodes.append(msg(1, msg(1, previous.encode()) + msg(1, name.encode()) + msg(2, out.encode())
                         + msg(3, f"conv{i}".encode()) + msg(4, b"Conv") + pads))
        if name not in weight_inputs:
            inits.append(msg(5, tensor(name, w)))
        previous = out
    inputs = [msg(11, value_info("X", (1, 32, 20)))] + [msg(11, value_info(n, weights[n].shape)) for n in weight_inputs]
    graph = b"".join(nodes) + msg(2, b"g") + b"".join(inits) + b"".join(inputs) + msg(12, value_info("Y", (1, 32, 20)))
    return num(1, 8) + msg(2, b"test") + msg(7, graph) + msg(8, msg(1, b"") + num(2, 15))


def run(model: bytes, **feeds: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(["Y"], feeds)[0]


RNG = np.random.default_rng(3)
X = RNG.normal(size=(1, 32, 20)).astype(np.float32)
W1 = RNG.normal(size=(32, 32, 5)).astype(np.float32)  # 5,120 weights: converted
W2 = (RNG.normal(size=(32, 32, 5)) * np.linspace(0.01, 3, 32)[:, None, None]).astype(np.float32)  # channels apart


def test_the_weights_become_int8_and_the_model_computes_what_it_did():
    model = conv_model({"w1": W1, "w2": W2})
    converted, count = convolution_weights_as_int8(model)
    assert count == 2
    assert len(converted) < len(model) * 0.4, "the weights were not stored as one byte each"
    before, after = run(model, X=X), run(converted, X=X)
    assert np.abs(after - before).max() < 0.02 * np.abs(before).max()
    # each output channel is scaled on its own: a small channel is as exact as a large one
    for channel in (0, 31):
        error = np.abs(after[0, channel] - before[0, channel]).max() / np.abs(before[0, channel]).max()
        assert error < 0.02, f"channel {channel}: {error:.3f}"
    assert converted == convolution_weights_as_int8(model)[0], "not deterministic (the catalogue holds its checksum)"
    assert convolution_weights_as_int8(converted) == (converted, 0), "converted twice"


def test_rounding_is_per_output_channel_to_127_steps():
    q, scale = quantize_weights(W2)
    assert q.dtype == np.int8 and scale.shape == (32,)
    assert np.abs(q.reshape(32, -1)).max(axis=1).tolist() == [127] * 32
    assert np.abs(q * scale[:, None, None] - W2).max(axis=(1, 2)).tolist() <= (scale / 2 + 1e-7).tolist()
    q, scale = quantize_weights(np.zeros((2, 3, 4), np.float32))
    assert not q.any() and scale.tolist() == [1.0, 1.0]


def test_what_is_not_a_constant_weight_of_a_convolution_is_left_as_it_was():
    small = RNG.normal(size=(32, 32, 1)).astype(np.float32)  # 1,024 weights: not worth a scale each
    model = conv_model({"w1": W1, "small": small, "fed": W2}, weight_inputs=("fed",))
    converted, count = convolution_weights_as_int8(model)
    assert count == 1
    names = {bytes(f.value).decode() for g in fields(memoryview(converted)) if g.number == 7
             for i in fields(g.value) if i.number == 5 for f in fields(i.value) if f.number == 8}
    assert names == {"small", "w1" + SUFFIX, "w1" + SUFFIX + ".scale", "w1" + SUFFIX + ".zero"}
    before = run(model, X=X, fed=W2)
    assert np.abs(run(converted, X=X, fed=W2) - before).max() < 0.02 * np.abs(before).max()


def test_a_damaged_file_is_a_clear_error_and_stays_as_it_was(tmp_path: Path):
    path = tmp_path / "voice.onnx"
    model = conv_model({"w1": W1})
    path.write_bytes(model[: len(model) // 2])
    with pytest.raises(ConversionError, match="corrupt ONNX file: field 7 claims"):
        store_as_int8(path)
    assert path.read_bytes() == model[: len(model) // 2]
    path.write_bytes(b"not a model at all")
    with pytest.raises(ConversionError):
        store_as_int8(path)
    path.write_bytes(num(1, 8))
    with pytest.raises(ConversionError, match="no graph"):
        store_as_int8(path)


def test_store_as_int8_rewrites_the_file(tmp_path: Path):
    path = tmp_path / "voice.onnx"
    path.write_bytes(conv_model({"w1": W1, "w2": W2}))
    before = run(path.read_bytes(), X=X)
    assert store_as_int8(path) == 2
    assert np.abs(run(path.read_bytes(), X=X) - before).max() < 0.02 * np.abs(before).max()
    assert list(tmp_path.iterdir()) == [path], "a temporary file was left behind"
