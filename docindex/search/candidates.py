"""The ranked lists a query fuses: bm25 of the chunks (after the document
stage), cosines of their vectors, and the FTS5 MATCH expression they share.

Split from ``engine`` (issue #49): ``ranked_lists`` gathers the lists,
``engine.search`` fuses them and makes the page.
"""

from __future__ import annotations

from docindex.config import Config
from docindex.models import QueryOptions
from docindex.search.docstage import (
    DOC_POOL,
    Docs,
    added,
    document_stage,
    with_synonyms,
)
from docindex.search.quality import held_terms
from docindex.search.query import ParsedQuery, normalized_words, phrase_pattern
from docindex.search.semantic import (
    document_vectors,
    language_gate,
    ngram_fallback,
    provider_degraded,
    semantic_ranking,
)
from docindex.store import DocFilter, Index
from docindex.text.synonyms import SYNONYM_WEIGHT

ALL_VECTORS_MAX = 50_000  # --mode semantic scores every vector up to this many


SEMANTIC_POOL = 2000  # lexical candidates --mode semantic scores past that


Ranked = list[tuple[int, float]]  # (segment id, score) best first


def quote_fts(term: str) -> str:
    """Quote one term for FTS5 MATCH: user text never reaches FTS5 as syntax.

    NUL characters are dropped: FTS5 reads a quoted string up to the first NUL
    and reports "unterminated string" (issue #8).
    """
    return '"' + term.replace("\x00", "").replace('"', '""') + '"'


def doc_filter(opts: QueryOptions, store: Index) -> DocFilter:
    """--type, --path, --where and --root as the storage's document filter."""
    root_ids = None
    if opts.roots:
        known = {path: rid for rid, path in store.roots().items()}
        root_ids = tuple(known[r] for r in opts.roots if r in known)
    return DocFilter(
        root_ids=root_ids, kinds=opts.types, path=opts.path_glob or None,
        facets=opts.where,
    )  # fmt: skip


def fts_match(parsed: ParsedQuery) -> str:
    """The FTS5 MATCH expression of a parsed query; every term is quoted.

    Any ranked term may match; each phrase's and ``+word``'s terms must all
    be there; an excluded word's or phrase's terms must not all be there.
    Phrases are then checked word by word (``verified``): FTS columns hold
    terms, not the text's word order.
    """
    expr = "(" + " OR ".join(quote_fts(t) for t in parsed.tokens) + ")"
    for group in parsed.required_tokens:
        for term in group:
            expr += f" AND {quote_fts(term)}"
    for group in parsed.excluded_tokens:
        expr += " NOT (" + " AND ".join(quote_fts(t) for t in group) + ")"
    return expr


def verified(
    store: Index, parsed: ParsedQuery, pairs: list[tuple[int, float]], cfg: Config
) -> list[tuple[int, float]]:
    """``pairs`` whose segment text holds every phrase and no excluded phrase,
    and whose text or heading path holds every ``+word``.

    The text is compared as normalised words (``query.normalized_words``), so
    ``"rate limiting"`` matches "Rate-Limiting" but not "rate of limiting".
    Exclusions are checked the same way, on the heading path too. A
    ``+word`` in the document's title alone does not count (issue #37): the
    FTS title column holds the title with the heading path.
    """
    must = [p for p in map(phrase_pattern, parsed.phrases) if p is not None]
    never = [p for p in map(phrase_pattern, parsed.excluded) if p is not None]
    need = [set(g) for g in parsed.required_tokens]
    if not pairs or not (must or never or need):
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
        text = body[row.char_start : row.char_end]
        if need:
            # the H1 that repeats the title is the title, not the chunk's
            own = [h for h in row.heading if h != row.title]
            held = held_terms(text, own, cfg)
            if not all(g <= held for g in need):
                continue
        words = normalized_words(text)
        heading = normalized_words(" ".join(row.heading))
        if all(p.search(words) for p in must) and not any(
            p.search(words) or p.search(heading) for p in never
        ):
            kept.append((sid, score))
    return kept


