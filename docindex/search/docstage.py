"""Documents ranked whole, and the chunk list that knows its documents (issue #21).

``document_stage`` ranks documents by FTS5's ``bm25()`` over their fields with
``FIELD_WEIGHTS`` (title and file name, headings, body), computed by the
store from each document's exact term counts (#46); ``document_scores`` adds RM3-style feedback
from the stored salient terms and the best segment cosines; ``--files`` is
``rank_documents``, the default chunk list ``rank_chunks``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import NamedTuple

from docindex.config import Config
from docindex.models import QueryOptions
from docindex.search.fusion import fuse
from docindex.search.query import ParsedQuery
from docindex.store import DocFilter, DocHit, Index, SegmentRow
from docindex.text.tokenize import query_terms, stopword_terms

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
# bm25 (title and file name, headings, body) field weights (issue #21).
# On SciFact a title weight of 1.0 cost 2 points nDCG@10 (its titles restate
# the abstracts); the known-item sets need the fields (bench/known_items.py).
FIELD_WEIGHTS = (0.2, 0.2, 1.0)
# A document named after the query's key words (its title's or file name's
# terms all in the query: a plugin page, a tldr/man-style page, a tutorial
# titled "Rate Limiting") scores this much more than one that mentions them
# (issue #37). Titles of several words that the query holds are rare in
# SciFact and CMRC2018 (bench/eval.py unchanged), common in docs trees.
NAMED_BONUS = 0.5
# Share of the bonus for a name the query holds half of (``jwt-auth`` for "jwt
# 认证"): 0.25 -> 0.5 lifted bench/questions.py MRR@10 (files: en 0.951 -> 0.962,
# zh 0.729 -> 0.742); SciFact files -0.0012, CMRC2018 and KorQuAD unchanged.
PARTLY = 0.5
NAME_MAX_TERMS = 4  # longer titles are sentences, not names (SciFact's)
# ... and a name holds at least this share of the query's terms: a short title
# inside a long claim (SciFact: "Vitamin D" in a 12-term claim) names nothing
# the query is about (SciFact lexical --files: 0.6852 without, base 0.6892).
NAME_OF_QUERY = 1 / 3
# A front-matter keyword that more than this share of the documents with
# keywords carry (``APISIX``, ``API 网关``, ``Plugin``) is the site's, not a
# page's name.
KEYWORD_SHARE = 0.1
CHUNK_DOC_WEIGHT = 0.6  # share of a chunk's score that is its document's
# Feedback for the chunk list's documents too: +1 point nDCG@10 on SciFact
# (0.692 -> 0.702), one document-frequency lookup per added term (~2 ms).
CHUNK_FEEDBACK = True
RawLists = dict[str, dict[int, tuple[int, float]]]  # list -> id -> (rank, raw)


class Docs(NamedTuple):
    """The document stage of a query (issue #21).

    ``hits``: the best documents by field-weighted bm25 (``document_lexical``);
    ``doc_of``: segment id -> document id for their segments.
    """

    hits: list[DocHit]
    doc_of: dict[int, int]


def document_stage(
    store: Index, parsed: ParsedQuery, match: str, size: int, only: DocFilter
) -> Docs:
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
    return Docs(hits, doc_of)


def with_synonyms(
    store: Index, docs: Docs, match: str, weight: float, size: int, only: DocFilter
) -> Docs:
    """The stage's documents with a synonym's bm25 added (issue #47).

    The documents the synonym's terms rank (``match``) join those of the
    typed terms; each scores its typed terms' bm25 plus ``weight`` times the
    synonym's, and the best ``size`` are kept.
    """
    extra = store.document_lexical(match, size, FIELD_WEIGHTS, only)
    if not extra:
        return docs
    merged = {d.id: d for d in docs.hits}
    score = {d.id: d.score for d in docs.hits}
    for d in extra:
        merged.setdefault(d.id, d)
        score[d.id] = score.get(d.id, 0.0) + weight * d.score
    best = sorted(score, key=lambda i: (-score[i], i))[:size]
    hits = [merged[i]._replace(score=score[i]) for i in best]
    doc_of = {
        sid: d.id
        for d in hits
        for sid in range(d.first_segment, d.first_segment + d.n_segments)
    }
    return Docs(hits, doc_of)


def added(
    typed: list[tuple[int, float]], extra: list[tuple[int, float]], weight: float,
    limit: int,
) -> list[tuple[int, float]]:  # fmt: skip
    """Two bm25 lists of segments as one: ``typed + weight * extra``, best first."""
    score = dict(typed)
    for sid, s in extra:
        score[sid] = score.get(sid, 0.0) + weight * s
    ranked = sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked[:limit]


def _quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def document_scores(
    store: Index, docs: Docs, lists: dict[str, list[tuple[int, float]]],
    qterms: list[str], cfg: Config, feedback: bool, dense: float | None = None,
) -> tuple[dict[int, float], dict[str, list[tuple[int, float]]]]:  # fmt: skip
    """Score the document stage's documents.

    Lexically by bm25 with ``FIELD_WEIGHTS`` (title and file name,
    headings, body: BM25F-like, as FTS5 computes it, from the stored counts), with
    RM3-style feedback in ``auto`` mode (``_with_feedback``); semantically by
    the best cosine of their segments. The two are fused like segment
    lists, then divided by the best document's score (the top one scores 1.0).

    Returns:
        (doc id -> score in [0, 1], the document-level lists for ``--explain``).
    """
    lexical = {d.id: d.score for d in docs.hits if d.score > 0}
    if not lexical and not lists.get("semantic"):
        return {}, {}
    if lexical and feedback and FEEDBACK_DOCS > 0:
        lexical = _with_feedback(store, lexical, qterms, cfg)
    doc_lists: dict[str, list[tuple[int, float]]] = {
        "lexical": sorted(lexical.items(), key=lambda kv: (-kv[1], kv[0]))
    }
    if lists.get("semantic"):
        # A document-vector provider (issue #47) ranks documents the lexical
        # stage did not find: their first segments are in ``doc_of`` too.
        doc_lists["semantic"] = _best_per_document(lists["semantic"], docs)
        if lists.get("ngram"):
            # Beside a document-vector list, the chunks' n-gram cosines
            # (engine._lists) count by their document's best, as a
            # segment-vector provider's list does.
            doc_lists["ngram"] = _best_per_document(lists["ngram"], docs)
    doc_scores = fuse(doc_lists, cfg, dense)
    for doc, share in named_documents(store, docs, qterms, cfg).items():
        if doc in doc_scores:
            doc_scores[doc] *= 1 + NAMED_BONUS * (1.0 if share >= 1 else PARTLY)
    top = max(doc_scores.values(), default=0.0) or 1.0
    return {doc: s / top for doc, s in doc_scores.items()}, doc_lists


def _best_per_document(
    pairs: list[tuple[int, float]], docs: Docs
) -> list[tuple[int, float]]:
    """(doc id, best cosine of its segments), best first."""
    best: dict[int, float] = {}
    for sid, cos in pairs:
        doc = docs.doc_of.get(sid)
        if doc is not None and cos > best.get(doc, 0.0):
            best[doc] = cos
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))


def named_documents(
    store: Index, docs: Docs, qterms: list[str], cfg: Config
) -> dict[int, float]:
    """The stage's documents that the query names, with the share of that
    name's content terms (stopwords aside) the query holds, when at least half
    and the name has at most NAME_MAX_TERMS terms (issue #37): 1.0 for "Rate
    Limiting" and "rate limiting in apisix", 0.5 for ``jwt-auth.md`` and "jwt
    认证".

    A document's names are its title, its file name and each keyword or tag
    of its front matter (``上游`` names ``upstream.md``) that few documents
    carry: one that many do (``APISIX``, ``Plugin``) names none of them.
    """
    query = set(qterms)
    skip = stopword_terms(cfg.stem)
    names = store.document_names([d.id for d in docs.hits])
    wanted = {k for n in names.values() for k in n.keywords}
    held, tagged = store.keyword_counts(sorted(wanted)) if wanted else ({}, 0)
    common = max(2.0, KEYWORD_SHARE * tagged)
    out: dict[int, float] = {}
    for doc, row in names.items():
        stem = row.rel_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        own = [k for k in row.keywords if held.get(k, 0) <= common]
        for name in (row.title or "", stem.replace("_", " ").replace("-", " "), *own):
            named = set(query_terms(name, cjk_ngram=cfg.cjk_ngram, use_stem=cfg.stem))
            named -= skip
            if len(named) > NAME_MAX_TERMS:
                continue
            share = len(named & query) / len(named) if named else 0.0
            if share >= 0.5 and len(named & query) >= NAME_OF_QUERY * len(
                _same_script(query, named)
            ):
                out[doc] = max(out.get(doc, 0.0), share)
    return out


def _same_script(query: set[str], named: set[str]) -> set[str]:
    """The query's terms in the name's script: a latin name (``key-auth``) is
    weighed against the latin words of a Chinese question, whose CJK n-grams
    (使用, 插件, 件做, 做身 ...) would outnumber any name."""
    latin = all(t.isascii() for t in named)
    cjk = not any(t.isascii() for t in named)
    if latin:
        return {t for t in query if t.isascii()} or query
    if cjk:
        return {t for t in query if not t.isascii()} or query
    return query


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
    # Choosing by global document frequencies would cost one FTS5
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


def _feedback(opts: QueryOptions, question: bool) -> bool:
    """RM3 feedback in ``auto`` mode, and not for a question in words (#37).

    A question's own words name the answer; the top documents' vocabulary
    drifts it to their neighbours ("pass data from parent to child" -> slots,
    not props). bench/questions.py MRR@10: en files 0.857 -> 0.951, en chunks
    0.859 -> 0.929, zh within 0.004; KorQuAD +0.007, CMRC2018 -0.002; SciFact's
    claims are no questions (unchanged).
    """
    return opts.mode == "auto" and not question


def _doc_of(store: Index, docs: Docs, ids: Sequence[int]) -> dict[int, int]:
    """segment id -> doc id for ``ids``: the stage's ranges, the store for the rest."""
    known = docs.doc_of
    missing = [sid for sid in ids if sid not in known]
    if not missing:
        return known
    out = dict(known)
    for start in range(0, len(missing), 500):
        out.update(store.doc_ids_of(missing[start : start + 500]))
    return out


def chunk_fusion(
    lists: dict[str, list[tuple[int, float]]], cfg: Config, docs: Docs | None,
    dense: float | None = None,
) -> dict[int, float]:  # fmt: skip
    """The segments' fused scores, before their documents' weigh in.

    ``dense``: None for a provider with a vector per segment. A provider with
    one vector per document (#47) gives each lexical candidate its
    document's cosine, at weight ``dense``: counted for the first segment
    alone, the page vector lifted a page's title chunk above the section
    that answers ("pass data from parent to child": a Vue tutorial's title,
    not ``props.md``'s section). A page found by its vector alone keeps its
    first segment, so the chunk list still shows it.
    """
    if dense is None or docs is None or not lists.get("semantic"):
        return fuse(lists, cfg)
    cosine = dict(_best_per_document(lists["semantic"], docs))
    spread = [
        (sid, cosine[doc])
        for sid, _ in lists.get("lexical", [])
        if (doc := docs.doc_of.get(sid)) in cosine
    ]
    held = {sid for sid, _ in spread}
    spread += [(sid, cos) for sid, cos in lists["semantic"] if sid not in held]
    spread.sort(key=lambda kv: (-kv[1], kv[0]))
    return fuse({**lists, "semantic": spread}, cfg, dense)


def rank_documents(
    store: Index, docs: Docs, fused: dict[int, float],
    lists: dict[str, list[tuple[int, float]]], qterms: list[str], cfg: Config,
    opts: QueryOptions, question: bool = False, dense: float | None = None,
) -> tuple[list[tuple[int, float]], dict[int, SegmentRow], RawLists]:  # fmt: skip
    """``--files``: whole documents (``document_scores``), each shown by its
    best fused segment (its first one when none was fused).

    Returns:
        (segment id, score) per document with a score >= ``min_score``,
        best first; the rows of the page; and, per list, segment id ->
        (document rank, raw document score) for ``--explain``.
    """
    doc_scores, doc_lists = document_scores(
        store, docs, lists, qterms, cfg, _feedback(opts, question), dense
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


def rank_chunks(
    store: Index, docs: Docs, fused: dict[int, float],
    lists: dict[str, list[tuple[int, float]]], qterms: list[str], cfg: Config,
    opts: QueryOptions, question: bool = False, dense: float | None = None,
) -> tuple[list[tuple[int, float]], dict[int, tuple[int, float]], dict[int, int]]:  # fmt: skip
    """The chunk list, each chunk's score knowing its document (issue #21).

    The stage's documents are scored as ``--files`` scores them
    (``document_scores``); a chunk then scores::

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
    doc_scores, _ = document_scores(
        store,
        docs,
        lists,
        qterms,
        cfg,
        CHUNK_FEEDBACK and _feedback(opts, question),
        dense,
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
