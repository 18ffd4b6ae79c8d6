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
Both live in ``fusion.py``; the cosine side in ``semantic.py``.

Documents (issue #21): every document's terms are counted per field (title
with file name, headings, body; pre-tokenised like segments; stored exactly,
#46). In ``auto`` and ``lexical`` mode a query first ranks documents by
FTS5's bm25 over those fields with ``FIELD_WEIGHTS`` (BM25F-like: a field
weight per column, ``k1 = 1.2``, ``b = 0.75``), keeps the ``max(DOC_POOL, 2 x (top + offset))``
best, and computes the segments' bm25 for those documents' segments alone
(``docstage.document_stage``): FTS5 spends most of a broad query on per-row bm25, so
this costs less than ranking every matching segment. Each document's
semantic score is its best segment cosine; the two are fused as above and
divided by the best document's score. In ``auto`` mode an RM3-style pass
(``docstage``'s feedback) adds FEEDBACK_TERMS terms from the FEEDBACK_DOCS best
documents' stored salient terms (``documents.terms``, written at index
time: nothing is tokenised per query), the user's terms keeping
FEEDBACK_ORIGINAL of the weight.

``--files`` ranks these documents (``rank_documents``). The default chunk
list (``rank_chunks``) gives each chunk CHUNK_DOC_WEIGHT of its document's
score, the rest its own fused score, so it ranks documents nearly as well
as ``--files`` without collapsing to one chunk per document.
"""

from __future__ import annotations

import dataclasses
import time

from docindex.config import Config
from docindex.models import FoldedHit, Hint, Hit
from docindex.models import QueryOptions as QueryOptions  # re-exported: the old home
from docindex.models import QueryResult as QueryResult
from docindex.search.docstage import (
    DOC_POOL,
    Docs,
    added,
    chunk_fusion,
    document_stage,
    rank_chunks,
    rank_documents,
    with_synonyms,
)
from docindex.search.fusion import (
    fuse_scores as fuse_scores,  # re-exported: the old home
)
from docindex.search.fusion import rrf as rrf
from docindex.search.hints import weak_hint
from docindex.search.quality import (
    coverage,
    demote_fragments,
    held_terms,
    is_code_query,
    term_weights,
)
from docindex.search.query import (
    NO_WORDS,
    ParsedQuery,
    normalized_words,
    parse_query,
    phrase_pattern,
)
from docindex.search.semantic import (
    document_vector_weights,
    document_vectors,
    language_gate,
    ngram_fallback,
    provider_degraded,
    semantic_ranking,
)
from docindex.search.snippet import (
    best_line,
    match_spans,
    open_fence,
    snippet_with_highlights,
)
from docindex.search.spelling import as_written, suggestions
from docindex.store import DocFilter, Index, SegmentRow
from docindex.text.synonyms import SYNONYM_WEIGHT
from docindex.text.tokenize import identifier_terms

MODES = ("auto", "lexical", "semantic")
ALL_VECTORS_MAX = 50_000  # --mode semantic scores every vector up to this many
SEMANTIC_POOL = 2000  # lexical candidates --mode semantic scores past that
MAX_TOP = 1000
FOLD_SHOWN = 5  # folded hits a shown hit lists (all are counted in folded_count)


def quote_fts(term: str) -> str:
    """Quote one term for FTS5 MATCH: user text never reaches FTS5 as syntax.

    NUL characters are dropped: FTS5 reads a quoted string up to the first NUL
    and reports "unterminated string" (issue #8).
    """
    return '"' + term.replace("\x00", "").replace('"', '""') + '"'


def _doc_filter(opts: QueryOptions, store: Index) -> DocFilter:
    """--type, --path, --where and --root as the storage's document filter."""
    root_ids = None
    if opts.roots:
        known = {path: rid for rid, path in store.roots().items()}
        root_ids = tuple(known[r] for r in opts.roots if r in known)
    return DocFilter(
        root_ids=root_ids, kinds=opts.types, path=opts.path_glob or None,
        facets=opts.where,
    )  # fmt: skip


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


def parse(text: str, cfg: Config) -> ParsedQuery:
    """``text`` parsed for an index built with ``cfg`` (the edge calls this once).

    Raises:
        BadInputError: ``text`` is past the query limit (checked before parsing).
    """
    from docindex.models.limits import MAX_QUERY_CHARS, check_length

    check_length("query", text, MAX_QUERY_CHARS)  # issue #17: bounded memory
    parsed = parse_query(_utf8(text), cjk_ngram=cfg.cjk_ngram, use_stem=cfg.stem)
    if cfg.synonyms and parsed.tokens:
        from docindex.text.synonyms import expand, read_groups

        found = expand(parsed.tokens, read_groups(cfg.synonyms),
                       cjk_ngram=cfg.cjk_ngram, use_stem=cfg.stem)  # fmt: skip
        parsed = dataclasses.replace(parsed, expansions=tuple(found))
    return parsed


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
    from docindex.models.limits import check_query

    typed = query.text if isinstance(query, ParsedQuery) else query
    check_query(typed, opts)  # before anything scales with the input (issue #17)
    started = time.perf_counter()
    parsed = query if isinstance(query, ParsedQuery) else parse(query, cfg)
    opts = _utf8_options(opts)
    result = QueryResult(query=parsed.text, mode=opts.mode)
    result.synonyms = {e.matched: list(e.added) for e in parsed.expansions}
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
    lists, gate, degraded, docs, pool_full = _lists(store, parsed, cfg, opts)
    result.degraded = degraded
    result.used = [name for name, pairs in lists.items() if pairs]
    weights = term_weights(store, qterms)
    dense: tuple[float, float] | None = None  # (documents, chunks), #47
    if docs is not None and lists.get("semantic") and document_vectors(cfg):
        dense = document_vector_weights(store, lists.get("lexical", []), weights, cfg)
    fused = chunk_fusion(lists, cfg, docs, dense[1] if dense else None)
    doc_dense = dense[0] if dense else None
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
        ranked, rows, raw = rank_documents(
            store, docs, fused, lists, qterms, cfg, opts, parsed.question, doc_dense
        )
    elif opts.files:
        ranked, rows = _best_per_document(store, ranked, want)
    else:
        if docs is not None:  # chunks know their document's score (#21)
            ranked, doc_raw, doc_of = rank_chunks(
                store, docs, fused, lists, qterms, cfg, opts, parsed.question, doc_dense
            )
        if not is_code_query(parsed):
            # Answers over fragments (#37): a YAML block or the tail of an
            # example does not outrank the prose that explains it.
            ranked = demote_fragments(store, ranked, want, add=not parsed.constrained)
            ranked = [(sid, s) for sid, s in ranked if s >= opts.min_score]
        if opts.per_doc > 0:
            ranked, folded = fold_per_document(store, ranked, opts.per_doc, doc_of)
        shown = [sid for sid, _ in ranked[opts.offset : want]]
        extra = [sid for s in shown for sid, _ in folded.get(s, ())[:FOLD_SHOWN]]
        rows = store.segments_by_id(shown + extra)
    result.total, result.total_exact = _total(
        store, parsed, opts, len(ranked), pool_full, every=docs is None
    )
    if opts.offset + opts.top < len(ranked):
        result.next_offset = opts.offset + opts.top
    page = ranked[opts.offset : opts.offset + opts.top]
    result.hits = _page_hits(
        store, page, rows, raw, gate, folded, weights, cfg, opts, doc_raw
    )
    if hint:
        # Spellings for what was typed: not for a camel-case name's words
        # (useEfect's "efect"), which the typed name's own fix covers (#47).
        derived = identifier_terms(parsed.positive_text, use_stem=cfg.stem)
        own = [t for t in qterms if t not in derived]
        fixes = suggestions(store, own)
        if fixes:
            # Hits for a misspelt name's words alone ("use" of useEfect) are
            # no answer: the index holds none of the terms typed.
            missed = bool(derived) and not any(store.doc_freqs(own).values())
            result = _spelled(store, parsed, fixes, result, cfg, opts, missed)
        if not result.hits and opts.offset == 0:
            result.hint = _zero_hint(store, parsed, cfg, opts)
        elif result.hits and opts.offset == 0:
            result.hint = weak_hint(store, parsed, result, weights, cfg)
    result.took_ms = _ms(started)
    return result


def _total(
    store: Index, parsed: ParsedQuery, opts: QueryOptions, ranked: int,
    pool_full: bool, *, every: bool,
) -> tuple[int, bool]:  # fmt: skip
    """``total`` and whether it is exact (issue #37).

    The chunks (documents with ``--files``) matching the query and filters,
    counted by FTS5 whatever the page size. A phrase, a ``+word`` met only
    by the title or a ``--min-score`` can drop matches that only ranking
    sees: the count is then of the ranked candidates, a lower bound when
    the candidate pool was full.
    """
    if every:  # semantic mode scores every vector: all of them were ranked
        return ranked, True
    if parsed.phrases or parsed.required or opts.min_score > 0:
        return ranked, not pool_full
    counted = store.count_matches(
        fts_match(parsed), _doc_filter(opts, store), documents=opts.files
    )
    return max(counted, ranked), True


def _spelled(
    store: Index, parsed: ParsedQuery, fixes: dict[str, str], result: QueryResult,
    cfg: Config, opts: QueryOptions, missed: bool = False,
) -> QueryResult:  # fmt: skip
    """Did you mean (#37), in words the index holds as written (#45).

    With no hits in ``auto`` mode (or ``missed``: hits for none of the words
    typed, #47), the corrected query is searched instead.
    The suggestions name the words the hits show ("middleware"), not the
    index's stems ("middlewar").
    """
    fixed = _corrected(parsed, fixes)
    if (missed or not result.hits) and opts.mode == "auto":
        again = search(store, fixed, cfg, opts, hint=False)
        if again.hits:
            words = as_written(parsed.text, fixes, _shown(again.hits),
                               use_stem=cfg.stem)  # fmt: skip
            again.query = parsed.text
            again.corrected = _replace_words(parsed.text, words)
            again.did_you_mean = words
            return again
    # The hits show the query's words: look the suggested ones up alone.
    look = dataclasses.replace(opts, top=5, mode="lexical", offset=0, min_score=0.0)
    found = search(store, " ".join(dict.fromkeys(fixes.values())), cfg, look,
                   hint=False)  # fmt: skip
    result.did_you_mean = as_written(parsed.text, fixes, _shown(found.hits),
                                     use_stem=cfg.stem)  # fmt: skip
    return result


def _shown(hits: list[Hit]) -> list[tuple[str, list[tuple[int, int]]]]:
    return [(h.snippet, h.highlights) for h in hits]


def _replace_words(text: str, words: dict[str, str]) -> str:
    """``text`` with each word that is a key of ``words`` replaced by its value."""
    from docindex.text.tokenize import word_spans

    out, done = [], 0
    for start, end, word in word_spans(text):
        if word in words:
            out += [text[done:start], words[word]]
            done = end
    return "".join([*out, text[done:]])


def _corrected(parsed: ParsedQuery, fixes: dict[str, str]) -> ParsedQuery:
    """``parsed`` with its terms replaced by the suggested ones (did you mean)."""
    from docindex.text.tokenize import word_spans

    text, shift = parsed.text, 0
    for start, end, word in list(word_spans(parsed.text)):
        for term, better in fixes.items():
            if word == term or word.startswith(term):
                text = text[: start + shift] + better + text[end + shift :]
                shift += len(better) - (end - start)
                break

    def fix(terms: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(fixes.get(t, t) for t in terms))

    return dataclasses.replace(
        parsed, text=text,
        words=tuple(" ".join(fixes.get(w.lower(), w) for w in p.split())
                    for p in parsed.words),
        tokens=fix(parsed.tokens),
        required_tokens=tuple(fix(g) for g in parsed.required_tokens),
    )  # fmt: skip


Ranked = list[tuple[int, float]]  # (segment id, score) best first


def _lists(
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
    only = _doc_filter(opts, store)
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
    if opts.mode != "semantic" or not every_vector or semantic is None:
        match = fts_match(parsed)
        size = SEMANTIC_POOL if opts.mode == "semantic" else pool
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
        lists["lexical"] = store.lexical(
            match, size, cfg.title_weight, only, within=within
        )
        for extra_match, weight in extra:
            found = store.lexical(
                extra_match, size, cfg.title_weight, only, within=within
            )
            lists["lexical"] = added(lists["lexical"], found, weight, size)
        if parsed.constrained:
            lists["lexical"] = _verified(store, parsed, lists["lexical"], cfg)
    if opts.mode == "semantic" and not every_vector:
        candidates = [sid for sid, _ in lists.pop("lexical")]
        semantic = semantic_ranking(store, text, cfg, candidates, only, pool)
        if semantic is None:
            lexical = store.lexical(match, pool, cfg.title_weight, only)
            if parsed.constrained:
                lexical = _verified(store, parsed, lexical, cfg)
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


def _page_hits(
    store: Index, page: Ranked, rows: dict[int, SegmentRow],
    raw: dict[str, dict[int, tuple[int, float]]], gate: str | None,
    folded: dict[int, Ranked], weights: dict[str, float], cfg: Config,
    opts: QueryOptions, doc_raw: dict[int, tuple[int, float]],
) -> list[Hit]:  # fmt: skip
    """The page's hits, with ``--explain`` details (the hit's document's rank
    and score in ``document``, #21) and folded hits (#19)."""
    hits: list[Hit] = []
    for sid, score in page:
        row = rows.get(sid) or store.segments_by_id([sid]).get(sid)
        if row is None:
            continue
        explain: dict[str, object] | None = None
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
        hit = _hit(store, row, score, weights, cfg, opts, raw, explain)
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
) -> Hint:
    from docindex.search.hints import zero_result_hint

    def run(relaxed: QueryOptions) -> QueryResult:
        return search(store, parsed, cfg, relaxed, hint=False)

    return zero_result_hint(store, parsed, cfg, opts, run)


def _hit(
    store: Index, row: SegmentRow, score: float, weights: dict[str, float],
    cfg: Config, opts: QueryOptions, raw: dict[str, dict[int, tuple[int, float]]],
    explain: dict[str, object] | None,
) -> Hit:  # fmt: skip
    body = store.body(row.doc_id)
    text = body[row.char_start : row.char_end]
    qset = set(weights)
    spans = match_spans(text, qset, cfg)
    fence = ""
    if row.char_start and ("```" in text or "~~~" in text):
        # A chunk cut from a long fenced block starts inside it: its first
        # closing fence must not read as an opening one (issue #19).
        fence = open_fence(body[: row.char_start])
    snippet, highlights = snippet_with_highlights(
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
        sheet=row.sheet, cell=cell, explain=explain, highlights=highlights,
        coverage=round(coverage(held_terms(text, row.heading, cfg), weights), 3),
    )  # fmt: skip


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
