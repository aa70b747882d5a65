"""The phonetic key: accented spellings of the name match, look-alikes from the corpus do not."""

from __future__ import annotations

import pytest

from sidecar.voice.wake import NameMatcher
from sidecar.voice.wake_phonetic import another_name, ends_open, phonetic_key, sounds_like, syllables


@pytest.mark.parametrize("word", ["Stella", "stela", "Stellar", "Stettler", "Statler", "Estella", "Sdella",
                                  "Stella's", "stellah"])
def test_spellings_whisper_gave_for_stella_sound_like_it(word):
    assert sounds_like(word, "stella")


@pytest.mark.parametrize("word", ["Stanley", "Bella", "tell", "still", "steel", "style", "stole", "Sheila", "Ella",
                                  "Estelle", "Estel"])
def test_look_alikes_do_not_sound_like_stella(word):
    assert not sounds_like(word, "stella")


@pytest.mark.parametrize("word, same", [("Jervis", True), ("Javis", True), ("Travis", False), ("service", False),
                                        ("Harvest", False), ("Davis", False), ("Mavis", False), ("Garvey", False)])
def test_jarvis(word, same):
    assert sounds_like(word, "jarvis") is same


def test_the_key_drops_vowels_merges_voicing_and_a_non_rhotic_r():
    assert phonetic_key("stellar") == phonetic_key("sdela") == "stl"
    assert phonetic_key("travis") == "trfs", "an r before a vowel is said, so kept"
    assert syllables("style") == 1 and syllables("stella") == 2
    assert [w for w in ("stella", "stellar", "stellah", "estelle", "style", "stel") if ends_open(w)] == [
        "stella", "stellar", "stellah"], "an r or h after a vowel ends on it; a final e after a consonant is silent"


@pytest.mark.parametrize("transcript, rest", [
    ("Hey Stellar, what time is it?", "what time is it?"),
    ("A Stettler. Turn it down.", "Turn it down."),
    ("Hey Estella!", ""),
    ("Case Taylor, what time is it?", "what time is it?"),
    ("Here's Tetler.", ""),
    ("Kistela.", ""),
    ("Thanks Stella. It's a time of five minutes.", "It's a time of five minutes."),
    ("Hey, why Stella? Skip this track.", "Skip this track."),
])
def test_the_matcher_takes_the_name_as_whisper_misspells_it(transcript, rest):
    found = NameMatcher("hey stella").match(transcript)
    assert found is not None and found.rest == rest


@pytest.mark.parametrize("transcript", ["Please tell us what happened.", "Still waiting for the bus.",
                                        "Hey Stanley, over here.", "Hey, tell her I said hello.", "Hey Sheila!",
                                        "I told Stella about the party.", "Let's tell them.",
                                        "Hey Estelle, over there.", "Why Stella left is a mystery.",
                                        "So why Stella?"])
def test_the_matcher_refuses_the_corpus_look_alikes(transcript):
    assert NameMatcher("hey stella").match(transcript) is None


def test_another_name_is_shaped_like_the_name_but_ends_otherwise():
    assert [w for w in ("Estelle", "Stell", "Stella", "still", "Estella", "Stanley") if another_name(w, "stella")] == [
        "Estelle"], "'still' has one syllable: no name at all; 'Estella' is the name"
    matcher = NameMatcher("hey stella")
    assert matcher.hears_another("Hey Estelle, good morning.")
    assert not matcher.hears_another("Hey Estelle, Stella!") and not matcher.hears_another("Hey, still here.")


def test_the_name_after_a_greeting_split_in_two_leads_a_reading():
    """A Macedonian "Hey Stella" whisper base reads "Hey, why Stella?": the name third, after lead-ins."""
    matcher = NameMatcher("hey stella")
    assert matcher.leads("Hey, why Stella? Skip this track.") and matcher.leads("Jens Stella.")
    assert not matcher.leads("My colleague Stella Price.") and not matcher.leads("Tell me why Stella left.")
