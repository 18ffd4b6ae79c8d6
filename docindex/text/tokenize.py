"""One tokenizer for index and query time.

Python's ``sqlite3`` cannot register FTS5 tokenizers, so text is pre-tokenised
here into space-separated terms and indexed by FTS5's ``unicode61`` tokenizer,
which leaves those terms intact. The same function runs on queries, so index
and query always agree.

Rules (issue #2): NFKC + case folding; latin/number words (English words are
Snowball-stemmed, identifiers with digits are kept whole); runs of CJK
characters (Han including the astral extensions, Hiragana, Katakana, Hangul)
become character n-grams of every length from 1 to ``cjk_ngram`` so that one-
and two-character queries work without a word segmenter.
"""

from __future__ import annotations

import operator
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, AnyStr, cast

from docindex.text.stem import stem, stem_new

if TYPE_CHECKING:
    import numpy.typing as npt

    # The CJK layout's arrays (code points and int64 offsets).
    Array = npt.NDArray[Any]

# Han (CJK Unified + Extension A + compatibility + astral B..H), kana, Hangul.
_CJK = (
    "\u2e80-\u2fdf\u3005\u3007\u3021-\u3029\u3038-\u303b"
    "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\uff66-\uff9f"
    "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
    "\U00020000-\U0002fa1f\U00030000-\U000323af"
)


