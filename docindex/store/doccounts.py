"""Documents' exact term counts, and FTS5's ``bm25()`` computed from them (#46).

Issue #35's option (b): a document's row no longer stores every body word as
FTS5 positions. What ranking a whole document needs of a term is its count in
each field (title and file name, headings, body) and the document's length;
those are stored exactly, and the score FTS5's ``bm25()`` gave over the old
``doc_fts(title, heads, body)`` is computed from them (``bm25_scores``).

Where the counts live (``doc_terms``, an FTS5 table with ``detail=none``,
which stores row ids only, no positions or columns): each document owns
``SLOTS`` consecutive row ids, ``doc_id << SLOT_BITS | slot``, and a term goes
into the rows whose slot is a set bit of its count in a field (``TITLE``,
``HEADS`` and ``BODY`` give each field's first slot and width). A term held
once in the body is one row id in one slot; a count of 6 is two. Querying a
term reads its row ids (FTS5, in C) and adds the bits back. A count too wide
for its slots (a title word 16 times, a body word a million times) sets the
``ESCAPE`` slot instead, and its three counts go to ``doc_term_counts``.
``doc_lengths`` holds each document's length (all fields) and body length.

On the shared corpus this is 3.9 MB where ``doc_fts`` was 15.9, and the
scores are FTS5's to the last bit (``tests/test_doc_rows.py`` compares them
with FTS5's own over the old rows): the weighted frequency is summed one hit
at a time in column order, the idf and the length norm in the same
operations and order as ``fts5Bm25Function``; terms are counted as FTS5's
``unicode61`` tokenizer counted them (``fts5_counts``).
"""

from __future__ import annotations

import bisect
import functools
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SLOT_BITS = 5
SLOTS = 1 << SLOT_BITS
# (first slot, bits) of each field's count, and the slot of a count stored whole
TITLE = (0, 4)  # up to 15
HEADS = (4, 7)  # up to 127
BODY = (11, 20)  # up to 1,048,575
ESCAPE = 31
FIELDS = (TITLE, HEADS, BODY)
K1 = 1.2  # fts5_aux.c
B = 0.75


@dataclass(frozen=True, slots=True)
class DocTerms:
    """A document's rows in ``doc_terms``, ``doc_term_counts`` and ``doc_lengths``.

    ``slots``: (slot, space-separated terms) for each non-empty slot;
    ``escaped``: (term, title, heads, body) counts too wide for their slots;
    ``length``: the document's terms in all fields; ``body``: in its body.
    """

    slots: tuple[tuple[int, str], ...]
    escaped: tuple[tuple[str, int, int, int], ...]
    length: int
    body: int


def doc_terms(fields: tuple[str, str], body: Counter[str]) -> DocTerms:
    """The stored form of a document's counts (pure: the scan's workers call it).

    Counted as FTS5 counted the old row's columns: a term its ``unicode61``
    tokenizer splits (a ``・`` inside a CJK n-gram) counts as its pieces
    (``fts5_terms``).

    Args:
        fields: the pre-tokenised (title and file name, headings).
        body: each body term's count (its segments' body terms).
    """
    title = fts5_counts(Counter(fields[0].split()))
    heads = fts5_counts(Counter(fields[1].split()))
    body = fts5_counts(body)
    slots: list[list[str]] = [[] for _ in range(SLOTS)]
    wide: set[str] = set()
    for counts, (_, bits) in ((title, TITLE), (heads, HEADS), (body, BODY)):
        if counts and max(counts.values()) >> bits:  # rare: a scan of all only then
            wide.update(t for t, n in counts.items() if n >> bits)
    # Terms of one count share their slots: grouped by count, not one by one.
    for counts, (first, _) in ((title, TITLE), (heads, HEADS), (body, BODY)):
        by_count: dict[int, list[str]] = {}
        get = by_count.get
        for t, n in counts.items():
            group = get(n)
            if group is None:
                by_count[n] = [t]
            else:
                group.append(t)
        for n, terms in by_count.items():
            if wide:
                terms = [t for t in terms if t not in wide]
            bit = 0
            while n:
                if n & 1:
                    slots[first + bit].extend(terms)
                n >>= 1
                bit += 1
    escaped = tuple(
        (t, title.get(t, 0), heads.get(t, 0), body.get(t, 0)) for t in sorted(wide)
    )
    if escaped:
        slots[ESCAPE] = [t for t, *_ in escaped]
    length = title.total() + heads.total() + body.total()
    return DocTerms(
        tuple((s, " ".join(terms)) for s, terms in enumerate(slots) if terms),
        escaped, length, body.total(),
    )  # fmt: skip


