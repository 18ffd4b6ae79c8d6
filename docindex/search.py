"""Keyword (FTS5 bm25), vector (numpy cosine) and weighted fusion -> Hits.

Scores (issue #3) lie in [0, 1] and mean the same thing in every mode. Each
list's raw score is divided by that list's best raw score (bm25 for lexical,
cosine for semantic), so every list's top hit has 1.0; ``auto`` mode fuses the
two by a weighted mean of these normalised scores::

    score(d) = (lexical(d) / max lexical + w * semantic(d) / max semantic) / (1 + w)

with ``w = cfg.semantic_weight`` (0.5) and a missing list counting 0. A hit
that both lists rank first scores 1.0; a single-mode query's best hit scores
1.0 too, so ``--min-score`` is "share of the best possible score" everywhere.
Weighted Reciprocal Rank Fusion (``rrf``, ``k = cfg.rrf_k``) is the other
fusion (``fusion = "rrf"``); on the evaluation sets it ranked worse than the
score fusion because the n-gram list is weaker than bm25 (see bench/eval.py).

Documents (issue #21): every document is also one row of ``doc_fts`` (title
with file name, headings, body; pre-tokenised like segments). In ``auto`` and
``lexical`` mode a query first ranks documents by FTS5's
``bm25(doc_fts, *FIELD_WEIGHTS)`` (BM25F-like: a field weight per column,
``k1 = 1.2``, ``b = 0.75``), keeps the ``max(DOC_POOL, 2 x (top + offset))``
best, and computes the segments' bm25 for those documents' segments alone
(``_document_stage``): FTS5 spends most of a broad query on per-row bm25, so
this costs less than ranking every matching segment. Each document's
semantic score is its best segment cosine; the two are fused as above and
divided by the best document's score. In ``auto`` mode an RM3-style pass
(``_with_feedback``) adds FEEDBACK_TERMS terms from the FEEDBACK_DOCS best
documents' stored salient terms (``documents.terms``, written at index
time: nothing is tokenised per query), the user's terms keeping
FEEDBACK_ORIGINAL of the weight.

``--files`` ranks these documents (``_rank_documents``). The default chunk
list (``_rank_chunks``) gives each chunk CHUNK_DOC_WEIGHT of its document's
score, the rest its own fused score, so it ranks documents nearly as well
as ``--files`` without collapsing to one chunk per document.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .config import Config
from .embedder import Embedder, choose
from .embedder import embedder_for as _embedder
from .models import FoldedHit, Hit
from .models import QueryOptions as QueryOptions  # re-exported: the old home
from .models import QueryResult as QueryResult
from .query import NO_WORDS, ParsedQuery, normalized_words, parse_query, phrase_pattern
from .snippet import best_line, make_snippet, match_spans, open_fence
from .store import DocFilter, DocHit, Index, SegmentRow
from .tokenize import stopword_terms

if TYPE_CHECKING:  # imported where used: a lexical query needs no embedder (#24)
    from .embed import NgramEmbedder

MODES = ("auto", "lexical", "semantic")
ALL_VECTORS_MAX = 50_000  # --mode semantic scores every vector up to this many
SEMANTIC_POOL = 2000  # lexical candidates --mode semantic scores past that
MAX_TOP = 1000
FOLD_SHOWN = 5  # folded hits a shown hit lists (all are counted in folded_count)
PURE_PYTHON_MAX = 600  # candidates scored without numpy in a fresh process
PURE_PYTHON_QUERIES = 3  # ... for its first queries; later ones import numpy


def quote_fts(term: str) -> str:
    """Quote one term for FTS5 MATCH: user text never reaches FTS5 as syntax.

    NUL characters are dropped: FTS5 reads a quoted string up to the first NUL
    and reports "unterminated string" (issue #8).
    """
    return '"' + term.replace("\x00", "").replace('"', '""') + '"'


def rrf(
    lists: Sequence[Sequence[int]], weights: Sequence[float], k: float = 60.0
) -> dict[int, float]:
    """Weighted Reciprocal Rank Fusion, normalised to [0, 1].

    Args:
        lists: ranked id lists, best first.
        weights: one weight per list.
        k: the RRF constant.

    Returns:
        id -> fused score / best possible score.
    """
    best = sum(w / (k + 1) for w, lst in zip(weights, lists, strict=True) if lst)
    if best <= 0:
        return {}
    scores: dict[int, float] = {}
    for weight, ids in zip(weights, lists, strict=True):
        for rank, doc in enumerate(ids, start=1):
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
    return {doc: min(1.0, s / best) for doc, s in scores.items()}


def _doc_filter(opts: QueryOptions) -> DocFilter:
    """--type, --path and --where as the storage's document filter (pushed down)."""
    return DocFilter(kinds=opts.types, path=opts.path_glob, facets=opts.where)


def fuse_scores(
    lists: Mapping[str, Sequence[tuple[int, float]]], weights: Mapping[str, float]
) -> dict[int, float]:
    """Weighted mean of max-normalised raw scores, in [0, 1].

    Args:
        lists: list name -> (id, raw score) pairs; higher raw is better.
        weights: list name -> weight (a missing name weighs 1.0).

    Returns:
        id -> sum of ``w * raw / max raw`` over the lists, divided by the sum
        of the weights of the non-empty lists. Raw scores <= 0 count 0.
    """
    total = 0.0
    scores: dict[int, float] = {}
    for name, pairs in lists.items():
        if not pairs:
            continue
        weight = weights.get(name, 1.0)
        total += weight
        top = max(raw for _, raw in pairs)
        if top <= 0:
            continue
        for sid, raw in pairs:
            if raw > 0:
                scores[sid] = scores.get(sid, 0.0) + weight * raw / top
    if total <= 0:
        return {}
    return {sid: min(1.0, s / total) for sid, s in scores.items()}


def _fuse(lists: dict[str, list[tuple[int, float]]], cfg: Config) -> dict[int, float]:
    """Fuse the lists that ran with ``cfg.fusion`` (a lone list keeps weight 1)."""
    weights = {
        "lexical": 1.0,
        "semantic": _dense_weight(cfg),
        "ngram": cfg.semantic_weight,
    }
    if len([p for p in lists.values() if p]) <= 1:
        weights = {name: 1.0 for name in lists}
    if cfg.fusion == "rrf":
        names = list(lists)
        return rrf(
            [[sid for sid, _ in lists[n]] for n in names],
            [weights[n] for n in names],
            cfg.rrf_k,
        )
    return fuse_scores(lists, weights)


def _best_per_document(
    store: Index, ranked: list[tuple[int, float]], want: int
) -> tuple[list[tuple[int, float]], dict[int, SegmentRow]]:
    """Keep each document's best segment (``ranked`` is best first).

    ``total`` is then exact when every candidate was looked at, else a lower
    bound (the scan stops once a page's worth of documents is found).
    """
    rows: dict[int, SegmentRow] = {}
    per_doc: list[tuple[int, float]] = []
    seen: set[int] = set()
    step = max(64, want * 4)
    for start in range(0, len(ranked), step):
        chunk = ranked[start : start + step]
        got = store.segments_by_id([sid for sid, _ in chunk])
        for sid, score in chunk:
            row = got.get(sid)
            if row is None or row.doc_id in seen:
                continue
            seen.add(row.doc_id)
            rows[sid] = row
            per_doc.append((sid, score))
        if len(per_doc) > want:
            break
    return per_doc, rows


# Document ranking for --files (issue #3): bm25 over whole documents, then
# RM3-style feedback in auto mode. Chosen on SciFact / CMRC2018 (bench/eval.py).
DOC_K1 = 1.2  # FTS5's bm25 constants; the feedback terms are scored alike
DOC_B = 0.75
DOC_POOL = 30  # documents ranked: at least this many, and twice the page
FEEDBACK_DOCS = 3
FEEDBACK_TERMS = 20
FEEDBACK_ORIGINAL = 0.5  # share of the query weight kept by the user's terms
FEEDBACK_MIN_DOCS = 50  # no feedback in a smaller index
FEEDBACK_MIN_TERMS = 4  # nor for a shorter query (a name: bench/known_titles.py)
# bm25(doc_fts, title and file name, headings, body) column weights (issue #21).
# On SciFact a title weight of 1.0 cost 2 points nDCG@10 (its titles restate
# the abstracts); the known-item sets need the fields (bench/known_items.py).
FIELD_WEIGHTS = (0.2, 0.2, 1.0)
CHUNK_DOC_WEIGHT = 0.6  # share of a chunk's score that is its document's
# Feedback for the chunk list's documents too: +1 point nDCG@10 on SciFact
# (0.692 -> 0.702), one ``doc_vocab`` lookup per added term (~2 ms).
CHUNK_FEEDBACK = True
_RawLists = dict[str, dict[int, tuple[int, float]]]  # list -> id -> (rank, raw)


class _Docs(NamedTuple):
    """The document stage of a query (issue #21).

    ``hits``: the best documents by field-weighted bm25 (``doc_fts``);
    ``doc_of``: segment id -> document id for their segments.
    """

    hits: list[DocHit]
    doc_of: dict[int, int]


def _document_stage(
    store: Index, parsed: ParsedQuery, match: str, size: int, only: DocFilter
) -> _Docs:
    """The ``size`` best documents, ranked whole (title, headings, body)."""
    if parsed.constrained:
        # Document-level +word / -word / phrases would mean "anywhere in
        # the document"; the prior ranks by the plain terms instead.
        match = " OR ".join(_quote_term(t) for t in parsed.tokens)
    hits = store.document_lexical(match, size, FIELD_WEIGHTS, only)
    doc_of = {
        sid: d.id
        for d in hits
        for sid in range(d.first_segment, d.first_segment + d.n_segments)
    }
    return _Docs(hits, doc_of)


def _quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _document_scores(
    store: Index, docs: _Docs, lists: dict[str, list[tuple[int, float]]],
    qterms: list[str], cfg: Config, feedback: bool,
) -> tuple[dict[int, float], dict[str, list[tuple[int, float]]]]:  # fmt: skip
    """Score the document stage's documents.

    Lexically by ``bm25(doc_fts, FIELD_WEIGHTS)`` (title and file name,
    headings, body: BM25F-like, computed by FTS5 from the index), with
    RM3-style feedback in ``auto`` mode (``_with_feedback``); semantically by
    the best cosine of their segments. The two are fused like segment
    lists, then divided by the best document's score (the top one scores 1.0).

    Returns:
        (doc id -> score in [0, 1], the document-level lists for ``--explain``).
    """
    lexical = {d.id: d.score for d in docs.hits if d.score > 0}
    if not lexical:
        return {}, {}
    if feedback and FEEDBACK_DOCS > 0:
        lexical = _with_feedback(store, lexical, qterms, cfg)
    doc_lists: dict[str, list[tuple[int, float]]] = {
        "lexical": sorted(lexical.items(), key=lambda kv: (-kv[1], kv[0]))
    }
    if lists.get("semantic"):
        best: dict[int, float] = {}
        for sid, cos in lists["semantic"]:
            doc = docs.doc_of.get(sid)
            if doc is not None and cos > best.get(doc, 0.0):
                best[doc] = cos
        doc_lists["semantic"] = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
    doc_scores = _fuse(doc_lists, cfg)
    top = max(doc_scores.values(), default=0.0) or 1.0
    return {doc: s / top for doc, s in doc_scores.items()}, doc_lists


def _with_feedback(
    store: Index, lexical: dict[int, float], qterms: list[str], cfg: Config
) -> dict[int, float]:
    """RM3-style re-scoring: the user's terms plus the top documents' salient terms.

    The FEEDBACK_DOCS best documents vote for their stored salient terms
    (``documents.terms``: count / length, weighted by ``exp(score - best)``);
    of the 5 x FEEDBACK_TERMS most voted, the FEEDBACK_TERMS with the highest
    vote x idf (idf from their share of the DOC_POOL best documents) are
    added, each scored by bm25 (k1 = DOC_K1, b = DOC_B, the index's idf)
    from the stored counts. A document then scores FEEDBACK_ORIGINAL of its bm25
    per query term plus the rest from the added terms. Nothing is tokenised
    at query time (issue #21). On SciFact the feedback adds ~1.5 points.
    """
    if len(set(qterms)) < FEEDBACK_MIN_TERMS:
        return lexical
    n_docs, mean_len = store.document_stats()
    if n_docs < FEEDBACK_MIN_DOCS:
        # FTS5's idf is ~0 for a term in half the documents: in a small
        # folder the added terms would outweigh the user's.
        return lexical
    stored = {
        doc: json.loads(v) for doc, v in store.document_terms(list(lexical)).items()
    }
    top = sorted(lexical, key=lambda d: (-lexical[d], d))[:FEEDBACK_DOCS]
    best = lexical[top[0]]
    skip = stopword_terms(cfg.stem)
    votes: dict[str, float] = {}
    for doc in top:
        if doc not in stored:
            continue
        length, counts = stored[doc]
        share = math.exp(lexical[doc] - best) / max(1, length)
        for t, n in counts.items():
            if t not in skip:
                votes[t] = votes.get(t, 0.0) + share * n
    if not votes:
        return lexical
    voted = sorted(votes, key=lambda t: (-votes[t], t))[: FEEDBACK_TERMS * 5]
    # Choosing by global document frequencies would cost one ``doc_vocab``
    # lookup per voted term (~0.1 ms each: FTS5 walks the term's postings);
    # their share among the best DOC_POOL documents stands in for them.
    pool = [d for d in sorted(lexical, key=lambda d: (-lexical[d], d)) if d in stored]
    pool = pool[:DOC_POOL]
    local = {t: sum(1 for d in pool if t in stored[d][1]) for t in voted}
    scale = n_docs / max(1, len(pool))
    chosen = sorted(
        voted,
        key=lambda t: (-votes[t] * math.log(1 + n_docs / (1 + local[t] * scale)), t),
    )[:FEEDBACK_TERMS]
    dfs = store.document_freqs(chosen)
    total = sum(votes[t] for t in chosen) or 1.0
    weight = {
        t: (1 - FEEDBACK_ORIGINAL) * votes[t] / total
        * max(1e-6, math.log((n_docs - dfs.get(t, 0) + 0.5) / (dfs.get(t, 0) + 0.5)))
        for t in chosen
    }  # fmt: skip
    own = FEEDBACK_ORIGINAL / max(1, len(qterms))
    out: dict[int, float] = {}
    for doc, score in lexical.items():
        extra = 0.0
        if doc in stored:
            length, counts = stored[doc]
            norm = DOC_K1 * (1 - DOC_B + DOC_B * length / max(mean_len, 1.0))
            for t, w in weight.items():
                f = counts.get(t)
                if f:
                    extra += w * f * (DOC_K1 + 1) / (f + norm)
        out[doc] = own * score + extra
    return out


def _doc_of(store: Index, docs: _Docs, ids: Sequence[int]) -> dict[int, int]:
    """segment id -> doc id for ``ids``: the stage's ranges, the store for the rest."""
    known = docs.doc_of
    missing = [sid for sid in ids if sid not in known]
    if not missing:
        return known
    out = dict(known)
    for start in range(0, len(missing), 500):
        out.update(store.doc_ids_of(missing[start : start + 500]))
    return out


def _rank_documents(
    store: Index, docs: _Docs, fused: dict[int, float],
    lists: dict[str, list[tuple[int, float]]], qterms: list[str], cfg: Config,
    opts: QueryOptions,
) -> tuple[list[tuple[int, float]], dict[int, SegmentRow], _RawLists]:  # fmt: skip
    """``--files``: whole documents (``_document_scores``), each shown by its
    best fused segment (its first one when none was fused).

    Returns:
        (segment id, score) per document with a score >= ``min_score``,
        best first; the rows of the page; and, per list, segment id ->
        (document rank, raw document score) for ``--explain``.
    """
    doc_scores, doc_lists = _document_scores(
        store, docs, lists, qterms, cfg, opts.mode == "auto"
    )
    shown = {d.id: d.first_segment for d in docs.hits}
    best: dict[int, float] = {}
    for sid, s in fused.items():
        doc = docs.doc_of.get(sid)
        if doc is not None and s > best.get(doc, -1.0):
            best[doc] = s
            shown[doc] = sid
    ranked_docs = sorted(doc_scores.items(), key=lambda kv: (-kv[1], kv[0]))
    ranked = [(shown[doc], s) for doc, s in ranked_docs if s >= opts.min_score]
    page = ranked[opts.offset : opts.offset + opts.top]
    raw = {
        name: {shown[doc]: (i, s) for i, (doc, s) in enumerate(pairs, start=1)}
        for name, pairs in doc_lists.items()
    }
    return ranked, store.segments_by_id([sid for sid, _ in page]), raw


def _rank_chunks(
    store: Index, docs: _Docs, fused: dict[int, float],
    lists: dict[str, list[tuple[int, float]]], qterms: list[str], cfg: Config,
    opts: QueryOptions,
) -> tuple[list[tuple[int, float]], dict[int, tuple[int, float]], dict[int, int]]:  # fmt: skip
    """The chunk list, each chunk's score knowing its document (issue #21).

    The stage's documents are scored as ``--files`` scores them
    (``_document_scores``); a chunk then scores::

        score(c) = (1 - CHUNK_DOC_WEIGHT) * fused(c) + CHUNK_DOC_WEIGHT * doc(D)

    divided by the best chunk's, with ``doc(D)`` 0 for a document past the
    stage. A document's chunks keep their own order, and chunks of different
    documents interleave: the list does not collapse to one chunk per
    document. Segment scores alone ranked SciFact 3.4 points below this; a
    sum of a document's segment scores ranked worse than its best one.

    Returns:
        (segment id, score) best first, scores >= ``min_score``; segment id
        -> (document rank, document score) for ``--explain``; segment id ->
        doc id of the fused segments.
    """
    doc_scores, _ = _document_scores(
        store, docs, lists, qterms, cfg, CHUNK_FEEDBACK and opts.mode == "auto"
    )
    doc_of = _doc_of(store, docs, list(fused))
    w = CHUNK_DOC_WEIGHT
    scores = {
        sid: (1 - w) * s + w * doc_scores.get(doc_of.get(sid, -1), 0.0)
        for sid, s in fused.items()
    }
    top = max(scores.values(), default=0.0) or 1.0
    ranked = sorted(
        ((sid, s / top) for sid, s in scores.items()), key=lambda kv: (-kv[1], kv[0])
    )
    doc_raw: dict[int, tuple[int, float]] = {}
    if opts.explain:
        order = {
            doc: i
            for i, (doc, _) in enumerate(
                sorted(doc_scores.items(), key=lambda kv: (-kv[1], kv[0])), start=1
            )
        }
        doc_raw = {
            sid: (order[doc], round(doc_scores[doc], 6))
            for sid, _ in ranked
            if (doc := doc_of.get(sid, -1)) in doc_scores
        }
    return [(sid, s) for sid, s in ranked if s >= opts.min_score], doc_raw, doc_of


def parse(text: str, cfg: Config) -> ParsedQuery:
    """``text`` parsed for an index built with ``cfg`` (the edge calls this once).

    Raises:
        BadInputError: ``text`` is past the query limit (checked before parsing).
    """
    from .limits import MAX_QUERY_CHARS, check_length

    check_length("query", text, MAX_QUERY_CHARS)  # issue #17: bounded memory
    return parse_query(_utf8(text), cjk_ngram=cfg.cjk_ngram, use_stem=cfg.stem)


def search(
    store: Index, query: str | ParsedQuery, cfg: Config, opts: QueryOptions, *,
    hint: bool = True,
) -> QueryResult:  # fmt: skip
    """Run one query against an open index.

    Args:
        store: the index.
        query: the parsed query (``parse``), or its text to parse here; the
            query language (phrases, ``+``, ``-``) is in ``docindex.query``.
            User text never reaches FTS5 as syntax.
        cfg: settings (ranking weights, tokenizer, embedder).
        opts: per-query options.
        hint: explain an empty first page in ``result.hint`` (issue #6).

    Returns:
        A QueryResult with hits best first.

    Raises:
        BadInputError: the text or an option breaks a limit (``limits.py``).
    """
    from .limits import check_query

    typed = query.text if isinstance(query, ParsedQuery) else query
    check_query(typed, opts)  # before anything scales with the input (issue #17)
    started = time.perf_counter()
    parsed = query if isinstance(query, ParsedQuery) else parse(query, cfg)
    opts = _utf8_options(opts)
    result = QueryResult(query=parsed.text, mode=opts.mode)
    qterms = list(parsed.tokens)
    if not parsed.searchable or not qterms:
        # Stopwords only ("the") matched everything at 1.0 (issue #19).
        result.hint = {
            "unmatched_words": [], "filtered_out": False, "would_match": {},
            "suggestion": f"{NO_WORDS}: "
            + (
                "add a word to look for (-word only excludes)"
                if parsed.excluded and not parsed.positive_text.strip()
                else "add a word that is not a stopword"
            ),
        }  # fmt: skip
        result.took_ms = _ms(started)
        return result
    lists, gate, degraded, docs = _lists(store, parsed, cfg, opts)
    result.degraded = degraded
    result.used = [name for name, pairs in lists.items() if pairs]
    fused = _fuse(lists, cfg)
    raw = {
        name: {sid: (i, s) for i, (sid, s) in enumerate(pairs, start=1)}
        for name, pairs in lists.items()
    }
    ranked = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
    ranked = [(sid, s) for sid, s in ranked if s >= opts.min_score]
    want = opts.top + opts.offset
    doc_raw: dict[int, tuple[int, float]] = {}
    doc_of: dict[int, int] | None = None
    folded: dict[int, list[tuple[int, float]]] = {}
    if opts.files and docs is not None:
        # --files ranks whole documents (the document stage, issue #21).
        ranked, rows, raw = _rank_documents(
            store, docs, fused, lists, qterms, cfg, opts
        )
    elif opts.files:
        ranked, rows = _best_per_document(store, ranked, want)
    else:
        if docs is not None:  # chunks know their document's score (#21)
            ranked, doc_raw, doc_of = _rank_chunks(
                store, docs, fused, lists, qterms, cfg, opts
            )
        if opts.per_doc > 0:
            ranked, folded = fold_per_document(store, ranked, opts.per_doc, doc_of)
        shown = [sid for sid, _ in ranked[opts.offset : want]]
        extra = [sid for s in shown for sid, _ in folded.get(s, ())[:FOLD_SHOWN]]
        rows = store.segments_by_id(shown + extra)
    result.total = len(ranked)
    if opts.offset + opts.top < len(ranked):
        result.next_offset = opts.offset + opts.top
    page = ranked[opts.offset : opts.offset + opts.top]
    result.hits = _page_hits(
        store, page, rows, raw, gate, folded, qterms, cfg, opts, doc_raw
    )
    if hint and not result.hits and opts.offset == 0:
        result.hint = _zero_hint(store, parsed, cfg, opts)
    result.took_ms = _ms(started)
    return result


Ranked = list[tuple[int, float]]  # (segment id, score) best first


def _lists(
    store: Index, parsed: ParsedQuery, cfg: Config, opts: QueryOptions
) -> tuple[dict[str, Ranked], str | None, bool, _Docs | None]:
    """The ranked lists to fuse, the language gate (or None), ``degraded``
    and the document stage (None in semantic mode).

    Lists: ``lexical`` (bm25), ``semantic`` (cosine) and, for a gated neural
    query, ``ngram`` (n-gram vectors made on the fly). In ``auto`` and
    ``lexical`` mode the documents are ranked first (``_document_stage``)
    and the segments' bm25 is computed for theirs alone, which costs less
    than ranking every matching segment (issue #21).
    """
    text = parsed.positive_text
    only = _doc_filter(opts)
    pool = max(200, min(2000, (opts.top + opts.offset) * 20))
    lists: dict[str, Ranked] = {}
    semantic: Ranked | None = None
    every_vector = (
        opts.mode == "semantic"
        and not parsed.constrained  # phrases, + and - need the lexical filter
        and store.max_segment_id() <= ALL_VECTORS_MAX
    )
    if every_vector:
        # Pure semantic ranking scores every vector (one matrix product), so a
        # query with no word in common with a document can still find it. Past
        # ALL_VECTORS_MAX reading every vector costs seconds (bench/query_speed.py)
        # and the lexical candidates (a larger pool) are scored instead.
        semantic = _semantic(store, text, cfg, None, only, pool)
    docs: _Docs | None = None
    if opts.mode != "semantic" or not every_vector or semantic is None:
        match = fts_match(parsed)
        size = SEMANTIC_POOL if opts.mode == "semantic" else pool
        within: list[int] | None = None
        if opts.mode != "semantic":
            n_docs = max(DOC_POOL, 2 * (opts.top + opts.offset))
            docs = _document_stage(store, parsed, match, n_docs, only)
            if not parsed.constrained:
                within = list(docs.doc_of)
        lists["lexical"] = store.lexical(
            match, size, cfg.title_weight, only, within=within
        )
        if parsed.phrases or parsed.excluded:
            lists["lexical"] = _verified(store, parsed, lists["lexical"])
    if opts.mode == "semantic" and not every_vector:
        candidates = [sid for sid, _ in lists.pop("lexical")]
        semantic = _semantic(store, text, cfg, candidates, only, pool)
        if semantic is None:
            lexical = store.lexical(match, pool, cfg.title_weight, only)
            if parsed.phrases or parsed.excluded:
                lexical = _verified(store, parsed, lexical)
            lists["lexical"] = lexical
    # Language gate (issue #9): an English-only neural model gets no weight
    # on a mostly-CJK or mostly-[UNK] query; --explain shows it as "gate".
    gate = _dense_gate(cfg, text) if opts.mode == "auto" else None
    degraded = _provider_degraded(cfg)  # minilm chosen but not installed
    if gate is not None:
        semantic = []
        # The n-gram vectors' small gain on CJK should survive the gate: score
        # the lexical candidates with n-gram vectors made on the fly (#9).
        fallback = _ngram_fallback(store, text, cfg, lists.get("lexical", []))
        if fallback:
            lists["ngram"] = fallback
    elif opts.mode == "auto":
        # auto re-scores the lexical candidates by cosine; scoring every vector
        # costs more and gained nothing measurable (bench/eval.py, issue #3).
        candidates = [sid for sid, _ in lists["lexical"]]
        semantic = _semantic(store, text, cfg, candidates, only, pool)
    if opts.mode in ("auto", "semantic"):
        if semantic is None:
            degraded = True
        elif semantic:
            lists["semantic"] = semantic
    return lists, gate, degraded, docs


def _page_hits(
    store: Index, page: Ranked, rows: dict[int, SegmentRow],
    raw: dict[str, dict[int, tuple[int, float]]], gate: str | None,
    folded: dict[int, Ranked], qterms: list[str], cfg: Config, opts: QueryOptions,
    doc_raw: dict[int, tuple[int, float]],
) -> list[Hit]:  # fmt: skip
    """The page's hits, with ``--explain`` details (the hit's document's rank
    and score in ``document``, #21) and folded hits (#19)."""
    hits: list[Hit] = []
    for sid, score in page:
        row = rows.get(sid) or store.segments_by_id([sid]).get(sid)
        if row is None:
            continue
        explain: dict[str, Any] | None = None
        if opts.explain:
            explain = {
                name: {"rank": r[sid][0], "raw": round(r[sid][1], 6)}
                for name, r in raw.items()
                if sid in r
            }
            if sid in doc_raw:
                explain["document"] = {"rank": doc_raw[sid][0], "raw": doc_raw[sid][1]}
            explain["fused"] = round(score, 6)
            if gate is not None:
                explain["gate"] = gate
        hit = _hit(store, row, score, qterms, cfg, opts, raw, explain)
        if sid in folded:
            hit = dataclasses.replace(hit, folded_count=len(folded[sid]), folded=[
                FoldedHit(r.chunk_id, r.start_line, round(fs, 4), list(r.heading))
                for fsid, fs in folded[sid][:FOLD_SHOWN]
                if (r := rows.get(fsid)) is not None
            ])  # fmt: skip
        hits.append(hit)
    return hits


def fts_match(parsed: ParsedQuery) -> str:
    """The FTS5 MATCH expression of a parsed query; every term is quoted.

    Any ranked term may match; each phrase's and ``+word``'s terms must all
    be there; an excluded word's or phrase's terms must not all be there.
    Phrases are then checked word by word (``_verified``): FTS columns hold
    terms, not the text's word order.
    """
    expr = "(" + " OR ".join(quote_fts(t) for t in parsed.tokens) + ")"
    for group in parsed.required_tokens:
        for term in group:
            expr += f" AND {quote_fts(term)}"
    for group in parsed.excluded_tokens:
        expr += " NOT (" + " AND ".join(quote_fts(t) for t in group) + ")"
    return expr


def _verified(
    store: Index, parsed: ParsedQuery, pairs: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """``pairs`` whose segment text holds every phrase and no excluded phrase.

    The text is compared as normalised words (``query.normalized_words``), so
    ``"rate limiting"`` matches "Rate-Limiting" but not "rate of limiting".
    Exclusions are checked the same way, on the heading path too.
    """
    must = [p for p in map(phrase_pattern, parsed.phrases) if p is not None]
    never = [p for p in map(phrase_pattern, parsed.excluded) if p is not None]
    if not pairs or not (must or never):
        return pairs
    rows = store.segments_by_id([sid for sid, _ in pairs])
    bodies: dict[int, str] = {}
    kept: list[tuple[int, float]] = []
    for sid, score in pairs:
        row = rows.get(sid)
        if row is None:
            continue
        body = bodies.get(row.doc_id)
        if body is None:
            body = bodies[row.doc_id] = store.body(row.doc_id)
        words = normalized_words(body[row.char_start : row.char_end])
        heading = normalized_words(" ".join(row.heading))
        if all(p.search(words) for p in must) and not any(
            p.search(words) or p.search(heading) for p in never
        ):
            kept.append((sid, score))
    return kept


def fold_per_document(
    store: Index, ranked: list[tuple[int, float]], per_doc: int,
    doc_of: dict[int, int] | None = None,
) -> tuple[list[tuple[int, float]], dict[int, list[tuple[int, float]]]]:  # fmt: skip
    """At most ``per_doc`` hits per document; the rest fold behind them (issue #19).

    Returns the ranked list without the folded hits (pages and ``total``
    count these) and, for each document's last shown hit, the hits folded
    behind it, best first. Scores and order are otherwise unchanged.
    ``doc_of`` (segment id -> doc id, when the caller knows it) saves a lookup.
    """
    if doc_of is None:
        doc_of = store.doc_ids_of([sid for sid, _ in ranked])
    shown: list[tuple[int, float]] = []
    count: dict[int, int] = {}
    last: dict[int, int] = {}  # doc -> its last shown segment
    folded: dict[int, list[tuple[int, float]]] = {}
    for sid, score in ranked:
        doc = doc_of.get(sid, -sid)
        n = count.get(doc, 0)
        if n < per_doc:
            count[doc] = n + 1
            last[doc] = sid
            shown.append((sid, score))
        else:
            folded.setdefault(last[doc], []).append((sid, score))
    return shown, folded


def _utf8(text: str) -> str:
    """``text`` with lone surrogates (undecodable argv bytes) replaced by ``?``.

    SQLite cannot bind them and JSON output cannot print them (issue #8).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _utf8_options(opts: QueryOptions) -> QueryOptions:
    import dataclasses

    return dataclasses.replace(
        opts,
        types=tuple(_utf8(t) for t in opts.types),
        path_glob=_utf8(opts.path_glob) if opts.path_glob else opts.path_glob,
        where=tuple((_utf8(k), _utf8(v)) for k, v in opts.where),
    )


def _zero_hint(
    store: Index, parsed: ParsedQuery, cfg: Config, opts: QueryOptions
) -> dict[str, Any]:
    from .hints import zero_result_hint

    def run(relaxed: QueryOptions) -> QueryResult:
        return search(store, parsed, cfg, relaxed, hint=False)

    return zero_result_hint(store, parsed, cfg, opts, run)


def _dense_gate(cfg: Config, text: str) -> str | None:
    """Why the dense list is off for this query (neural provider only), or None."""
    if cfg.embedding_provider != "minilm":
        return None  # never import the neural module for the default provider
    from .embed_minilm import dense_gate

    return dense_gate(_embedder(cfg), text)


def _dense_weight(cfg: Config) -> float:
    """``neural_weight`` for the minilm list (SciFact: 2.0 > 1.5 > 1.0), else
    ``semantic_weight`` (issue #9)."""
    if cfg.embedding_provider != "minilm":
        return cfg.semantic_weight  # no embedder built for a lexical query (#24)
    embedder = _embedder(cfg)
    if embedder is not None and embedder.name == "minilm":
        return cfg.neural_weight
    return cfg.semantic_weight


_FALLBACK = threading.local()  # NgramEmbedders are not thread-safe


def _ngram_fallback(
    store: Index, text: str, cfg: Config, lexical: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """Cosine of n-gram vectors made now for the lexical candidates (gated queries).

    A neural index stores no n-gram vectors; when the language gate turns the
    model off, this rebuilds what the default provider would have ranked, over
    at most the lexical pool, so CJK queries rank as with ``ngram`` (issue #9).
    """
    if not lexical:
        return []
    from .analyze import embed_input, title_text
    from .embed import NgramEmbedder, dequantize, quantize

    key = (cfg.embedding_dim, cfg.cjk_ngram, cfg.stem)
    cache: dict[tuple[int, int, bool], Any] | None = getattr(_FALLBACK, "cache", None)
    if cache is None:
        cache = _FALLBACK.cache = {}
    emb = cache.get(key)
    if emb is None:  # per thread, like embed.embedder_for (issue #17)
        emb = cache[key] = NgramEmbedder(*key)
    ids = [sid for sid, _ in lexical]
    rows = store.segments_by_id(ids)
    ids = [sid for sid in ids if sid in rows]
    inputs = []
    for sid in ids:
        row = rows[sid]
        body = store.body(row.doc_id)[row.char_start : row.char_end]
        title = row.title or title_text(None, row.rel_path)
        inputs.append(embed_input(title, row.heading, body))
    matrix = dequantize(quantize(emb.embed(inputs), emb.bits), emb.dim)
    qt = emb.query_terms(text)
    n_total = max(1, store.max_segment_id())
    dfs = store.doc_freqs(qt)
    idf = {t: math.log(1 + n_total / (1 + dfs.get(t, 0))) for t in qt}
    sims = matrix @ emb.embed([text], weights=idf)[0]
    ranked = sorted(zip(ids, sims.tolist(), strict=True), key=lambda p: (-p[1], p[0]))
    return [(sid, sim) for sid, sim in ranked if sim > 0]


def _provider_degraded(cfg: Config) -> bool:
    # Only the neural provider can be missing; asking ``choose`` for another
    # would build (and import) an embedder a lexical query never uses (#24).
    return cfg.embedding_provider == "minilm" and not choose(cfg).available


def _semantic(
    store: Index, text: str, cfg: Config, candidates: list[int] | None,
    only: DocFilter, limit: int,
) -> list[tuple[int, float]] | None:  # fmt: skip
    """Cosine ranking, best first (positive cosines only, at most ``limit``).

    Args:
        candidates: segment ids to score, or None for every vector (filtered
            by ``only``).

    Returns:
        None when the semantic path is unavailable (provider ``none`` or an
        index without vectors); otherwise (segment id, cosine) pairs.
    """
    embedder = _embedder(cfg)
    recorded = store.get_meta("embedder")
    if embedder is None or recorded is None:
        return None
    if "minilm" in (embedder.name, recorded.get("provider")) and (
        recorded != embedder.params()
    ):
        return None  # vectors from another model (or minilm not installed): issue #9
    found = _stored_vectors(store, candidates, only)
    if found is None:
        return None
    ids, blobs = found
    if not ids:
        return []
    qt = embedder.query_terms(text)
    n_total = max(1, store.max_segment_id())  # ~count(*), without a table scan
    dfs = store.doc_freqs(qt)
    idf = {t: math.log(1 + n_total / (1 + dfs.get(t, 0))) for t in qt}
    from .embed import NgramEmbedder

    ngram = embedder if isinstance(embedder, NgramEmbedder) else None
    if ngram is not None:
        ngram.queries_ranked += 1
    if (
        ngram is not None
        and len(ids) <= PURE_PYTHON_MAX
        and not ngram.numpy_used
        and ngram.queries_ranked <= PURE_PYTHON_QUERIES
    ):
        # A one-shot `docindex query` would spend ~0.1 s importing numpy to
        # score a few hundred candidates; pure Python does it in ~2 ms (#7).
        # A process that keeps querying (MCP, --queries, a library user) pays
        # the import once and saves those ms on every later query.
        return _cosines_pure(ngram, text, idf, ids, blobs, limit)
    return _cosines_numpy(embedder, text, idf, ids, blobs, limit)


def _stored_vectors(
    store: Index, candidates: list[int] | None, only: DocFilter
) -> tuple[list[int], list[bytes]] | None:
    """(ids, blobs) to score; None when the index has no vectors to use."""
    if candidates is None:
        ids, blobs = store.all_vectors(only)
        if not ids and not only:
            return None
    elif candidates:
        ids, blobs = store.vectors(candidates)
        if not ids and store.counts().embedded == 0:
            return None  # an index scanned without vectors (e.g. max_embedded = 0)
    else:
        return [], []
    return ids, blobs


def _cosines_pure(
    ngram: NgramEmbedder, text: str, idf: dict[str, float], ids: list[int],
    blobs: list[bytes], limit: int,
) -> list[tuple[int, float]]:  # fmt: skip
    """``_cosines_numpy`` without numpy, for a few hundred candidates."""
    from .embed import cosine_int8

    qlist = ngram.query_vector(text, weights=idf)
    if not any(qlist):
        return []
    pure = sorted(
        ((sid, sim) for sid, sim in zip(ids, cosine_int8(qlist, blobs), strict=True)),
        key=lambda pair: (-pair[1], pair[0]),
    )
    return [(sid, sim) for sid, sim in pure[:limit] if sim > 0]


def _cosines_numpy(
    embedder: Embedder, text: str, idf: dict[str, float], ids: list[int],
    blobs: list[bytes], limit: int,
) -> list[tuple[int, float]]:  # fmt: skip
    """The best ``limit`` positive cosines of the query with the stored vectors."""
    import numpy as np

    from .embed import dequantize

    qvec = embedder.embed([text], weights=idf)[0]
    if not np.any(qvec):
        return []
    sims = dequantize(blobs, embedder.dim) @ qvec
    id_arr = np.asarray(ids)
    if len(ids) > limit:
        keep = np.argpartition(-sims, limit - 1)[:limit]
        sims, id_arr = sims[keep], id_arr[keep]
    order = np.lexsort((id_arr, -sims))
    return [(int(id_arr[i]), float(sims[i])) for i in order if sims[i] > 0]


def _hit(
    store: Index, row: SegmentRow, score: float, qterms: list[str], cfg: Config,
    opts: QueryOptions, raw: dict[str, dict[int, tuple[int, float]]],
    explain: dict[str, Any] | None,
) -> Hit:  # fmt: skip
    body = store.body(row.doc_id)
    text = body[row.char_start : row.char_end]
    qset = set(qterms)
    spans = match_spans(text, qset, cfg)
    fence = ""
    if row.char_start and ("```" in text or "~~~" in text):
        # A chunk cut from a long fenced block starts inside it: its first
        # closing fence must not read as an opening one (issue #19).
        fence = open_fence(body[: row.char_start])
    snippet = make_snippet(
        text, qset, opts.snippet_chars, opts.highlight, cfg, spans, fence
    )
    offset_line = best_line(text, qset, cfg, spans)
    line = row.start_line + offset_line
    cell = None
    if row.cells and offset_line < len(row.cells):
        cell = row.cells[offset_line]
    root = row.root
    sep = "" if root.endswith(("/", "\\")) else "/"
    from_ = [name for name in raw if row.id in raw[name]]
    if not snippet and not text.strip():
        snippet = row.title or ""  # a title-only document (issue #19)
    return Hit(
        path=f"{root}{sep}{row.rel_path}" if "\\" not in root else f"{root}\\{row.rel_path}",
        rel_path=row.rel_path, root=root, line=line, start_line=row.start_line,
        end_line=row.end_line, title=row.title or row.rel_path.rsplit("/", 1)[-1],
        snippet=snippet, score=round(score, 4), chunk_id=row.chunk_id,
        heading_path=list(row.heading), from_=from_, page=row.page, slide=row.slide,
        sheet=row.sheet, cell=cell, explain=explain,
    )  # fmt: skip


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