class _LazyRe:
    """A regex compiled on first use: each of these big classes costs 1-4 ms
    to compile, and a one-shot ``docindex query`` needs only one (issue #7)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def __getattr__(self, name: str) -> object:
        compiled = re.compile(self.pattern)
        for method in ("match", "search", "findall", "finditer", "sub", "split"):
            setattr(self, method, getattr(compiled, method))  # later calls skip this
        return getattr(compiled, name)


def _lazy(pattern: str) -> re.Pattern[str]:
    """A ``_LazyRe``, typed as the compiled pattern it stands in for."""
    return cast("re.Pattern[str]", _LazyRe(pattern))


_TOKEN_RE = _lazy(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")
# _TOKEN_RE on ASCII text: group 1 (CJK) can never match; compiles in ~0.1 ms.
_ASCII_TOKEN_RE = _lazy(r"((?!))|([A-Za-z0-9]+)")


def _ranges(spec: str) -> tuple[list[int], list[int]]:
    """Sorted (starts, ends) of a regex character-class body like ``a-zA-Z_``."""
    pairs, i = [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            pairs.append((ord(spec[i]), ord(spec[i + 2])))
            i += 3
        else:
            pairs.append((ord(spec[i]), ord(spec[i])))
            i += 1
    pairs.sort()
    return [a for a, _ in pairs], [b for _, b in pairs]


_CJK_STARTS, _CJK_ENDS = _ranges(_CJK)


def is_cjk(ch: str) -> bool:
    """True when the character ``ch`` is CJK (no regex: snippets test single chars)."""
    code = ord(ch)
    i = bisect_right(_CJK_STARTS, code) - 1
    return i >= 0 and code <= _CJK_ENDS[i]


def token_matches(text: str) -> Iterator[re.Match[str]]:
    """``_TOKEN_RE.finditer(text)``, by a cheaper regex when ``text`` is ASCII."""
    found: Iterator[re.Match[str]] = (
        _ASCII_TOKEN_RE if text.isascii() else _TOKEN_RE
    ).finditer(text)
    return found


_CJK_RE = _lazy(rf"[{_CJK}]")
_CJK_SPLIT_RE = _lazy(rf"([{_CJK}]+)")
_LATIN_RE = _lazy(rf"[^\W_{_CJK}]+")
_concat = operator.add
_SHORT = 256  # term_parts of texts this short use _TOKEN_RE alone
# Characters whose NFKC form is ASCII punctuation or a space: separators before
# and after NFKC, so term_parts may blank them (issue #7: full-width Chinese
# punctuation made nearly every Chinese text fail the NFKC quick check).
_SEPARATOR_COMPAT_RE = _lazy(
    "[\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff5e\xa0\u2009\u200a\u3000\u2026]"
)
# word -> term memo for the index-time loop; cleared when full (cheap refill).
_STEMS: dict[str, str] = {}
_STEMS_MAX = 200_000
# Every ASCII character that is not [a-z0-9] separates terms (after lower()).
_ASCII_SEPARATORS = {
    c: " " for c in range(128) if not (chr(c).islower() or chr(c).isdigit())
}
# The same on ASCII bytes, lower-casing on the way: encode + one table lookup
# + split took 0.32 against 0.48 CPU-s for lower + translate + split over the
# corpus's ASCII segments (issue #7).
_ASCII_BYTES = bytes(
    c + 32 if 65 <= c <= 90 else c if c < 128 and chr(c).isalnum() else 32
    for c in range(256)
)
# ASCII word (bytes) -> term, the memo of the index-time ASCII path.
_STEMS_ASCII: dict[bytes, str] = {}

# Dropped from queries only (never from the index), and only when the query
# has other words: "how do I configure X" should rank on "configure X".
STOPWORDS = frozenset(
    """a about above after again all am an and any are as at be because been
    before being below between both but by can could did do does doing down
    during each few for from further had has have having he her here hers him
    his how i if in into is it its itself just me more most my no nor not now
    of off on once only or other our ours out over own same she should so some
    such than that the their theirs them then there these they this those
    through to too under until up very was we were what when where which while
    who whom why will with would you your yours""".split()
)


def normalize(text: str) -> str:
    """NFKC-normalise and case-fold ``text`` (the one normal form used everywhere)."""
    # The quick check is ~30x cheaper than normalize() on text that is already
    # NFKC, which nearly all text is (issue #7: scan speed).
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text.casefold()


_STOP_TERMS: dict[bool, frozenset[str]] = {}


def stopword_terms(use_stem: bool) -> frozenset[str]:
    """Stopwords as index terms (also stemmed when ``use_stem``), and as written."""
    got = _STOP_TERMS.get(use_stem)
    if got is None:
        got = STOPWORDS | (
            frozenset(stem(w) for w in STOPWORDS) if use_stem else frozenset()
        )
        _STOP_TERMS[use_stem] = got
    return got


def _word_term(word: str, use_stem: bool) -> str:
    return stem(word) if use_stem else word


def iter_terms(
    text: str, *, cjk_ngram: int = 2, use_stem: bool = True, query: bool = False
) -> Iterator[str]:
    """Yield index terms for ``text``.

    Args:
        text: any Unicode string (never raises).
        cjk_ngram: longest CJK n-gram (1, 2 or 3).
        use_stem: Snowball-stem ASCII words.
        query: at query time a CJK run of length >= 2 yields only its longest
            n-grams (precise); at index time every length is emitted.

    Yields:
        Terms, in text order.
    """
    if not query:
        yield from terms(text, cjk_ngram=cjk_ngram, use_stem=use_stem)
        return
    for match in _TOKEN_RE.finditer(normalize(text)):
        cjk, word = match.groups()
        if word is not None:
            yield _word_term(word, use_stem)
            continue
        assert cjk is not None
        n = len(cjk)
        size = min(cjk_ngram, n)
        for i in range(n - size + 1):
            yield cjk[i : i + size]


def terms(
    text: str, *, cjk_ngram: int = 2, use_stem: bool = True, identifiers: bool = True
) -> list[str]:
    """Index-time terms of ``text`` as a list.

    The latin words (stemmed) in text order, then every CJK run's 1-grams,
    then each run's 2-grams, and so on up to ``cjk_ngram``. Ranking only sees
    the multiset (bm25 and the embedder ignore order); index and delete use
    this same function, so the order only has to be deterministic. This is
    the hot loop of a scan (issue #7): words and runs are found by two
    ``findall`` calls and the stem memo maps words in C, so no Python code
    runs per token. ``identifiers`` False leaves out the identifiers' words
    (the n-gram vectors' features, which see sub-words already: issue #47).
    """
    words, runs = term_parts(text, use_stem=use_stem, identifiers=identifiers)
    if runs:
        words.extend(cjk_ngrams(runs, cjk_ngram))
    return words


# Identifiers (issue #47): a name joined by ``_ - .`` or written in camel case.
# Separators already split a name into its words; CamelCase did not, and the
# whole name was not a term, so ``max_retries`` ranked a page saying "max size
# ... Retries" alike. An identifier adds its camel-case words and, when it
# has separators, the joined name (``maxretries``, one term as unicode61 reads
# it): ``cors middleware`` finds ``CORSMiddleware``, and ``max_retries`` ranks
# the page holding it first.
# An identifier starts only where a run of [A-Za-z0-9] starts (the
# lookbehind): the names found are those of the plain pattern (a name never
# starts inside a run: where the run's start fails, so does every later start
# in it). The first two alternatives step over what cannot start a name in one
# match each (findall gives them as empty strings): other characters, and a
# run of [a-z0-9] that no ``._-`` joins to the next. Issue #46: 4.1 against
# 1.2 CPU-s over the corpus's chunks and headings, the same names.
_IDENT_RE = _lazy(
    r"[^A-Za-z0-9]++|[a-z0-9]++(?![A-Za-z0-9]|[._-][A-Za-z0-9])"
    r"|((?<![A-Za-z0-9])(?:[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)+"
    r"|[A-Za-z0-9]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z][a-z])[A-Za-z0-9]*))"
)
_IDENT_PIECE_RE = _lazy(r"[._-]")
# CamelCase words: an acronym before a capitalised word (CORS|Middleware),
# capitalised or lower-case words, other capitals and digits (dropped below).
_CAMEL_RE = _lazy(r"[A-Z]+(?=[A-Z][a-z]{2})|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_CAMEL_HINT_RE = _lazy(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z][a-z]")


def identifier_words(text: str) -> list[str]:
    """The extra words of ``text``'s identifiers, lower-case, unstemmed.

    For each camel-case name (``useState``, ``CORSMiddleware``) its words of
    two letters or more (``use``, ``state``; ``cors``, ``middleware``); for
    each name joined by ``_``, ``-`` or ``.`` with a piece of two letters or
    more (``max_retries``, ``key-auth``, ``os.path``) the joined name
    (``maxretries``). ``text`` is NFKC-normalised, not case-folded: case marks
    the camel-case words. Version numbers and ``e.g.`` add nothing.
    """
    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    names = list(filter(None, _IDENT_RE.findall(text)))
    if not names:
        return []
    # Names repeat (``e.g``, a project's own identifiers): each one's words are
    # worked out once per process and mapped in C, as the stems are.
    memo = _NAME_WORDS
    try:
        return list(chain.from_iterable(map(memo.__getitem__, names)))
    except KeyError:
        pass
    new = set(names).difference(memo)
    if len(memo) + len(new) > _STEMS_MAX:
        memo.clear()
        new = set(names)
    memo.update({name: _name_words(name) for name in new})
    return list(chain.from_iterable(map(memo.__getitem__, names)))


_NAME_WORDS: dict[str, tuple[str, ...]] = {}  # identifier -> identifier_words


def _name_words(name: str) -> tuple[str, ...]:
    """``identifier_words`` of one identifier (an ``_IDENT_RE`` name)."""
    out: list[str] = []
    pieces = _IDENT_PIECE_RE.split(name)
    if len(pieces) > 1 and any(sum(c.isalpha() for c in p) >= 2 for p in pieces):
        out.append("".join(pieces).lower())
    for piece in pieces:
        if _CAMEL_HINT_RE.search(piece):
            words = _camel_words(piece)
            if len(words) > 1:
                out.extend(words)
    return tuple(out)


def _camel_words(piece: str) -> list[str]:
    """A camel-case name's words of two letters or more, lower-case.

    An acronym of one or two capitals stays with the word after it: ``SQLite``
    and ``IOError`` are names, not ``sq lite`` and ``io error``.
    """
    words: list[str] = []
    glue = ""
    for word in _CAMEL_RE.findall(piece):
        if word.isupper() and len(word) <= 2 and not glue:
            glue = word
            continue
        word, glue = glue + word, ""
        if word.isalpha() and len(word) >= 2:
            words.append(word.lower())
    if glue.isalpha() and len(glue) >= 2:
        words.append(glue.lower())
    return words


def identifier_terms(text: str, *, use_stem: bool = True) -> set[str]:
    """The index terms ``identifier_words`` adds to ``text``'s own words."""
    return {_word_term(w, use_stem) for w in identifier_words(text)}


def term_parts(
    text: str, *, use_stem: bool = True, identifiers: bool = True
) -> tuple[list[str], list[str]]:
    """The latin terms of ``text`` (stemmed, in order; then, with
    ``identifiers``, its identifiers' words, ``identifier_words``) and its
    CJK runs."""
    words, runs = _plain_parts(text, use_stem=use_stem)
    if identifiers:
        words.extend(extra_terms(text, use_stem=use_stem))
    return words, runs


def extra_terms(text: str, *, use_stem: bool = True) -> list[str]:
    """``identifier_words`` of ``text`` as index terms (stemmed), in order."""
    extra = identifier_words(text)
    if extra and use_stem:
        return _stem_words(extra, _STEMS)
    return extra


def _plain_parts(text: str, *, use_stem: bool = True) -> tuple[list[str], list[str]]:
    """``term_parts`` without the identifiers' words."""
    if text.isascii():
        # NFKC leaves ASCII alone and casefold is lower(); the tokens are the
        # runs of [a-z0-9], which translate + split find ~5x faster than re.
        if use_stem:
            words_b = text.encode().translate(_ASCII_BYTES).split()
            return _stem_words(words_b, _STEMS_ASCII), []
        return text.lower().translate(_ASCII_SEPARATORS).split(), []
    if len(text) <= _SHORT:
        # A query: the one regex query_terms compiled anyway, instead of
        # compiling three more (~3 ms of a one-shot query, issue #7).
        found = _TOKEN_RE.findall(normalize(text))
        words = [w for _, w in found if w]
        runs = [c for c, _ in found if c]
    else:
        # Same terms as normalize(text): the blanked characters separate terms
        # in either form (tests/test_tokenize.py checks this for each one).
        norm = normalize(_SEPARATOR_COMPAT_RE.sub(" ", text))
        # CJK runs, and the latin words of what lies between them (a space
        # keeps the pieces apart): Chinese text is not scanned twice, and the
        # pieces are often ASCII, which translate + split handle.
        parts = _CJK_SPLIT_RE.split(norm)
        runs, rest = parts[1::2], " ".join(parts[0::2])
        if rest.isascii():
            words = rest.translate(_ASCII_SEPARATORS).split()
        else:
            words = _LATIN_RE.findall(rest)
    return (_stem_words(words, _STEMS) if use_stem else words), runs


def cjk_ngrams(runs: list[str], cjk_ngram: int = 2) -> list[str]:
    """Every run's 1-grams, then each run's 2-grams, ... up to ``cjk_ngram``."""
    out = list("".join(runs))
    if cjk_ngram >= 2:
        extend = out.extend
        for run in runs:
            if len(run) >= 2:
                extend(map(_concat, run, run[1:]))
        for size in range(3, cjk_ngram + 1):
            for run in runs:
                extend(run[i : i + size] for i in range(len(run) - size + 1))
    return out


def cjk_layout(run_lists: Sequence[Sequence[str]]) -> tuple[Array, Array, Array] | None:
    """The CJK runs of each text as numpy arrays, or None when there are none.

    Returns ``(cps, left, text_of)``: every run's code points end to end
    (uint32), how many characters each one has to its run's end (itself
    included), and the index of the text it belongs to. An n-gram of size
    ``k`` starts wherever ``left >= k``. Shared by the FTS n-gram text below
    and the embedder's CJK features.
    """
    import numpy as np

    runs = [run for runs_ in run_lists for run in runs_]
    if not runs:
        return None
    run_len = np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))
    run_text = np.repeat(
        np.arange(len(run_lists), dtype=np.int64), [len(r) for r in run_lists]
    )
    cps = np.frombuffer("".join(runs).encode("utf-32-le"), dtype="<u4")
    run_of = np.repeat(np.arange(len(runs), dtype=np.int64), run_len)
    first = np.cumsum(run_len) - run_len
    left = run_len[run_of] - (np.arange(len(cps)) - first[run_of])
    return cps, left, run_text[run_of]


