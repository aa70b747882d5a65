"""The CTranslate2 engine: its window, the repetition guard, the prompt's tokens, and real speech
heard as well as whisper.cpp hears it."""

from __future__ import annotations

import pytest

from remote_api.shared.models.provision import Models
from sidecar.voice.asr import Transcriber
from sidecar.voice.asr_ct2 import BPE, MIN_FRAMES, CT2Transcriber, unrepeat, window

from .speech import concat, espeak, silence, word_errors, words


def test_the_window_is_the_utterance_plus_a_second_in_whole_seconds():
    assert window(1.0) == MIN_FRAMES
    assert window(4.5) == 600
    assert window(40.0) == 3000
    assert window(1.0, 800) == 800, "a longer shortest window (voice.ct2_window_s) holds for short clips"
    assert window(9.5, 800) == 1100


@pytest.mark.parametrize("raw, text", [
    ("What is the capital of France? What is the capital of France? What", "What is the capital of France?"),
    ("Can you tell me a joke? Can you tell me a", "Can you tell me a joke?"),
    ("How tall is a giraffe. How tall is a gir", "How tall is a giraffe."),
    ("Yes. Yes. Yes.", "Yes."),
    ("tell me, tell me a story", "tell me, tell me a story"),  # a repeat with words after it is speech
    ("It is very very", "It is very very"),
    ("Turn up the volume.", "Turn up the volume."),
    ("今天天气很好。今天天气很好。今天", "今天天气很好。"),  # Chinese: characters, not space-separated words
    ("你好你好你好", "你好"),
    ("小猫再沙发上睡着了。小猫在", "小猫再沙发上睡着了。"),  # the repeat's last character misheard
    ("我们走吧，我们去公园", "我们走吧，我们去公园"),
    ("我喜欢iPhone拍照。我喜欢iPhone拍", "我喜欢iPhone拍照。"),  # a Latin word is one unit
    ("谢谢你", "谢谢你"),  # a doubled character is a word
    ("今天天气很好", "今天天气很好"),
    ("哈哈哈哈哈哈", "哈哈"),  # a one-character run is kept twice: whisper looping on a syllable
])
def test_whisper_saying_it_again_is_cut_and_speech_is_not(raw, text):
    assert unrepeat(raw) == text


@pytest.fixture(scope="module")
def ct2() -> CT2Transcriber:
    return CT2Transcriber(Models().path("whisper-tiny.en-ct2"), threads=2)


def test_the_prompt_is_encoded_with_the_models_own_tokens(ct2):
    bpe = BPE(Models().path("whisper-tiny.en-ct2"))
    for text in (" Hey Stella.", " What's 2 + 2, São Paulo?"):
        assert ct2._text(list(bpe.encode(text)), 10.0) == text, "encode then decode gives the text back"


def test_a_prompt_readied_in_advance_gives_the_same_tokens_and_the_tokenizer_is_not_kept(ct2):
    """The tokenizer's 27 MiB of tables are read for a new prompt, then let go."""
    expected = [ct2._prev, *BPE(Models().path("whisper-tiny.en-ct2")).encode(" Hey Stella.")]
    ct2.prepare("Hey Stella.")
    assert ct2._prompt(" Hey Stella. ") == expected and ct2._prompt("") == []
    assert not any(isinstance(v, BPE) for v in vars(ct2).values())


def test_the_multilingual_base_model_transcribes_english_real_speech():
    """Whisper base (the noisy n-best's model) is multilingual: told English and transcribe, it
    writes jfk.wav's words."""
    from .speech import load

    base = CT2Transcriber(Models().path("whisper-base-ct2"), threads=2)
    heard = words(base(load(Models().path("jfk-sample"))))
    assert heard[:6] == ["and", "so", "my", "fellow", "americans", "ask"], heard


QUESTIONS = ["What is the capital of France?", "Can you tell me a joke?", "Tell me about the moon.",
             "Why is the sky blue?", "Do you like music?"]


def test_real_speech_is_heard_once_and_as_well_as_whisper_cpp_hears_it(ct2):
    """Several espeak voices (deterministic): no transcript says the question twice, and the word
    errors are no more than whisper.cpp's on the same clips (plus one word of slack in all)."""
    cpp = Transcriber(Models().path("whisper-tiny.en"), threads=2)
    errors = {"ct2": 0, "whisper.cpp": 0}
    for voice in ("en-us", "en-gb", "en-us+f3"):
        for text in QUESTIONS:
            clip = concat(espeak(text, voice=voice), silence(0.3))
            heard = ct2(clip, None, "Hey Stella.")
            assert len(words(heard)) <= len(words(text)) + 1, f"said more than was spoken: {heard!r}"
            errors["ct2"] += word_errors(text, heard)
            errors["whisper.cpp"] += word_errors(text, cpp(clip, None, "Hey Stella."))
    assert errors["ct2"] <= errors["whisper.cpp"] + 1, errors


def test_the_wake_prompt_spells_the_name(ct2):
    heard = ct2(concat(espeak("Hey Stella, what time is it?"), silence(0.3)), None, "Hey Stella.")
    assert "stella" in words(heard), heard


def test_an_aborted_run_says_nothing(ct2):
    import threading

    abort = threading.Event()
    abort.set()
    assert ct2(espeak("Tell me a joke."), abort) == ""


def test_a_segment_that_starts_after_the_audio_is_dropped(ct2):
    """whisper saying it again shows in its timestamps: a second segment starting at the end."""
    bpe = BPE(Models().path("whisper-tiny.en-ct2"))
    at = lambda s: ct2._time0 + round(s / 0.02)  # noqa: E731
    said = list(bpe.encode(" Do you like music?"))
    ids = [at(0.0), *said, at(1.5), at(1.5), *said, at(2.0)]
    assert ct2._text(ids, 1.6) == " Do you like music?", "the repeat starts at 1.5 s of 1.6 s of audio"
    assert ct2._text(ids, 3.0) == " Do you like music? Do you like music?", "inside the audio: speech"
