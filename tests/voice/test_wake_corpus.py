"""The wake bench's held-out set is really held out: no voice, text or seed of the sets the
engines were tuned on, and none of its other speech is a wake word by the bench's own rule."""

from __future__ import annotations

import itertools

import pytest

from sidecar.voice.wake import NameMatcher, words
from tests.voice import wake_corpus as corpus
from tests.voice import wake_train

TUNED = ("tuning", "seen", "seen2", "seen3", "seen4", "seen5", "seen6", "seen7", "seen8", "seen9")


def said(texts: corpus.Texts) -> set[str]:
    forms = {f.format(n=n) for f in texts.wake_forms for n in corpus.NAMES.values()}
    return forms | set(texts.chatter) | set(texts.lookalikes) | set(texts.requests) | set(texts.openers) | set(
        texts.subjects) | set(texts.objects)


def test_held_out_voices_are_new():
    heldout = {v.id for v in corpus.voices("heldout")}
    for which in TUNED:
        assert not heldout & {v.id for v in corpus.voices(which)}, which
    tuned = {v for w in TUNED for v in corpus.ESPEAK_VOICES[w]}
    english = {v.split("+")[0] for v in tuned}
    for voice in corpus.ESPEAK_VOICES["heldout"]:
        accent, variant = voice.split("+")
        # a variant the engines were tuned on comes only with an accent they never heard
        assert accent not in english or not any(v.endswith("+" + variant) for v in tuned), voice
    assert all("+" in v for v in corpus.ESPEAK_VOICES["heldout"]), "a plain accent voice was in the tuning sets"


def test_held_out_set_is_big_enough():
    wakes = len(corpus.voices("heldout")) * corpus.WAKES_PER_VOICE["heldout"]
    assert wakes >= 200 and len(corpus.voices("heldout")) >= 8
    assert corpus.TARGET_S["heldout"] >= 3600


def test_held_out_texts_and_seeds_are_new():
    heldout = said(corpus.TEXTS[corpus.FOLDER["heldout"]])
    for which in TUNED:
        assert not heldout & said(corpus.TEXTS[corpus.FOLDER[which]]), which
    for earlier, later in itertools.combinations(sorted(corpus.TEXTS), 2):
        assert not said(corpus.TEXTS[earlier]) & said(corpus.TEXTS[later]), later
    assert corpus.FOLDER["heldout"] not in {corpus.FOLDER[w] for w in TUNED}
    assert len({corpus.SALT[corpus.FOLDER[w]] for w in (*TUNED, "heldout")}) == 10, "noise and choices would repeat"


def test_held_out_speakers_are_new():
    """piper joe played faster or slower is another speaker: the held-out set's factors are new."""
    heldout = {v.shift for v in corpus.voices("heldout")} - {1.0}
    assert heldout and not heldout & {v.shift for w in TUNED for v in corpus.voices(w)}


def test_held_out_voices_say_the_name():
    """A voice whose own rules do not say "Stella" (v6's Maori voice spelt the words, its
    Luxembourgish one said "Shayla") measures the set, not the engine: espeak-ng's phonemes for
    every held-out voice say the name; the check tells those voices from ones that say it (Hindi's and
    Russian's switch to English rules for English words; Japanese's spells them letter by letter)."""
    assert all(corpus.says_the_name(v) for v in corpus.ESPEAK_VOICES["heldout"])
    assert [v for v in ("en-us", "en-gb-scotland", "ro", "lb+f4", "mi+f5", "gd+m5", "es-419", "hi", "ru+m1", "ja")
            if corpus.says_the_name(v)] == ["en-us", "en-gb-scotland", "ro", "hi", "ru+m1"]


def test_the_acoustic_model_was_trained_on_no_held_out_voice_or_language():
    """tests/voice/wake_train.py's voices: the seen sets' and English from other languages' voices."""
    trained = wake_train.training_voices()
    heldout = corpus.voices("heldout")
    assert not {v.id for v in trained} & {v.id for v in heldout}
    languages = {v.name.split("+")[0] for v in trained if v.engine == "espeak"}
    assert not languages & {v.name.split("+")[0] for v in heldout if v.engine == "espeak"}
    assert not {v.shift for v in trained} & {v.shift for v in heldout} - {1.0}, "trained on a held-out speed"
    assert set(wake_train.SEEN) <= set(TUNED), "trained on a set the bench does not count as seen"
    assert corpus.FOLDER["heldout"] not in wake_train.SEEN_TEXTS, "trained on the held-out set's words"


@pytest.mark.parametrize("engine", sorted(corpus.NAMES))
def test_held_out_other_speech_holds_no_wake_word(engine):
    """The name (or "stellar", which sounds the same) said first or after a greeting is a wake
    word (corpus docstring), so it must not be in the other speech; look-alikes ("Hey Jeeves")
    are, and the wake forms are found by the matcher."""
    name = corpus.NAMES[engine].lower()
    texts = corpus.TEXTS[corpus.FOLDER["heldout"]]
    lines = texts.chatter + texts.lookalikes + [f"{o} {r}." for o in texts.openers for r in texts.requests]
    assert [line for line in lines if {name, name + "r"} & set(words(line)[:2])] == []
    matcher = NameMatcher(f"hey {name}")
    assert all(matcher.match(f.format(n=corpus.NAMES[engine])) for f in texts.wake_forms)
