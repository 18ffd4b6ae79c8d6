"""Did you mean (issue #37): near spellings from the index's own vocabulary.

A latin query term that no segment holds, or that is far rarer
(``RARER``) than a term one or two edits away, gets that term as a
suggestion. Candidates are the index terms sharing the word's first two
letters (one fts5vocab range: a few milliseconds); the nearest by
Damerau-Levenshtein distance wins, the more frequent on a tie. No network,
no dictionary: only words the index holds are ever suggested. CJK terms are
left alone (their n-grams are not words).
"""

from __future__ import annotations

from collections.abc import Sequence

from docindex.store import Index

MIN_LENGTH = 5  # shorter words are too often other words one edit away (tidb: tidi)
RARER = 50  # a term this many times rarer than a near spelling gets it too
MIN_FREQ = 3  # a suggestion is held by at least this many segments
# A term held by more segments is a word of this index, not a slip: no
# vocabulary range is read for it (most query words; the range of a common
# prefix costs ~2 ms, 5 ms a query on the shared corpus).
WORD_OF_INDEX = 100


def max_edits(word: str) -> int:
    """Edits allowed for a word: 1 up to 7 letters, 2 from 8."""
    return 1 if len(word) < 8 else 2


def suggestions(store: Index, qterms: Sequence[str]) -> dict[str, str]:
    """query term -> the index term to suggest instead (when there is one).

    Args:
        store: the index.
        qterms: the query's index terms (stemmed like the index's).
    """
    candidates = [
        t for t in dict.fromkeys(qterms)
        if len(t) >= MIN_LENGTH and t.isascii() and t.isalpha()
    ]  # fmt: skip
    if not candidates:
        return {}
    dfs = store.doc_freqs(candidates)
    out: dict[str, str] = {}
    for term in candidates:
        df = dfs.get(term, 0)
        if df >= WORD_OF_INDEX:
            continue
        prefix = term[:2]
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        best: tuple[int, int, str] | None = None
        limit = max_edits(term)
        for word, n in store.vocabulary(prefix, upper):
            if word == term or n < max(MIN_FREQ, RARER * df if df else 0):
                continue
            if abs(len(word) - len(term)) > limit:
                continue
            d = edit_distance(term, word, limit)
            if d <= limit and (best is None or (d, -n, word) < best):
                best = (d, -n, word)
        if best is not None:
            out[term] = best[2]
    return out


def as_written(
    text: str,
    fixes: dict[str, str],
    shown: Sequence[tuple[str, Sequence[tuple[int, int]]]],
    *,
    use_stem: bool = True,
) -> dict[str, str]:
    """``fixes`` (stem -> stem) as people write them: query word -> index word.

    The index holds stems: "middlware" was corrected to "middlewar" (#45). The
    query's own word replaces the key; the word the suggested stem comes from
    in the hits' text (``shown``: each snippet with its highlight spans), the
    nearest to the typed word (then the most frequent), replaces the value. A
    stem no hit shows stays.

    Args:
        text: the query as typed.
        fixes: query term -> index term, as ``suggestions`` gives them.
        shown: (snippet, [start, end) highlight spans) of hits that hold them.
        use_stem: the index's ``stem`` setting.
    """
    from collections import Counter

    from docindex.text.tokenize import query_terms, word_spans

    seen: dict[str, Counter[str]] = {better: Counter() for better in fixes.values()}
    for snippet, spans in shown:
        for start, end in spans:
            word = snippet[start:end]
            for term in query_terms(word, use_stem=use_stem):
                if term in seen:
                    seen[term][word.lower()] += 1
    out: dict[str, str] = {}
    for term, better in fixes.items():
        typed = next(
            (w for _, _, w in word_spans(text) if _term_of(w, use_stem) == term
             or w.lower().startswith(term)), term,
        )  # fmt: skip
        words = seen[better]
        out[typed] = min(
            words,
            key=lambda w: (edit_distance(typed, w, 9), -words[w], w),
            default=better,
        )
    return out


def _term_of(word: str, use_stem: bool) -> str:
    from docindex.text.tokenize import query_terms

    found = query_terms(word, use_stem=use_stem)
    return found[0] if found else ""


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment distance (a swap of neighbours is one edit),
    or ``limit + 1`` once it is sure to exceed ``limit``."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]