# Characters FTS5's unicode61 (Unicode 6.1 tables) keeps in a token as they
# are, among those our tokenizer emits: a term made of these alone is one
# FTS5 token. Any other term (CJK punctuation such as ``・``, radicals, letters
# newer than Unicode 6.1, other scripts) is split by FTS5 itself.
_PLAIN = (
    (0x30, 0x39), (0x61, 0x7A), (0xC0, 0x24F), (0x3005, 0x3005), (0x3007, 0x3007),
    (0x3041, 0x3096), (0x309D, 0x309E), (0x30A1, 0x30FA), (0x30FC, 0x30FE),
    (0x3400, 0x4DB5), (0x4E00, 0x9FCC), (0xAC00, 0xD7A3),
)  # fmt: skip
_STARTS = [a for a, _ in _PLAIN]
_SPLIT: dict[str, tuple[str, ...]] = {}  # term -> its unicode61 tokens (memo)
_SPLIT_MAX = 100_000
_SPLITTER: list[sqlite3.Connection] = []


def _plain(term: str) -> bool:
    """True when FTS5 keeps ``term`` whole (every character in ``_PLAIN``)."""
    if term.isascii():
        return term.isalnum() and term == term.lower()
    for ch in term:
        code = ord(ch)
        i = bisect.bisect_right(_STARTS, code) - 1
        if i < 0 or code > _PLAIN[i][1]:
            return False
    return True


_OTHER: list[re.Pattern[str]] = []


def _other() -> re.Pattern[str]:
    """A character outside ``_PLAIN`` (compiled once per process: ~20-40 ms,
    which a scan's workers pay once and a query never)."""
    if not _OTHER:
        ranges = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _PLAIN)
        _OTHER.append(re.compile(f"[^ {ranges}]"))
    return _OTHER[0]


