"""An ONNX model's convolution weights stored as int8, turned back into float as the model runs.

Why: piper's voice is 57 MiB of float32 convolution weights (its text encoder's and flows' 1x1 convolutions,
the vocoder's) that onnxruntime holds in memory for as long as she can speak. Stored as int8 with one float32
scale per output channel, the weights take a quarter of that (measured on en_US-joe-medium: +82 MiB loaded ->
+41, 296 ms a sentence against 323). Each weight `W` becomes `DequantizeLinear(W_int8, scale, 0, axis=0)`
under its old name, so the rest of the graph is untouched and the convolutions still run in float: only the
rounding of the weights changes the voice (`round(w * 127 / max|w| of the channel)`, as CTranslate2 does it).
onnxruntime keeps such a dequantisation of a constant as a node (a quantised weight is what it is for), so
the float copy is made one layer at a time, never all at once.

The file is read and written with the protobuf wire format directly (ModelProto -> GraphProto -> NodeProto,
TensorProto; field numbers from onnx.proto): the `onnx` package is 31 MB, a bundle's model install needs only
this. Every field it does not change is copied as it was, byte for byte, so the result is deterministic and
its checksum is known in the catalogue.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from remote_api.shared.models.atomic_file import write_atomically
from remote_api.shared.models.errors import ConversionError

# onnx.proto field numbers (wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32)
MODEL_GRAPH = 7
GRAPH_NODE, GRAPH_INITIALIZER, GRAPH_INPUT = 1, 5, 11
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP_TYPE, NODE_ATTRIBUTE = 1, 2, 3, 4, 5
ATTR_NAME, ATTR_I, ATTR_TYPE, ATTR_TYPE_INT = 1, 3, 20, 2
TENSOR_DIMS, TENSOR_DATA_TYPE, TENSOR_NAME, TENSOR_RAW_DATA, TENSOR_DATA_LOCATION = 1, 2, 8, 9, 14
VALUE_INFO_NAME = 1
FLOAT, INT8 = 1, 3  # TensorProto.DataType
MIN_WEIGHTS = 4096  # smaller weights are not worth their scales (and stay exact)
SUFFIX = "::int8"  # the int8 weights of `w` are `w::int8`, their scales `w::int8.scale`, zero points `.zero`
PARTS = ("", ".scale", ".zero")


@dataclass(frozen=True)
class Field:
    number: int
    wire: int
    value: memoryview | int  # the payload of a length-delimited field, else the number
    raw: memoryview  # the whole field as it was in the file (key included)


def _varint(data: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ConversionError("corrupt ONNX file: a varint runs past its message")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data: memoryview) -> Iterator[Field]:
    """The fields of one protobuf message, in file order."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            n, pos = _varint(data, pos)
            if pos + n > len(data):
                raise ConversionError(f"corrupt ONNX file: field {number} claims {n} bytes, "
                                      f"{len(data) - pos} are left")
            value, pos = data[pos:pos + n], pos + n
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        else:
            raise ConversionError(f"corrupt ONNX file: field {number} has wire type {wire}")
        yield Field(number, wire, value, data[start:pos])


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload


def _int_field(number: int, value: int) -> bytes:
    return _encode_varint(number << 3) + _encode_varint(value & (1 << 64) - 1)


def _text(field: Field) -> str:
    assert isinstance(field.value, memoryview)
    return bytes(field.value).decode("utf-8")


def _tensor(name: str, array: np.ndarray, data_type: int) -> bytes:
    dims = b"".join(_int_field(TENSOR_DIMS, d) for d in array.shape)
    return (dims + _int_field(TENSOR_DATA_TYPE, data_type) + _bytes_field(TENSOR_NAME, name.encode())
            + _bytes_field(TENSOR_RAW_DATA, np.ascontiguousarray(array).tobytes()))


def _dequantize_node(name: str) -> bytes:
    axis = _bytes_field(ATTR_NAME, b"axis") + _int_field(ATTR_I, 0) + _int_field(ATTR_TYPE, ATTR_TYPE_INT)
    inputs = [_bytes_field(NODE_INPUT, (name + SUFFIX + part).encode()) for part in PARTS]
    return b"".join([*inputs, _bytes_field(NODE_OUTPUT, name.encode()),
                     _bytes_field(NODE_NAME, (name + SUFFIX + "/dequantize").encode()),
                     _bytes_field(NODE_OP_TYPE, b"DequantizeLinear"), _bytes_field(NODE_ATTRIBUTE, axis)])


