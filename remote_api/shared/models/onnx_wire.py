"""ONNX files read and written with the protobuf wire format directly: the `onnx` package is 31 MB, and the
app needs only to walk a graph's messages, read its float tensors and write a few fields back.

Field numbers are onnx.proto's (ModelProto -> GraphProto -> NodeProto / TensorProto / AttributeProto). A
message is read as its fields in file order, each with the bytes it had, so a writer can copy every field it
does not change byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from remote_api.shared.models.errors import ConversionError

# onnx.proto field numbers (wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32)
MODEL_GRAPH = 7
GRAPH_NODE, GRAPH_INITIALIZER, GRAPH_INPUT = 1, 5, 11
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP_TYPE, NODE_ATTRIBUTE = 1, 2, 3, 4, 5
ATTR_NAME, ATTR_I, ATTR_T, ATTR_G, ATTR_GRAPHS, ATTR_TYPE, ATTR_TYPE_INT = 1, 3, 5, 6, 11, 20, 2
TENSOR_DIMS, TENSOR_DATA_TYPE, TENSOR_NAME, TENSOR_RAW_DATA, TENSOR_DATA_LOCATION = 1, 2, 8, 9, 14
VALUE_INFO_NAME = 1
FLOAT, INT8 = 1, 3  # TensorProto.DataType


@dataclass(frozen=True)
class Field:
    number: int
    wire: int
    value: memoryview | int  # the payload of a length-delimited field, else the number
    raw: memoryview  # the whole field as it was in the file (key included)


def varint(data: memoryview, pos: int) -> tuple[int, int]:
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
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(data, pos)
        elif wire == 2:
            n, pos = varint(data, pos)
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


def bytes_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload


def int_field(number: int, value: int) -> bytes:
    return _encode_varint(number << 3) + _encode_varint(value & (1 << 64) - 1)


def text(field: Field) -> str:
    assert isinstance(field.value, memoryview)
    return bytes(field.value).decode("utf-8")


def messages(data: memoryview, number: int) -> Iterator[memoryview]:
    """The payloads of the length-delimited fields numbered `number` in one message."""
    for f in fields(data):
        if f.number == number and f.wire == 2:
            assert isinstance(f.value, memoryview)
            yield f.value


def graph_of(model: memoryview) -> memoryview:
    graphs = list(messages(model, MODEL_GRAPH))
    if len(graphs) != 1:
        raise ConversionError("not an ONNX model: no graph in the file")
    return graphs[0]


def float_tensor(payload: memoryview) -> tuple[str, np.ndarray] | None:
    """(name, array) of a float32 TensorProto held in raw_data, else None."""
    name, dims, data_type, raw, external = "", [], 0, None, False
    for f in fields(payload):
        if f.number == TENSOR_NAME:
            name = text(f)
        elif f.number == TENSOR_DIMS and f.wire == 0:
            dims.append(int(f.value))  # type: ignore[arg-type]
        elif f.number == TENSOR_DIMS and f.wire == 2:  # packed
            data, pos = f.value, 0
            assert isinstance(data, memoryview)
            while pos < len(data):
                d, pos = varint(data, pos)
                dims.append(d)
        elif f.number == TENSOR_DATA_TYPE:
            data_type = int(f.value)  # type: ignore[arg-type]
        elif f.number == TENSOR_RAW_DATA:
            raw = f.value
        elif f.number == TENSOR_DATA_LOCATION and f.value == 1:
            external = True
    if data_type != FLOAT or raw is None or external:
        return None
    count = int(np.prod(dims))
    if len(raw) != 4 * count:
        raise ConversionError(f"corrupt ONNX file: tensor {name!r} holds {len(raw)} bytes for shape {dims}")
    return name, np.frombuffer(raw, "<f4").reshape(dims)


def float_constants(model: bytes) -> dict[str, np.ndarray]:
    """Every float32 tensor the model holds by name: initializers and Constant nodes' values, in the main graph
    and in the branches of its If and Loop nodes (read-only views of `model`)."""
    found: dict[str, np.ndarray] = {}

    def walk(graph: memoryview) -> None:
        for tensor in messages(graph, GRAPH_INITIALIZER):
            if named := float_tensor(tensor):
                found[named[0]] = named[1]
        for node in messages(graph, GRAPH_NODE):
            parts = list(fields(node))
            op = next((text(f) for f in parts if f.number == NODE_OP_TYPE), "")
            outputs = [text(f) for f in parts if f.number == NODE_OUTPUT]
            for attribute in (f.value for f in parts if f.number == NODE_ATTRIBUTE):
                assert isinstance(attribute, memoryview)
                for f in fields(attribute):
                    if f.number == ATTR_T and op == "Constant" and outputs and (named := float_tensor(f.value)):
                        found[outputs[0]] = named[1]  # type: ignore[arg-type]
                    elif f.number in (ATTR_G, ATTR_GRAPHS) and f.wire == 2:
                        walk(f.value)  # type: ignore[arg-type]

    walk(graph_of(memoryview(model)))
    return found