def fts5_terms(terms: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The terms FTS5's ``unicode61`` would not keep whole, each with its tokens.

    Asked of FTS5 itself (an in-memory table), once per term and process.
    """
    odd = [t for t in terms if not _plain(t)]
    todo = [t for t in odd if t not in _SPLIT]
    if todo:
        if len(_SPLIT) > _SPLIT_MAX:
            _SPLIT.clear()
        if not _SPLITTER:
            conn = sqlite3.connect(":memory:")
            conn.execute(
                "CREATE VIRTUAL TABLE s USING fts5(x, content='', "
                "tokenize='unicode61 remove_diacritics 0')"
            )
            conn.execute("CREATE VIRTUAL TABLE si USING fts5vocab(s, 'instance')")
            _SPLITTER.append(conn)
        conn = _SPLITTER[0]
        conn.executemany("INSERT INTO s (rowid, x) VALUES (?, ?)", enumerate(todo))
        pieces: dict[int, list[str]] = {}
        for row, term in conn.execute("SELECT doc, term FROM si ORDER BY doc, offset"):
            pieces.setdefault(int(row), []).append(str(term))
        conn.execute("INSERT INTO s (s) VALUES ('delete-all')")
        for i, t in enumerate(todo):
            _SPLIT[t] = tuple(pieces.get(i, ()))
    return {t: _SPLIT[t] for t in odd}


def fts5_counts(counts: Counter[str]) -> Counter[str]:
    """``counts`` of our terms as counts of the tokens FTS5 indexes them as."""
    if not counts:
        return counts
    joined = " ".join(counts)
    if joined.isascii() and joined == joined.lower():
        return counts  # [a-z0-9] terms (the tokenizer's ASCII)
    if not _other().search(joined):
        return counts
    split = fts5_terms(counts)
    out: Counter[str] = Counter()
    for t, n in counts.items():
        for piece in split.get(t, (t,)):
            out[piece] += n
    return out


def body_counts(bodies: Iterable[str]) -> Counter[str]:
    """Each term's count over a document's segments' pre-tokenised bodies."""
    counts: Counter[str] = Counter()
    for text in bodies:
        if text:
            counts.update(text.split())
    return counts


# A term's documents: doc id -> its (title, heads, body) counts.
TermHits = dict[int, tuple[int, int, int]]


# slot -> (field, the count it adds): 0 title, 1 headings, 2 body, 3 escaped
_SLOT_VALUE = [
    (field, 1 << (slot - first))
    for slot in range(SLOTS)
    for field, (first, bits) in enumerate(FIELDS)
    if first <= slot < first + bits
] + [(3, 0)]


def decode(rowids: Sequence[tuple[int]]) -> tuple[TermHits, list[int]]:
    """A term's ``doc_terms`` row ids (ascending) -> each document's counts, and
    the documents whose counts are stored whole (``ESCAPE``).

    Plain Python: a query imports no numpy (a cold ``docindex query`` would
    pay ~60 ms), and adding the slots up in SQL (``GROUP BY``) cost ~15x more.
    """
    out: TermHits = {}
    escaped: list[int] = []
    doc = -1
    counts = [0, 0, 0, 0]
    for (rowid,) in rowids:
        d = rowid >> SLOT_BITS
        if d != doc:
            if doc >= 0:
                out[doc] = (counts[0], counts[1], counts[2])
            doc, counts = d, [0, 0, 0, 0]
        field, value = _SLOT_VALUE[rowid & (SLOTS - 1)]
        counts[field] += value
        if field == 3:
            escaped.append(d)
    if doc >= 0:
        out[doc] = (counts[0], counts[1], counts[2])
    return out, escaped


def idf(n_rows: int, n_hit: int) -> float:
    """FTS5's idf of a phrase held by ``n_hit`` of ``n_rows`` rows."""
    value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
    return value if value > 0.0 else 1e-6


@functools.lru_cache(maxsize=4096)
def weighted_freq(counts: tuple[int, int, int], weights: tuple[float, ...]) -> float:
    """FTS5's per-phrase frequency: each hit's column weight added in column order."""
    f = 0.0
    for n, w in zip(counts, weights, strict=True):
        if n and w == 1.0 and f == 0.0:
            f = float(n)  # adding 1.0 n times to 0.0 is exact
            continue
        for _ in range(n):
            f += w
    return f


def bm25_scores(
    n_rows: int, total_tokens: int, lengths: dict[int, int],
    phrases: Sequence[TermHits], weights: tuple[float, float, float],
) -> dict[int, float]:  # fmt: skip
    """FTS5's ``bm25()`` (negated: higher is better) of the documents in ``lengths``.

    Args:
        n_rows: documents in the index; ``total_tokens``: their terms, all
            fields.
        lengths: each candidate's terms in all fields.
        phrases: per query phrase, in order (repeats included): the
            documents holding it in the whole index, with their counts.
        weights: the (title, heads, body) column weights.

    As ``fts5Bm25Function`` computes it, operation for operation: a
    document's score adds its phrases' parts in query order (a phrase it
    does not hold adds 0.0, which changes nothing).
    """
    avgdl = float(total_tokens) / float(n_rows)

    norms = {d: K1 * ((1 - B) + (B * float(n)) / avgdl) for d, n in lengths.items()}

    score: dict[int, float] = {}
    get = score.get
    top = K1 + 1.0
    body_only = weights[2] == 1.0  # adding 1.0 n times to 0.0 gives n exactly
    for hits in phrases:
        weight = idf(n_rows, len(hits))
        for d, counts in hits.items():
            norm = norms.get(d)
            if norm is None:
                continue  # not a candidate
            if body_only and not (counts[0] or counts[1]):
                f = float(counts[2])
            else:
                f = weighted_freq(counts, weights)
            score[d] = get(d, 0.0) + weight * ((f * top) / (f + norm))
    return score