def cjk_ngram_texts(run_lists: list[list[str]], cjk_ngram: int = 2) -> list[str]:
    """``" ".join(cjk_ngrams(runs, cjk_ngram))`` for each text's runs, in numpy.

    For a file with much CJK text (issue #7): the n-grams are laid out as
    UTF-32 code points, each followed by a space, and decoded once, instead
    of being made one Python string at a time: 0.14 against 0.26 CPU-s over
    the corpus's CJK files, numpy taking those with 512+ CJK characters
    (below that its per-call cost eats the gain).
    """
    import numpy as np

    layout = cjk_layout(run_lists)
    if layout is None:
        return [""] * len(run_lists)
    cps, left, text_of = layout
    n_texts = len(run_lists)
    sizes = range(1, cjk_ngram + 1)
    starts = [np.flatnonzero(left >= size) for size in sizes]
    # counts[k, t]: text t's n-grams of size k + 1; each takes size + 1 places.
    counts = np.stack([np.bincount(text_of[at], minlength=n_texts) for at in starts])
    width = counts * np.arange(2, cjk_ngram + 2, dtype=np.int64)[:, None]
    text_len = width.sum(axis=0)
    text_at = np.cumsum(text_len) - text_len
    block_at = text_at + np.cumsum(width, axis=0) - width  # each size's first place
    out = np.empty(int(text_len.sum()), dtype="<u4")
    for k, (size, at) in enumerate(zip(sizes, starts, strict=True)):
        owner = text_of[at]
        rank = np.arange(len(at)) - (np.cumsum(counts[k]) - counts[k])[owner]
        place = block_at[k][owner] + rank * (size + 1)
        for j in range(size):
            out[place + j] = cps[at + j]
        out[place + size] = 32  # the space after each n-gram
    joined = out.tobytes().decode("utf-32-le")
    # Each text without its last n-gram's space (an empty one stays empty).
    ends = (text_at + np.maximum(text_len - 1, 0)).tolist()
    return [joined[a:b] for a, b in zip(text_at.tolist(), ends, strict=True)]


