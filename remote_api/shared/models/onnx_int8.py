"""An ONNX model's convolution weights stored as int8, turned back into float as the model runs.

Why: piper's voice is 57 MiB of float32 convolution weights (its text encoder's and flows' 1x1 convolutions,
the vocoder's) that onnxruntime holds in memory for as long as she can speak. Stored as int8 with one float32
scale per output channel, the weights take a quarter of that (measured on en_US-joe-medium: +82 MiB loaded ->
+41, 296 ms a sentence against 323). Each weight `W` becomes `DequantizeLinear(W_int8, scale, 0, axis=0)`
under its old name, so the rest of the graph is untouched and the convolutions still run in float: only the
rounding of the weights changes the voice (`round(w * 127 / max|w| of the channel)`, as CTranslate2 does it).
onnxruntime keeps such a dequantisation of a constant as a node (a quantised weight is what it is for), so
the float copy is made one layer at a time, never all at once.

The file is read and written with the protobuf wire format directly (onnx_wire.py): a bundle's model install
needs no `onnx` package. Every field it does not change is copied as it was, byte for byte, so the result is
deterministic and its checksum is known in the catalogue.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from remote_api.shared.models.atomic_file import write_atomically
from remote_api.shared.models.errors import ConversionError
from remote_api.shared.models.onnx_wire import (
    ATTR_I,
    ATTR_NAME,
    ATTR_TYPE,
    ATTR_TYPE_INT,
    FLOAT,
    GRAPH_INITIALIZER,
    GRAPH_INPUT,
    GRAPH_NODE,
    INT8,
    MODEL_GRAPH,
    NODE_ATTRIBUTE,
    NODE_INPUT,
    NODE_NAME,
    NODE_OP_TYPE,
    NODE_OUTPUT,
    TENSOR_DATA_TYPE,
    TENSOR_DIMS,
    TENSOR_NAME,
    TENSOR_RAW_DATA,
    VALUE_INFO_NAME,
    Field,
    bytes_field,
    fields,
    float_tensor,
    int_field,
    text,
)

MIN_WEIGHTS = 4096  # smaller weights are not worth their scales (and stay exact)
SUFFIX = "::int8"  # the int8 weights of `w` are `w::int8`, their scales `w::int8.scale`, zero points `.zero`
PARTS = ("", ".scale", ".zero")


def _tensor(name: str, array: np.ndarray, data_type: int) -> bytes:
    dims = b"".join(int_field(TENSOR_DIMS, d) for d in array.shape)
    return (dims + int_field(TENSOR_DATA_TYPE, data_type) + bytes_field(TENSOR_NAME, name.encode())
            + bytes_field(TENSOR_RAW_DATA, np.ascontiguousarray(array).tobytes()))


def _dequantize_node(name: str) -> bytes:
    axis = bytes_field(ATTR_NAME, b"axis") + int_field(ATTR_I, 0) + int_field(ATTR_TYPE, ATTR_TYPE_INT)
    inputs = [bytes_field(NODE_INPUT, (name + SUFFIX + part).encode()) for part in PARTS]
    return b"".join([*inputs, bytes_field(NODE_OUTPUT, name.encode()),
                     bytes_field(NODE_NAME, (name + SUFFIX + "/dequantize").encode()),
                     bytes_field(NODE_OP_TYPE, b"DequantizeLinear"), bytes_field(NODE_ATTRIBUTE, axis)])


def quantize_weights(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 weights and one float32 scale per output channel (axis 0): `round(w / scale)`, `scale = max|w| / 127`
    (an all-zero channel gets scale 1)."""
    w = np.asarray(weights, np.float32)
    scale = np.abs(w.reshape(len(w), -1)).max(axis=1) / np.float32(127)
    scale[scale == 0] = 1
    shaped = scale.reshape(-1, *([1] * (w.ndim - 1)))
    return np.clip(np.rint(w / shaped), -127, 127).astype(np.int8), scale.astype(np.float32)


def convolution_weights_as_int8(model: bytes) -> tuple[bytes, int]:
    """The model with each Conv's constant float weight (of `MIN_WEIGHTS` or more) stored as int8; and how many
    were. Weights that are also graph inputs (a caller may replace them) are left alone."""
    top = list(fields(memoryview(model)))
    graphs = [f for f in top if f.number == MODEL_GRAPH and f.wire == 2]
    if len(graphs) != 1:
        raise ConversionError("not an ONNX model: no graph in the file")
    graph = list(fields(graphs[0].value))  # type: ignore[arg-type]
    conv_weights, inputs = set(), set()
    for f in graph:
        if f.number == GRAPH_NODE:
            node = list(fields(f.value))  # type: ignore[arg-type]
            node_inputs = [text(n) for n in node if n.number == NODE_INPUT]
            if any(n.number == NODE_OP_TYPE and text(n) == "Conv" for n in node) and len(node_inputs) > 1:
                conv_weights.add(node_inputs[1])
        elif f.number == GRAPH_INPUT:
            inputs.update(text(n) for n in fields(f.value) if n.number == VALUE_INFO_NAME)  # type: ignore[arg-type]
    names = {_name_of(f) for f in graph if f.number == GRAPH_INITIALIZER}
    nodes, initializers, kept = [], [], []
    for f in graph:
        weight = float_tensor(f.value) if f.number == GRAPH_INITIALIZER else None  # type: ignore[arg-type]
        if weight is None or weight[0] not in conv_weights or weight[0] in inputs or weight[1].size < MIN_WEIGHTS:
            kept.append(bytes(f.raw))
            continue
        if taken := names & {weight[0] + SUFFIX + part for part in PARTS}:
            raise ConversionError(f"the model already has a tensor named {taken.pop()!r}")
        name, w = weight
        q, scale = quantize_weights(w)
        nodes.append(bytes_field(GRAPH_NODE, _dequantize_node(name)))
        initializers += [bytes_field(GRAPH_INITIALIZER, _tensor(name + SUFFIX, q, INT8)),
                         bytes_field(GRAPH_INITIALIZER, _tensor(name + SUFFIX + ".scale", scale, FLOAT)),
                         bytes_field(GRAPH_INITIALIZER, _tensor(name + SUFFIX + ".zero", np.zeros(len(q), np.int8),
                                                                 INT8))]
    if not nodes:
        return model, 0
    new_graph = b"".join(nodes + kept + initializers)  # the dequantisations first: nodes stay in topological order
    out = b"".join(bytes_field(MODEL_GRAPH, new_graph) if f is graphs[0] else bytes(f.raw) for f in top)
    return out, len(nodes)


def _name_of(initializer: Field) -> str:
    return next((text(f) for f in fields(initializer.value) if f.number == TENSOR_NAME), "")  # type: ignore[arg-type]


def store_as_int8(path: Path) -> int:
    """Rewrite the ONNX model at `path` with int8 convolution weights; returns how many were converted."""
    path = Path(path)
    model, count = convolution_weights_as_int8(path.read_bytes())
    if count:
        write_atomically(path, [model])
    return count
