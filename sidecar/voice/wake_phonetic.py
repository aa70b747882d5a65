"""A small phonetic key for names, so the wake matcher hears what whisper could have heard.

Whisper spells an accented or synthetic "Stella" many ways: "Stela", "Stellar" (non-rhotic
accents say both alike), "Stettler", "Sdella". Comparing letters needs a generous edit
distance, which then lets real look-alikes through ("Stanley", "Bella"). The key here keeps
what survives accents — the consonant skeleton — and drops what does not:

* vowels are dropped (accents move them most), doubled letters collapse;
* voiced and voiceless pairs merge (b/p, d/t, g/k, v/f, z/s), so "Sdella" = "Stella";
* an "r" after a vowel and before a consonant or the end is dropped (non-rhotic: "stellar" =
  "stella", "jarvis" = "javis"); a leading "h" and silent final "e"/"h" go too.

So "stella", "stela", "stellar", "stettler", "estella" all key to "stl"; "stanley" (stnl),
"bella" (pl), "tell us" (tls) and "travis" (trfs) do not. A word must also have the name's
syllables, or "still" and "steel" (stl, one syllable) would be "stella", and end as it does, on a
vowel or on a consonant (an "r" or "h" after a vowel is a vowel here: "stellar", "stellah"): whisper
writes "Estelle", another name, for a look-alike, and no accent of "Stella" it wrote ended so.
"""

from __future__ import annotations

import re

VOWELS = set("aeiouy")
# Letter groups first (longest first), then single letters, to consonant classes.
_GROUPS = [("tch", "c"), ("sch", "s"), ("ph", "f"), ("ck", "k"), ("qu", "k"), ("sh", "s"), ("ch", "c"),
           ("th", "t"), ("gh", ""), ("wh", "w"), ("kn", "n"), ("wr", "r"), ("x", "ks")]
_CLASSES = {"b": "p", "d": "t", "g": "k", "v": "f", "z": "s", "q": "k", "j": "c", "w": "", "h": ""}


def phonetic_key(word: str) -> str:
    """The consonant skeleton of one word ("Stellar" -> "stl"); "" for a word of vowels only."""
    w = _letters(word)
    for group, sound in _GROUPS:
        w = w.replace(group, sound.upper())  # upper case: already a sound, not a letter
    out: list[str] = []
    for i, ch in enumerate(w):
        nxt = w[i + 1] if i + 1 < len(w) else ""
        prev = w[i - 1] if i else ""
        if ch in VOWELS:
            continue
        if ch == "c":
            sound = "s" if nxt in ("e", "i", "y") else "k"
        elif ch == "g" and nxt in ("e", "i", "y"):
            sound = "c"  # soft g, as j
        elif ch == "r" and prev in VOWELS and nxt not in VOWELS:
            sound = ""  # non-rhotic
        else:
            sound = _CLASSES.get(ch, ch).lower()
        if sound and (not out or out[-1] != sound):
            out.append(sound)
    return "".join(out)


def syllables(word: str) -> int:
    """Vowel groups, a silent final "e" not counted ("style" 1, "stella" 2)."""
    w = _letters(word)
    if len(w) > 3 and w.endswith("e") and w[-2] not in VOWELS:
        w = w[:-1]
    return len(re.findall(r"[aeiouy]+", w))


def sounds_like(word: str, name: str) -> bool:
    """The word could be the name said with an accent: shaped like it (`shaped_like`) and ending the
    same way (so "Estelle" is not "stella")."""
    return shaped_like(word, name) and ends_open(word) == ends_open(name)


def another_name(word: str, name: str) -> bool:
    """Shaped like the name but ending otherwise: whisper heard another name ("Estelle" for "stella")."""
    return shaped_like(word, name) and ends_open(word) != ends_open(name)


def shaped_like(word: str, name: str) -> bool:
    """The same consonant skeleton (of at least two consonants: one matches too many words) and as
    many syllables — one more only as a leading vowel ("estella") — so "still", "steel" and "stole"
    are not "stella"."""
    key = phonetic_key(name)
    if len(key) < 2 or phonetic_key(word) != key:
        return False
    extra = syllables(word) - syllables(name)
    return extra == 0 or (extra == 1 and _letters(word)[:1] in VOWELS)


def ends_open(word: str) -> bool:
    """Whether the word ends on a vowel sound ("stella", "stellar", "stellah"; not "estelle", "style")."""
    w = _letters(word)
    if len(w) > 3 and w.endswith("e") and w[-2] not in VOWELS:
        return False  # a silent e
    return w[-1:] in VOWELS or (w[-1:] in ("r", "h") and w[-2:-1] in VOWELS)


def _letters(word: str) -> str:
    return re.sub(r"[^a-z]", "", re.sub(r"'s$", "", word.lower()))