def quantize_weights(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 weights and one float32 scale per output channel (axis 0): `round(w / scale)`, `scale = max|w| / 127`
    (an all-zero channel gets scale 1)."""
    w = np.asarray(weights, np.float32)
    scale = np.abs(w.reshape(len(w), -1)).max(axis=1) / np.float32(127)
    scale[scale == 0] = 1
    shaped = scale.reshape(-1, *([1] * (w.ndim - 1)))
    return np.clip(np.rint(w / shaped), -127, 127).astype(np.int8), scale.astype(np.float32)


def _float_weight(payload: memoryview) -> tuple[str, np.ndarray] | None:
    """(name, array) of a float32 initializer held in raw_data, else None."""
    name, dims, data_type, raw, external = "", [], 0, None, False
    for f in fields(payload):
        if f.number == TENSOR_NAME:
            name = _text(f)
        elif f.number == TENSOR_DIMS and f.wire == 0:
            dims.append(int(f.value))  # type: ignore[arg-type]
        elif f.number == TENSOR_DIMS and f.wire == 2:  # packed
            data, pos = f.value, 0
            assert isinstance(data, memoryview)
            while pos < len(data):
                d, pos = _varint(data, pos)
                dims.append(d)
        elif f.number == TENSOR_DATA_TYPE:
            data_type = int(f.value)  # type: ignore[arg-type]
        elif f.number == TENSOR_RAW_DATA:
            raw = f.value
        elif f.number == TENSOR_DATA_LOCATION and f.value == 1:
            external = True
    if data_type != FLOAT or raw is None or external or not dims:
        return None
    count = int(np.prod(dims))
    if len(raw) != 4 * count:
        raise ConversionError(f"corrupt ONNX file: weight {name!r} holds {len(raw)} bytes for shape {dims}")
    return name, np.frombuffer(raw, "<f4").reshape(dims)


def convolution_weights_as_int8(model: bytes) -> tuple[bytes, int]:
    """The model with each Conv's constant float weight (of `MIN_WEIGHTS` or more) stored as int8; and how many
    were. Weights that are also graph inputs (a caller may replace them) are left alone."""
    data = memoryview(model)
    top = list(fields(data))
    graphs = [f for f in top if f.number == MODEL_GRAPH and f.wire == 2]
    if len(graphs) != 1:
        raise ConversionError("not an ONNX model: no graph in the file")
    graph = list(fields(graphs[0].value))  # type: ignore[arg-type]
    conv_weights, inputs = set(), set()
    for f in graph:
        if f.number == GRAPH_NODE:
            node = list(fields(f.value))  # type: ignore[arg-type]
            node_inputs = [_text(n) for n in node if n.number == NODE_INPUT]
            if any(n.number == NODE_OP_TYPE and _text(n) == "Conv" for n in node) and len(node_inputs) > 1:
                conv_weights.add(node_inputs[1])
        elif f.number == GRAPH_INPUT:
            inputs.update(_text(n) for n in fields(f.value) if n.number == VALUE_INFO_NAME)  # type: ignore[arg-type]
    names = {_name_of(f) for f in graph if f.number == GRAPH_INITIALIZER}
    nodes, initializers, kept = [], [], []
    for f in graph:
        weight = _float_weight(f.value) if f.number == GRAPH_INITIALIZER else None  # type: ignore[arg-type]
        if weight is None or weight[0] not in conv_weights or weight[0] in inputs or weight[1].size < MIN_WEIGHTS:
            kept.append(bytes(f.raw))
            continue
        if taken := names & {weight[0] + SUFFIX + part for part in PARTS}:
            raise ConversionError(f"the model already has a tensor named {taken.pop()!r}")
        name, w = weight
        q, scale = quantize_weights(w)
        nodes.append(_bytes_field(GRAPH_NODE, _dequantize_node(name)))
        initializers += [_bytes_field(GRAPH_INITIALIZER, _tensor(name + SUFFIX, q, INT8)),
                         _bytes_field(GRAPH_INITIALIZER, _tensor(name + SUFFIX + ".scale", scale, FLOAT)),
                         _bytes_field(GRAPH_INITIALIZER, _tensor(name + SUFFIX + ".zero", np.zeros(len(q), np.int8),
                                                                 INT8))]
    if not nodes:
        return model, 0
    new_graph = b"".join(nodes + kept + initializers)  # the dequantisations first: nodes stay in topological order
    out = b"".join(_bytes_field(MODEL_GRAPH, new_graph) if f is graphs[0] else bytes(f.raw) for f in top)
    return out, len(nodes)


def _name_of(initializer: Field) -> str:
    return next((_text(f) for f in fields(initializer.value) if f.number == TENSOR_NAME), "")  # type: ignore[arg-type]


def store_as_int8(path: Path) -> int:
    """Rewrite the ONNX model at `path` with int8 convolution weights; returns how many were converted."""
    path = Path(path)
    model, count = convolution_weights_as_int8(path.read_bytes())
    if count:
        write_atomically(path, [model])
    return count
