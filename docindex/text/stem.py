"""English stemming: the Snowball English ("Porter2") algorithm, via PyStemmer.

PyStemmer is the Snowball project's own C bindings (what bm25s uses); it
replaced our 375-line pure-Python copy of the algorithm (issue #22), which
gave the same stem for every word of the shared corpus and of SciFact: the
index format did not change. Snowball 3.0 and 3.1 changed some English stems
(``university`` -> ``universiti``, ``added`` -> ``add``), hence the pinned
``PyStemmer>=3.1``; ``tests/test_stem.py`` compares with the independent
pure-Python ``snowballstemmer`` and checks those 3.x stems, so a release that
changed stems again would fail there before it changed anyone's index.

Only words made of ASCII lowercase letters (and apostrophes, which the algorithm
defines) are stemmed. Anything else -- CJK text, digits, underscores, upper
case (so an un-lowered ``useState`` is left alone), hyphens -- and every word of
fewer than three characters is returned unchanged, so callers can pass every
token through :func:`stem` without filtering first. (Snowball itself would
stem ``20steps`` to ``20step``; our tokens with digits are identifiers.)

Indexing calls :func:`stem` millions of times over a vocabulary of a few hundred
thousand words at most, so results are memoised in a module-level dict that is
emptied when it grows past :data:`CACHE_MAX` entries. The memo still pays with
the C stemmer: a dict hit costs ~45 ns, a ``stemWord`` call ~1.2 µs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from Stemmer import Stemmer  # PyStemmer ships no type stubs

__all__ = ["CACHE_MAX", "clear_cache", "stem", "stem_new"]

CACHE_MAX = 200_000
"""Entries the memo may hold before it is cleared (roughly 30 MB at most)."""

_cache: dict[str, str] = {}
_STEMMABLE = re.compile(r"[a-z']+").fullmatch
_stemmer: list[Stemmer] = []  # the Stemmer, made on first use (import ~1 ms)


def _snowball() -> Stemmer:
    if not _stemmer:
        import Stemmer

        # maxCacheSize 0: the memo here is the cache (and is bounded).
        _stemmer.append(Stemmer.Stemmer("english", 0))
    return _stemmer[0]


def _stemmable(word: str) -> bool:
    return len(word) >= 3 and (
        (word.isascii() and word.isalpha() and word.islower())
        or ("'" in word and _STEMMABLE(word) is not None)
    )


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
    result = _snowball().stemWord(word) if _stemmable(word) else word
    if len(_cache) >= CACHE_MAX:
        # Clearing beats LRU bookkeeping here: the hot vocabulary refills the
        # memo within a few documents.
        _cache.clear()
    _cache[word] = result
    return result


def stem_new(words: set[str]) -> dict[str, str]:
    """Stems of many words at once (one C call for the stemmable ones).

    For the tokenizer's own memo, which calls this with the words it has not
    seen yet; :func:`stem`'s memo is left alone.
    """
    out = {w: w for w in words}
    todo = [w for w in words if _stemmable(w)]
    if todo:
        out.update(zip(todo, _snowball().stemWords(todo), strict=True))
    return out


def clear_cache() -> None:
    """Empty the memo (for benchmarks and tests)."""
    _cache.clear()