def _stem_words(words: list[AnyStr], memo: dict[AnyStr, str]) -> list[str]:
    """Stem every word through ``memo`` (all in C once the memo is warm).

    ``memo`` is ``_STEMS`` for str words, ``_STEMS_ASCII`` for the index-time
    ASCII path's bytes words.
    """
    try:
        return list(map(memo.__getitem__, words))
    except KeyError:
        pass
    # Stem only the new words, then map again in C (no Python loop per token).
    new = set(words).difference(memo)
    if len(memo) + len(new) > _STEMS_MAX:
        memo.clear()
        new = set(words)
    if new:
        strs = {w.decode() if isinstance(w, bytes) else w: w for w in new}
        memo.update({strs[w]: t for w, t in stem_new(set(strs)).items()})
    return list(map(memo.__getitem__, words))


def query_terms(text: str, *, cjk_ngram: int = 2, use_stem: bool = True) -> list[str]:
    """Distinct query terms in order; stopwords dropped when other words remain.

    An identifier's words (``identifier_words``) follow the typed words, as
    the index holds them (issue #47).
    """
    seen: dict[str, bool] = {}
    for match in token_matches(normalize(text)):
        cjk, word = match.groups()
        if word is not None:
            term = _word_term(word, use_stem)
            seen[term] = seen.get(term, False) or word not in STOPWORDS
            continue
        for term in iter_terms(cjk, cjk_ngram=cjk_ngram, query=True):
            seen[term] = True
    for word in identifier_words(text):
        term = _word_term(word, use_stem)
        seen[term] = seen.get(term, False) or word not in STOPWORDS
    content = [t for t, keep in seen.items() if keep]
    return content or list(seen)


def has_cjk(text: str) -> bool:
    """True when ``text`` contains at least one CJK character."""
    return _CJK_RE.search(text) is not None


def cjk_ratio(text: str) -> float:
    """Share of CJK characters among the letters and digits of ``text``."""
    letters = sum(1 for ch in text if ch.isalnum())
    if not letters:
        return 0.0
    return len(_CJK_RE.findall(text)) / letters


def word_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """Yield ``(start, end, normalised_word)`` for latin words and CJK runs of ``text``.

    Offsets index the original string; used to place snippets and highlights.
    NFKC can change lengths, so words are matched on the original text with
    per-match normalisation.
    """
    for match in token_matches(text):
        yield match.start(), match.end(), normalize(match.group(0))
