"""ONNX models written field by field for the tests (the `onnx` package is not a dependency)."""

from __future__ import annotations

import numpy as np


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def msg(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def num(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def tensor(name: str, array: np.ndarray) -> bytes:
    dims = msg(1, b"".join(varint(d) for d in array.shape))  # packed, as PyTorch's exporter writes them
    return dims + num(2, 1) + msg(8, name.encode()) + msg(9, array.astype("<f4").tobytes())


def value_info(name: str, shape: tuple[int, ...]) -> bytes:
    dims = b"".join(msg(1, num(1, d)) for d in shape)  # TypeProto.tensor_type: elem_type float, shape
    return msg(1, name.encode()) + msg(2, msg(1, num(1, 1) + msg(2, dims)))


def constant_node(output: str, array: np.ndarray) -> bytes:
    """A Constant node whose `value` attribute (AttributeProto.t, type TENSOR) is `array`."""
    value = msg(1, b"value") + msg(5, tensor("", array)) + num(20, 4)
    return msg(2, output.encode()) + msg(4, b"Constant") + msg(5, value)


def if_node(condition: str, then_graph: bytes, else_graph: bytes) -> bytes:
    branches = [msg(5, msg(1, name) + msg(6, graph) + num(20, 5))
                for name, graph in ((b"then_branch", then_graph), (b"else_branch", else_graph))]
    return msg(1, condition.encode()) + msg(2, b"out") + msg(4, b"If") + b"".join(branches)
