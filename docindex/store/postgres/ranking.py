"""FTS5's query subset and its bm25(), in PostgreSQL SQL (issue #34).

The search side builds FTS5 MATCH strings (``candidates.fts_match``,
``docstage``): quoted one-token phrases joined by ``OR``, ``AND`` and ``NOT``
with parentheses. ``parse_match`` reads that language (FTS5 precedence: NOT,
then AND, then OR) into a tree; ``bool_sql`` turns it into conditions on the
terms a row holds (``search.py``: from its ``postings``), and ``bm25_sql``
into the score FTS5's ``bm25()`` gives (``fts5_aux.c``):

    idf(p)  = ln((N - n(p) + 0.5) / (n(p) + 0.5)), 1e-6 when <= 0
    f(p, D) = sum over columns of weight(column) * hits of p in the column
    score   = sum over the query's phrases p, in order, of
              idf(p) * f * (k1 + 1) / (f + k1 * (1 - b + b * |D| / avgdl))

with k1 = 1.2, b = 0.75, N the rows of the table, n(p) the rows holding p,
|D| the row's tokens in all columns and avgdl their mean over the table.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

from docindex.store.matchexpr import Node as Node
from docindex.store.matchexpr import parse_match as parse_match
from docindex.store.records import DOC_MARK, EngineRows

K1 = 1.2
B = 0.75


def bool_sql(
    node: Node, leaf: Callable[[str], tuple[str, list[object]]]
) -> tuple[str, list[object]]:
    """The expression ``node`` with each term's presence written by ``leaf``."""
    if node.op == "term":
        return leaf(node.term)
    if node.op == "not":
        left, lp = bool_sql(node.kids[0], leaf)
        right, rp = bool_sql(node.kids[1], leaf)
        return f"({left} AND NOT ({right}))", [*lp, *rp]
    parts = [bool_sql(k, leaf) for k in node.kids]
    joiner = " OR " if node.op == "or" else " AND "
    return "(" + joiner.join(p[0] for p in parts) + ")", [
        v for p in parts for v in p[1]
    ]


def idf(n_rows: int, n_hit: int) -> float:
    """FTS5's idf of a phrase held by ``n_hit`` of ``n_rows`` rows."""
    value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
    return value if value > 0.0 else 1e-6


HIT_BITS = 24  # a row's hits of a term: first column << 24 | second column
HIT_MASK = (1 << HIT_BITS) - 1
# A segment's id: its document's id shifted left by this many bits plus its
# ordinal (``PgStore.add_document``).
SEGMENT_BITS = 24


def packed_freq(
    value: str, value_params: list[object], weights: Sequence[float]
) -> tuple[str, list[object]]:
    """SQL of a term's weighted hits in two columns from its packed count
    ``value`` (an SQL expression with ``value_params``; NULL counts 0)."""
    hi = f"coalesce(({value}) >> {HIT_BITS}, 0)"
    lo = f"coalesce(({value}) & {HIT_MASK}, 0)"
    sql = f"%s::float8 * {hi} + %s::float8 * {lo}"
    return sql, [float(weights[0]), *value_params, float(weights[1]), *value_params]


def bm25_sql(
    freqs: Sequence[tuple[str, list[object]]], idfs: Sequence[float], avgdl: float,
    length: str,
) -> tuple[str, list[object], str, list[object]]:  # fmt: skip
    """(lateral select list, its params, score expression, its params) of
    FTS5's bm25 score, given each phrase's weighted hits in the row (``freqs``).

    The lateral part computes each phrase's weighted frequency ``fN`` once;
    the score adds the phrases' terms in query order, as ``fts5Bm25Function``
    does, in float8 throughout.
    """
    lateral = ", ".join(f"({sql}) AS f{i}" for i, (sql, _) in enumerate(freqs))
    lateral_params = [v for _, params in freqs for v in params]
    k1, b = f"{K1}::float8", f"{B}::float8"
    norm = f"({k1} * (1::float8 - {b} + {b} * {length} / %s::float8))"
    terms = [
        f"%s::float8 * (v.f{i} * ({k1} + 1.0::float8)) / (v.f{i} + {norm})"
        for i in range(len(freqs))
    ]
    score = "(0.0::float8 + " + " + ".join(terms) + ")"
    score_params: list[object] = []
    for value in idfs:
        score_params.extend((float(value), float(avgdl) or 1.0))
    return lateral, lateral_params, score, score_params


