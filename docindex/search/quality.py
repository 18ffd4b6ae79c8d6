"""What a hit is worth on its own (issue #37): coverage, prose, named pages.

The fused score says how a hit compares with the best hit of the same query
(the best scores 1.0 whatever it holds). ``coverage`` says how much of the
query a hit holds, in absolute terms: the share of the query's idf weight
whose terms occur in the hit's text or heading path::

    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    coverage(hit) = sum(idf(t), t in hit) / sum(idf(t), t in query)

with ``N`` the segments in the index and ``df(t)`` those holding ``t``. A
word no document holds keeps the highest idf, so a query about something
the index lacks ("tidb backup to s3") cannot reach half of it: the result
then says "weak match" (``WEAK_COVERAGE``).

Fragments: a chunk with fewer than ``MIN_PROSE_WORDS`` words of prose (a
YAML block, the closing lines of a JSX example) is demoted below the prose
that explains it unless the query itself is code (``is_code_query``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from docindex.config import Config
from docindex.search.query import ParsedQuery
from docindex.store import Index, SegmentRow
from docindex.text.prose import MIN_PROSE_WORDS, open_fence, prose_words
from docindex.text.tokenize import is_cjk, terms

WEAK_COVERAGE = 0.5  # the best hit holds less of the query's weight: "weak match"
# A fragment's score is multiplied by this, and capped below the window's
# prose (bench/questions.py: halving alone left 57 short chunks in 910 top-10
# hits, mostly the closing lines of JSX examples in strong documents).
FRAGMENT_FACTOR = 0.5
FRAGMENT_WINDOW = 3  # documents with prose read past the page's
FRAGMENT_WALK = 600  # chunks read at most
_BATCH = 25
LIFT_WALK = 200  # fragments this far down pass their score to their section's prose
# camelCase, snake_case, a call, a dotted or slashed name, an option: code
_CODE_WORD = re.compile(r"[a-z][A-Z]|_|\(|\)|[.:/=<>{}]\w|^-{1,2}\w")


def term_weights(store: Index, qterms: Sequence[str]) -> dict[str, float]:
    """Each query term's idf (``ln(1 + (N - df + 0.5) / (df + 0.5))``), in query order.

    A CJK bigram that joins two words (see ``coverage``) and that the index
    holds ten times less often than both bigrams beside it weighs 0.
    """
    n = max(1, store.count_segments())
    dfs = store.doc_freqs(list(qterms))
    weights = {
        t: math.log(1 + (n - dfs.get(t, 0) + 0.5) / (dfs.get(t, 0) + 0.5))
        for t in qterms
    }
    for before, term, after in _joins(list(weights)):
        if dfs.get(term, 0) * JUNCTION_RATIO < min(
            dfs.get(before, 0), dfs.get(after, 0)
        ):
            weights[term] = 0.0
    return weights


def coverage(held: set[str], weights: dict[str, float]) -> float:
    """Share of the query's idf weight whose terms are in ``held`` (0-1).

    ``weights`` is in query order. A CJK bigram that spans two words of the
    query (如何设置跨域 -> 设置, 置跨, 跨域) is no word of its own, and being
    rare its idf made a right answer a "weak match" of 32% (#45). It does not
    count when the hit lacks it but holds the bigrams on both its sides (or,
    ``term_weights``, when the index holds it far less often than them).
    """
    junctions = {
        term for before, term, after in _joins(list(weights))
        if term not in held and before in held and after in held
    }  # fmt: skip
    total = sum(w for t, w in weights.items() if t not in junctions)
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if t in held) / total


# A joining bigram held this many times less often than both neighbours is no word.
JUNCTION_RATIO = 10


def _joins(order: list[str]) -> list[tuple[str, str, str]]:
    """(before, bigram, after): the CJK bigrams of ``order`` between the two
    bigrams that overlap them (设置, 置跨, 跨域): the ones that may join words."""
    out = []
    for i in range(1, len(order) - 1):
        before, term, after = order[i - 1], order[i], order[i + 1]
        if (
            len(term) == 2 and is_cjk(term[0])
            and before[-1:] == term[0] and after[:1] == term[-1]
        ):  # fmt: skip
            out.append((before, term, after))
    return out


def held_terms(text: str, heading: Iterable[str], cfg: Config) -> set[str]:
    """The index terms of a hit's text and heading path."""
    joined = " ".join((*heading, text))
    return set(terms(joined, cjk_ngram=cfg.cjk_ngram, use_stem=cfg.stem))


def is_code_query(parsed: ParsedQuery) -> bool:
    """True when every word of the query looks like code (``useState``,
    ``kubectl``-style options, ``a.b``, ``f()``): code chunks then answer it."""
    words = [w for part in (*parsed.words, *parsed.required) for w in part.split()]
    return bool(words) and all(_CODE_WORD.search(w) for w in words)


def demote_fragments(
    store: Index, ranked: list[tuple[int, float]], want: int, *, add: bool = True
) -> list[tuple[int, float]]:
    """``ranked`` (best first) with the fragments that could reach a page demoted.

    The chunks are read in rank order until those read hold prose from
    ``want + FRAGMENT_WINDOW`` documents (at most FRAGMENT_WALK chunks):
    whatever ``--per-doc`` folds, the page's chunks are then all read, and
    what is read does not depend on folding (folding never changes a
    score). A fragment (under MIN_PROSE_WORDS words of prose) scores
    FRAGMENT_FACTOR of its score, at most that share of the lowest prose
    chunk read, so the prose comes first; the list is then sorted again and
    divided by its best score.

    The section's prose answers for its code (issue #37): a fragment among
    the first LIFT_WALK chunks read passes its score to the chunk next
    to it in the same section when that one is prose (added to the list
    when ``add`` and it was no candidate: a phrase, ``+word`` or ``-word``
    query passes False, its candidates having been checked).
    """
    known: dict[int, bool] = {}
    walked: dict[int, SegmentRow] = {}
    prose_docs: set[int] = set()
    fences: dict[int, tuple[int, str]] = {}
    start = 0
    while len(prose_docs) < want + FRAGMENT_WINDOW and start < len(ranked):
        if start >= FRAGMENT_WALK:
            break
        batch = [sid for sid, _ in ranked[start : start + _BATCH]]
        rows = store.segments_by_id(batch)
        walked.update(rows)
        found = fragment_ids(store, list(rows.values()), fences)
        for sid in batch:
            row = rows.get(sid)
            if row is not None:
                known[sid] = sid in found
                if sid not in found:
                    prose_docs.add(row.doc_id)
        start += _BATCH
    if not any(known.values()):
        return ranked
    scores = dict(ranked)
    head = [(sid, s) for sid, s in ranked[:LIFT_WALK] if sid in walked]
    for sid, score in _section_prose(store, head, walked, known, fences).items():
        if add or sid in scores:
            scores[sid] = max(scores.get(sid, 0.0), score)
    floor = min(
        (s for sid, s in scores.items() if known.get(sid) is False), default=1.0
    )
    scores = {
        sid: min(s, floor) * FRAGMENT_FACTOR if known.get(sid) else s
        for sid, s in scores.items()
    }
    out = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    top = out[0][1] or 1.0
    return [(sid, s / top) for sid, s in out]


def _section_prose(
    store: Index, head: list[tuple[int, float]], walked: dict[int, SegmentRow],
    known: dict[int, bool], fences: dict[int, tuple[int, str]],
) -> dict[int, float]:  # fmt: skip
    """Prose chunk id -> the best score of a fragment of ``head`` it sits
    next to in the same section (a document's segments have consecutive ids)."""
    frags = [(sid, s) for sid, s in head if known.get(sid)]
    near = [n for sid, _ in frags for n in (sid + 1, sid - 1) if n not in walked]
    rows = dict(walked)
    if near:
        found = store.segments_by_id(near)
        rows.update(found)
        prose = fragment_ids(store, list(found.values()), fences)
        known.update((n, n in prose) for n in found)
    out: dict[int, float] = {}
    for sid, score in frags:
        row = rows[sid]
        for n in (sid + 1, sid - 1):
            other = rows.get(n)
            if (
                other is not None and known.get(n) is False
                and other.doc_id == row.doc_id and other.heading == row.heading
            ):  # fmt: skip
                out[n] = max(out.get(n, 0.0), score)
                break
    return out


def fragment_ids(
    store: Index, rows: Sequence[SegmentRow],
    fences: dict[int, tuple[int, str]] | None = None,
) -> set[int]:  # fmt: skip
    """The segments of ``rows`` with fewer than MIN_PROSE_WORDS words of prose.

    The scan stores each segment's count (``SegmentRow.prose``), so no
    text is read. For a segment without one (a PostgreSQL index older than
    the column), whether it starts inside a fenced block is read from its
    document's text before it (one pass per document). ``fences`` (doc id
    -> offset read to, fence open there) carries that pass over calls.
    """
    fences = {} if fences is None else fences
    out = {
        row.id for row in rows if row.prose is not None and row.prose < MIN_PROSE_WORDS
    }
    by_doc: dict[int, list[SegmentRow]] = {}
    for row in rows:
        if row.prose is None:  # a PostgreSQL index older than the column
            by_doc.setdefault(row.doc_id, []).append(row)
    for doc_id, doc_rows in by_doc.items():
        body = store.body(doc_id)
        doc_rows.sort(key=lambda r: r.char_start)
        pos, fence = fences.get(doc_id, (0, ""))
        for row in doc_rows:
            if row.char_start < pos:  # before the last pass's end: read again
                pos, fence = 0, ""
            fence = open_fence(body[pos : row.char_start], fence)
            pos = row.char_start
            text = body[row.char_start : row.char_end]
            if prose_words(text, fence, MIN_PROSE_WORDS) < MIN_PROSE_WORDS:
                out.add(row.id)
        fences[doc_id] = (pos, fence)
    return out
