"""Reading ONNX files' float tensors without the `onnx` package (remote_api/shared/models/onnx_wire.py)."""

from __future__ import annotations

import numpy as np
import pytest

from remote_api.shared.models.errors import ConversionError
from remote_api.shared.models.onnx_wire import float_constants

from .onnx_builder import constant_node, if_node, msg, num, tensor

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.linspace(-1, 1, 4, dtype=np.float32)
C = np.float32([[0.5]])


def model(graph: bytes) -> bytes:
    return num(1, 8) + msg(7, graph) + msg(8, msg(1, b"") + num(2, 15))


def test_initializers_constants_and_the_branches_of_an_if_are_all_found_by_name():
    branch_then = msg(1, constant_node("then/w", B)) + msg(2, b"then")
    branch_else = msg(1, constant_node("else/w", C)) + msg(2, b"else")
    graph = (msg(1, constant_node("top", A)) + msg(1, if_node("cond", branch_then, branch_else))
             + msg(2, b"g") + msg(5, tensor("init", B * 2)))
    found = float_constants(model(graph))
    assert sorted(found) == ["else/w", "init", "then/w", "top"]
    assert np.array_equal(found["top"], A) and found["top"].shape == (2, 3)
    assert np.array_equal(found["then/w"], B) and np.array_equal(found["else/w"], C)
    assert np.array_equal(found["init"], B * 2)


def test_a_file_that_is_not_a_model_or_is_cut_short_is_refused():
    with pytest.raises(ConversionError, match="not an ONNX model"):
        float_constants(b"")
    whole = model(msg(1, constant_node("top", A)) + msg(2, b"g"))
    with pytest.raises(ConversionError, match="corrupt ONNX file"):
        float_constants(whole[:-20])