def _packed(columns: Sequence[str]) -> tuple[dict[str, int], list[str], int]:
    """(term -> packed hits per column, the second column's terms, tokens in
    all columns) of one FTS row of two columns: ``hits(first) << 24 |
    hits(second)`` (``HIT_BITS``).

    Columns hold pre-tokenised terms separated by spaces, which FTS5's
    ``unicode61`` keeps whole (``text.tokenize``): splitting on spaces counts
    what FTS5 counts. The caller counts the body from the second column's
    terms rather than splitting the text again.
    """
    first, second = columns[0].split(), columns[1].split()
    packed = Counter(second)  # the second column's terms are the most
    if first:
        get = packed.get
        for t, n in Counter(first).items():
            packed[t] = n << HIT_BITS | get(t, 0)
    return packed, second, len(first) + len(second)


def document_rows(
    fts: Sequence[tuple[str, str]], fields: tuple[str, str]
) -> EngineRows:
    """A document's postings and counts from its FTS rows (``Index.row_maker``).

    Runs in the scan's worker processes: counting each segment's terms and
    rendering the postings were 60% of the one writer's CPU (issue #34).
    """
    packs: list[dict[str, int]] = []
    seg_lens: list[int] = []
    body: Counter[str] = Counter()
    for pair in fts:
        packed, tokens, n = _packed(pair)
        packs.append(packed)
        seg_lens.append(n)
        body.update(tokens)
    doc_tf, _, fields_len = _packed(fields)
    body_len = body.total()
    doc_len = fields_len + body_len
    return EngineRows(
        lines=postings_copy(DOC_MARK.strip("\t"), packs, doc_tf, body, doc_len),
        seg_lens=tuple(seg_lens),
        doc_len=doc_len,
        body_len=body_len,
        seg_len=sum(seg_lens),
    )


def postings_copy(
    doc_id: int | str, segments: Sequence[dict[str, int]], fields: dict[str, int],
    body: dict[str, int], doc_len: int,
) -> str:  # fmt: skip
    """The document's ``postings`` rows (``schema.m003``) in COPY text format:
    one per term of its fields (``fields``: packed hits) or segments
    (``segments``: each one's packed hits), with the ordinals and packed hits
    of the segments holding it; ``body``: its body hits per term.

    The one loop over every (segment, term) pair adds two items to a list
    (issue #34: the postings' cost); everything else runs once per term.
    """
    held: dict[str, list[str]] = {}
    get = held.get
    for i, packed in enumerate(segments):
        ordinal = str(i)
        for term, hits in zip(packed, map(str, packed.values())):  # noqa: B905
            entry = get(term)
            if entry is None:
                held[term] = [ordinal, hits]
            else:
                entry += (ordinal, hits)
    for term in fields:
        if term not in held:
            held[term] = []
    fld, counts = fields.get, body.get
    head, tail = f"\t{doc_id}\t", f"\t{doc_len}\t{{"
    lines = [
        f"{term}{head}{fld(term, 0)}\t{counts(term, 0)}\t{len(e) >> 1}{tail}"
        f"{','.join(e[::2])}}}\t{{{','.join(e[1::2])}}}\n"
        for term, e in held.items()
    ]
    if any("\\" in term for term in held):  # COPY's text format escapes it
        lines = [_escape_term(line) for line in lines]
    return "".join(lines)


def _escape_term(line: str) -> str:
    term, rest = line.split("\t", 1)
    return term.replace("\\", "\\\\") + "\t" + rest
