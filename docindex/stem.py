"""Pure-Python English stemmer: the Snowball English ("Porter2") algorithm.

This follows the algorithm published at
https://snowballstem.org/algorithms/english/stemmer.html in its current form,
``english.sbl`` as shipped with Snowball 3.1, which changed some stems of the
older 2.x edition (and so of older descriptions of Porter2):

* R1 also starts after the prefixes ``emerg``, ``inter``, ``later``, ``organ``,
  ``past`` and ``univers`` (``universe`` -> ``univers`` but ``university`` ->
  ``universiti``);
* ``dying``/``lying``/``tying``, ``inning``/``outing``/``canning``/...
  and ``proceed``/``exceed``/``succeed`` are handled by Step 1b rules rather
  than by exception lists;
* a doubled consonant after a lone initial ``a``/``e``/``o`` is kept
  (``added`` -> ``add``), and a stem ending in ``past`` counts as a short
  syllable (``pasted`` -> ``paste``);
* Step 2 maps ``ogist`` -> ``og`` (``biologist`` -> ``biolog``).

Stems are index terms, so these rules are part of the index format: changing
them means re-tokenising existing indexes. Keeping our own copy pins them,
whatever Snowball release happens to be installed.

It agrees exactly with ``snowballstemmer.stemmer("english")`` and PyStemmer
(both 3.1), which ``tests/test_stem.py`` checks on every distinct word of the
SciFact corpus when they are installed. Neither is a dependency.

Only words made of ASCII lowercase letters (and apostrophes, which the algorithm
defines) are stemmed. Anything else -- CJK text, digits, underscores, upper
case (so an un-lowered ``useState`` is left alone), hyphens -- and every word of
fewer than three characters is returned unchanged, so callers can pass every
token through :func:`stem` without filtering first.

Indexing calls :func:`stem` millions of times over a vocabulary of a few hundred
thousand words at most, so results are memoised in a module-level dict that is
emptied when it grows past :data:`CACHE_MAX` entries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["CACHE_MAX", "clear_cache", "stem"]

CACHE_MAX = 200_000
"""Entries the memo may hold before it is cleared (roughly 30 MB at most)."""

_cache: dict[str, str] = {}

_VOWELS = "aeiouy"
# A short syllable's last letter may not be a vowel, w, x or Y (the marked
# consonant y), per the definition of "short syllable".
_NOT_SHORTV_END = "aeiouywxY"
_LI_ENDING = "cdeghkmnrt"

# Whole words with a fixed result ("exception1" in english.sbl).
_EXCEPTIONS: dict[str, str] = {
    "andes": "andes",
    "atlas": "atlas",
    "bias": "bias",
    "cosmos": "cosmos",
    "early": "earli",
    "gently": "gentl",
    "howe": "howe",
    "idly": "idl",
    "news": "news",
    "only": "onli",
    "singly": "singl",
    "skies": "sky",
    "skis": "ski",
    "sky": "sky",
    "ugly": "ugli",
}

# If a word starts with one of these, R1 begins right after it.
_R1_PREFIXES = (
    "arsen",
    "commun",
    "emerg",
    "gener",
    "inter",
    "later",
    "organ",
    "past",
    "univers",
)

# R1 (and R2, when matched again from R1) ends at the first non-vowel that
# follows a vowel. A regex match is a single C call; the pattern cannot
# backtrack badly because the two classes are disjoint.
_REGION = re.compile(r"[^aeiouy]*[aeiouy]+[^aeiouy]").match
_HAS_VOWEL = re.compile(r"[aeiouy]").search
# Prelude: a y after a vowel is a consonant (Y). Matches do not overlap, so in
# "ayy" only the first y is marked, exactly as the left-to-right Snowball loop.
_Y_AFTER_VOWEL = re.compile(r"([aeiouy])y")
_STEMMABLE = re.compile(r"[a-z']+").fullmatch

_STEP1B_EXCEPT_ING = frozenset({"even", "cann", "inn", "earr", "herr", "out"})
_STEP1B_EXCEPT_EED = frozenset({"succ", "proc", "exc"})
_DOUBLES = frozenset({"bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt"})

# Step 2 and 3 replacements, in R1. None marks the suffixes with an extra
# condition on the preceding letter ("ogi" and "li" in Step 2) or on R2
# ("ative" in Step 3).
_STEP2: dict[str, str | None] = {
    "tional": "tion",
    "enci": "ence",
    "anci": "ance",
    "abli": "able",
    "entli": "ent",
    "izer": "ize",
    "ization": "ize",
    "ational": "ate",
    "ation": "ate",
    "ator": "ate",
    "alism": "al",
    "aliti": "al",
    "alli": "al",
    "fulness": "ful",
    "ousli": "ous",
    "ousness": "ous",
    "iveness": "ive",
    "iviti": "ive",
    "biliti": "ble",
    "bli": "ble",
    "ogist": "og",
    "fulli": "ful",
    "lessli": "less",
    "ogi": None,
    "li": None,
}
_STEP3: dict[str, str | None] = {
    "tional": "tion",
    "ational": "ate",
    "alize": "al",
    "icate": "ic",
    "iciti": "ic",
    "ical": "ic",
    "ful": "",
    "ness": "",
    "ative": None,
}
# Step 4 deletes these in R2; "ion" also needs a preceding s or t.
_STEP4 = frozenset(
    {
        "al",
        "ance",
        "ence",
        "er",
        "ic",
        "able",
        "ible",
        "ant",
        "ement",
        "ment",
        "ent",
        "ism",
        "ate",
        "iti",
        "ous",
        "ive",
        "ize",
        "ion",
    }
)


def _lengths_by_last_letter(suffixes: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """Map each final letter to the lengths of the suffixes ending in it, longest
    first, so a word is only sliced at lengths that can possibly match."""
    lengths: dict[str, set[int]] = {}
    for suffix in suffixes:
        lengths.setdefault(suffix[-1], set()).add(len(suffix))
    return {c: tuple(sorted(ns, reverse=True)) for c, ns in lengths.items()}


_STEP2_LENGTHS = _lengths_by_last_letter(_STEP2)
_STEP3_LENGTHS = _lengths_by_last_letter(_STEP3)
_STEP4_LENGTHS = _lengths_by_last_letter(_STEP4)


def _short_syllable_end(word: str) -> bool:
    """Whether ``word`` ends in a short syllable (``shortv`` in english.sbl)."""
    n = len(word)
    if n >= 3:
        if (
            word[-1] not in _NOT_SHORTV_END
            and word[-2] in _VOWELS
            and word[-3] not in _VOWELS
        ):
            return True
    elif n == 2 and word[0] in _VOWELS and word[1] not in _VOWELS:
        return True
    return word.endswith("past")


def _stem_uncached(word: str) -> str:
    """Stem a word of ASCII lowercase letters and apostrophes, 3+ characters."""
    # Prelude: drop one leading apostrophe; mark consonant y as Y.
    if word[0] == "'":
        word = word[1:]
    if "y" in word:
        if word[0] == "y":
            word = "Y" + word[1:]
        word = _Y_AFTER_VOWEL.sub(r"\1Y", word)

    # Regions. Only the end of the word changes below, so p1 and p2 stay valid.
    n = len(word)
    if word.startswith(_R1_PREFIXES):
        p1 = next(len(p) for p in _R1_PREFIXES if word.startswith(p))
    else:
        m = _REGION(word)
        p1 = m.end() if m else n
    m = _REGION(word, p1)
    p2 = m.end() if m else n

    # Step 1a: possessives, then plurals.
    if "'" in word:
        if word.endswith("'s'"):
            word = word[:-3]
        elif word.endswith("'s"):
            word = word[:-2]
        elif word.endswith("'"):
            word = word[:-1]
    if word.endswith("s"):
        if word.endswith("sses"):
            word = word[:-2]
        elif word.endswith("ies"):
            word = word[:-2] if len(word) > 4 else word[:-1]
        elif word.endswith(("ss", "us")):
            pass
        elif _HAS_VOWEL(word, 0, len(word) - 2):
            word = word[:-1]
    elif word.endswith("ied"):
        word = word[:-2] if len(word) > 4 else word[:-1]

    # Step 1b: eed, eedly, ed, edly, ing, ingly.
    delete = 0
    last = word[-1:]
    if last == "d":
        if word.endswith("eed"):
            if len(word) - 3 >= p1 and word[:-3] not in _STEP1B_EXCEPT_EED:
                word = word[:-1]
        elif word.endswith("ed"):
            delete = 2
    elif last == "g":
        if word.endswith("ing"):
            base = word[:-3]
            if base in _STEP1B_EXCEPT_ING:
                pass
            elif len(base) == 2 and base[1] == "y" and base[0] not in _VOWELS:
                word = base[0] + "ie"  # dying -> die
            else:
                delete = 3
    elif last == "y":
        if word.endswith("eedly"):
            if len(word) - 5 >= p1 and word[:-5] not in _STEP1B_EXCEPT_EED:
                word = word[:-3]
        elif word.endswith("edly"):
            delete = 4
        elif word.endswith("ingly"):
            delete = 5
    if delete and _HAS_VOWEL(word, 0, len(word) - delete):
        word = word[:-delete]
        if word.endswith(("at", "bl", "iz")):
            word += "e"
        elif word[-2:] in _DOUBLES:
            if not (len(word) == 3 and word[0] in "aeo"):
                word = word[:-1]
        elif len(word) == p1 and _short_syllable_end(word):
            word += "e"

    # Step 1c: y after a non-vowel that is not the first letter -> i.
    if len(word) >= 3 and word[-1] in "yY" and word[-2] not in _VOWELS:
        word = word[:-1] + "i"

    # Steps 2-4. Snowball's "among" takes the longest matching suffix and
    # never falls back to a shorter one when that suffix's condition fails,
    # hence the unconditional break.

    # Step 2 (in R1).
    for n in _STEP2_LENGTHS.get(word[-1:], ()):
        suffix = word[-n:]
        if suffix in _STEP2:
            start = len(word) - len(suffix)
            if start >= p1:
                replacement = _STEP2[suffix]
                if replacement is not None:
                    word = word[:start] + replacement
                elif suffix == "ogi":
                    if start > 0 and word[start - 1] == "l":
                        word = word[:start] + "og"
                elif start > 0 and word[start - 1] in _LI_ENDING:  # "li"
                    word = word[:start]
            break

    # Step 3 (in R1; "ative" in R2).
    for n in _STEP3_LENGTHS.get(word[-1:], ()):
        suffix = word[-n:]
        if suffix in _STEP3:
            start = len(word) - len(suffix)
            if start >= p1:
                replacement = _STEP3[suffix]
                if replacement is not None:
                    word = word[:start] + replacement
                elif start >= p2:
                    word = word[:start]
            break

    # Step 4 (in R2; "ion" after s or t).
    for n in _STEP4_LENGTHS.get(word[-1:], ()):
        suffix = word[-n:]
        if suffix in _STEP4:
            start = len(word) - len(suffix)
            if start >= p2 and (
                suffix != "ion" or (start > 0 and word[start - 1] in "st")
            ):
                word = word[:start]
            break

    # Step 5: final e (in R2, or in R1 after a non-short syllable); ll in R2.
    last = word[-1:]
    if last == "e":
        start = len(word) - 1
        if start >= p2 or (start >= p1 and not _short_syllable_end(word[:-1])):
            word = word[:-1]
    elif last == "l":
        start = len(word) - 1
        if start >= p2 and word[start - 1 : start] == "l":
            word = word[:-1]

    # Postlude.
    if "Y" in word:
        word = word.replace("Y", "y")
    return word


def stem(word: str) -> str:
    """Return the Snowball English stem of a lowercase word.

    Words that are not made only of ASCII lowercase letters and apostrophes
    (CJK, digits, underscores, upper case, hyphens, accented letters) and words
    shorter than three characters come back unchanged. Results are memoised.

    Args:
        word: A single lowercase token, e.g. ``"indexing"``.

    Returns:
        The stem, e.g. ``"index"``; ``word`` itself when it is not stemmed.

    Examples:
        >>> stem("configuring"), stem("generously"), stem("useState")
        ('configur', 'generous', 'useState')
    """
    result = _cache.get(word)
    if result is not None:
        return result
    if len(word) < 3 or not (
        (word.isascii() and word.isalpha() and word.islower())
        or ("'" in word and _STEMMABLE(word))
    ):
        result = word
    else:
        result = _EXCEPTIONS.get(word) or _stem_uncached(word)
    if len(_cache) >= CACHE_MAX:
        # Clearing beats LRU bookkeeping here: the hot vocabulary refills the
        # memo within a few documents.
        _cache.clear()
    _cache[word] = result
    return result


def clear_cache() -> None:
    """Empty the memo (for benchmarks and tests)."""
    _cache.clear()