def ranked_lists(
    store: Index, parsed: ParsedQuery, cfg: Config, opts: QueryOptions
) -> tuple[dict[str, Ranked], str | None, bool, Docs | None, bool]:
    """The ranked lists to fuse, the language gate (or None), ``degraded``,
    the document stage (None in semantic mode) and whether the lexical
    candidates filled their pool (more may match).

    Lists: ``lexical`` (bm25), ``semantic`` (cosine) and, for a gated neural
    query, ``ngram`` (n-gram vectors made on the fly). In ``auto`` and
    ``lexical`` mode the documents are ranked first (``document_stage``)
    and the segments' bm25 is computed for theirs alone, which costs less
    than ranking every matching segment (issue #21).
    """
    text = parsed.positive_text
    only = doc_filter(opts, store)
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
        semantic = semantic_ranking(store, text, cfg, None, only, pool)
    docs: Docs | None = None
    match = fts_match(parsed)
    if opts.mode != "semantic" or not every_vector or semantic is None:
        lists["lexical"], docs = _lexical(store, parsed, cfg, opts, match, only, pool)
    if opts.mode == "semantic" and not every_vector:
        candidates = [sid for sid, _ in lists.pop("lexical")]
        semantic = semantic_ranking(store, text, cfg, candidates, only, pool)
        if semantic is None:
            lexical = store.lexical(match, pool, cfg.title_weight, only)
            if parsed.constrained:
                lexical = verified(store, parsed, lexical, cfg)
            lists["lexical"] = lexical
    # Language gate (issue #9): an English-only neural model gets no weight
    # on a mostly-CJK or mostly-[UNK] query; --explain shows it as "gate".
    gate = language_gate(cfg, text) if opts.mode == "auto" else None
    degraded = provider_degraded(cfg)  # minilm chosen but not installed
    if gate is not None:
        semantic = []
        # The n-gram vectors' small gain on CJK should survive the gate: score
        # the lexical candidates with n-gram vectors made on the fly (#9).
        fallback = ngram_fallback(store, text, cfg, lists.get("lexical", []))
        if fallback:
            lists["ngram"] = fallback
    elif opts.mode == "auto":
        # auto re-scores the lexical candidates by cosine; scoring every vector
        # costs more and gained nothing measurable (bench/eval.py, issue #3).
        candidates = [sid for sid, _ in lists["lexical"]]
        semantic = semantic_ranking(store, text, cfg, candidates, only, pool)
        if semantic and docs is not None and document_vectors(cfg):
            # A vector per document (#47) tells pages apart, not their
            # chunks: these are told apart by the n-gram cosines the default
            # provider ranks them by, made now for the lexical candidates.
            lists["ngram"] = ngram_fallback(store, text, cfg, lists["lexical"])
    if opts.mode in ("auto", "semantic"):
        if semantic is None:
            degraded = True
        elif semantic:
            lists["semantic"] = semantic
            if docs is not None:
                # Documents found by their vector alone (issue #47) join the
                # document stage through their first segment.
                missing = [sid for sid, _ in semantic if sid not in docs.doc_of]
                if missing:
                    docs.doc_of.update(store.doc_ids_of(missing))
    pool_full = len(lists.get("lexical", ())) >= pool
    return lists, gate, degraded, docs, pool_full


def _lexical(
    store: Index, parsed: ParsedQuery, cfg: Config, opts: QueryOptions,
    match: str, only: DocFilter, pool: int,
) -> tuple[Ranked, Docs | None]:  # fmt: skip
    """The chunks' bm25 list and, outside semantic mode, the document stage
    whose documents' chunks alone it ranks (issue #21)."""
    size = SEMANTIC_POOL if opts.mode == "semantic" else pool
    docs: Docs | None = None
    within: list[int] | None = None
    # Synonyms (#47): each ranked apart, its bm25 added below the typed
    # terms' (SYNONYM_WEIGHT shared among its terms).
    extra = [
        (" OR ".join(map(quote_fts, terms)), SYNONYM_WEIGHT / len(terms))
        for terms in parsed.synonym_terms
    ]
    if opts.mode != "semantic":
        n_docs = max(DOC_POOL, 2 * (opts.top + opts.offset))
        docs = document_stage(store, parsed, match, n_docs, only)
        for extra_match, weight in extra:
            docs = with_synonyms(store, docs, extra_match, weight, n_docs, only)
        if not parsed.constrained:
            within = list(docs.doc_of)
    lexical = store.lexical(match, size, cfg.title_weight, only, within=within)
    for extra_match, weight in extra:
        found = store.lexical(extra_match, size, cfg.title_weight, only, within=within)
        lexical = added(lexical, found, weight, size)
    if parsed.constrained:
        lexical = verified(store, parsed, lexical, cfg)
    return lexical, docs
