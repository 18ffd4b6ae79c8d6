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
from docindex.models import Hint, Hit
from docindex.models import QueryOptions as QueryOptions  # re-exported: the old home
from docindex.models import QueryResult as QueryResult
from docindex.search.candidates import Ranked, doc_filter, fts_match, ranked_lists
from docindex.search.docstage import (
    Docs,
    chunk_fusion,
    rank_chunks,
    rank_documents,
)
from docindex.search.fusion import (
    fuse_scores as fuse_scores,  # re-exported: the old home
)
from docindex.search.fusion import rrf as rrf
from docindex.search.hints import weak_hint
from docindex.search.hits import (
    FOLD_SHOWN,
    best_per_document,
    fold_per_document,
    page_hits,
)
from docindex.search.quality import (
    demote_fragments,
    is_code_query,
    term_weights,
)
from docindex.search.query import (
    NO_WORDS,
    ParsedQuery,
    parse_query,
)
from docindex.search.semantic import (
    document_vector_weights,
    document_vectors,
)
from docindex.search.spelling import as_written, suggestions
from docindex.store import Index, SegmentRow
from docindex.text.tokenize import identifier_terms

MODES = ("auto", "lexical", "semantic")
MAX_TOP = 1000


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
        result.hint = _no_words_hint(parsed)
        result.took_ms = _ms(started)
        return result
    lists, gate, degraded, docs, pool_full = ranked_lists(store, parsed, cfg, opts)
    result.degraded = degraded
    result.used = [name for name, pairs in lists.items() if pairs]
    weights = term_weights(store, qterms)
    page = _ranked(store, parsed, cfg, opts, lists, docs, qterms, weights)
    result.total, result.total_exact = _total(
        store, parsed, opts, len(page.ranked), pool_full, every=docs is None
    )
    if opts.offset + opts.top < len(page.ranked):
        result.next_offset = opts.offset + opts.top
    shown = page.ranked[opts.offset : opts.offset + opts.top]
    result.hits = page_hits(store, shown, page.rows, page.raw, gate, page.folded,
                            weights, cfg, opts, page.doc_raw)  # fmt: skip
    if hint:
        result = _with_hints(store, parsed, result, weights, cfg, opts)
    result.took_ms = _ms(started)
    return result


def _no_words_hint(parsed: ParsedQuery) -> Hint:
    """Why a query of stopwords only (or only ``-word``) searched nothing:
    it matched everything at 1.0 before (issue #19)."""
    return {
        "unmatched_words": [], "filtered_out": False, "would_match": {},
        "suggestion": f"{NO_WORDS}: "
        + (
            "add a word to look for (-word only excludes)"
            if parsed.excluded and not parsed.positive_text.strip()
            else "add a word that is not a stopword"
        ),
    }  # fmt: skip


@dataclasses.dataclass
class _Page:
    """The ranked segment ids of one query and what its page needs of them."""

    ranked: Ranked
    rows: dict[int, SegmentRow]
    raw: dict[str, dict[int, tuple[int, float]]]
    doc_raw: dict[int, tuple[int, float]]
    folded: dict[int, Ranked]


def _ranked(
    store: Index, parsed: ParsedQuery, cfg: Config, opts: QueryOptions,
    lists: dict[str, Ranked], docs: Docs | None, qterms: list[str],
    weights: dict[str, float],
) -> _Page:  # fmt: skip
    """Fuse the lists and rank chunks (or documents with ``--files``)."""
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
    folded: dict[int, Ranked] = {}
    if opts.files and docs is not None:
        # --files ranks whole documents (the document stage, issue #21).
        ranked, rows, raw = rank_documents(store, docs, fused, lists, qterms,
                                           cfg, opts, parsed.question, doc_dense)  # fmt: skip
        return _Page(ranked, rows, raw, doc_raw, folded)
    if opts.files:
        ranked, rows = best_per_document(store, ranked, want)
        return _Page(ranked, rows, raw, doc_raw, folded)
    if docs is not None:  # chunks know their document's score (#21)
        ranked, doc_raw, doc_of = rank_chunks(store, docs, fused, lists, qterms,
                                              cfg, opts, parsed.question, doc_dense)  # fmt: skip
    if not is_code_query(parsed):
        # Answers over fragments (#37): a YAML block or the tail of an
        # example does not outrank the prose that explains it.
        ranked = demote_fragments(store, ranked, want, add=not parsed.constrained)
        ranked = [(sid, s) for sid, s in ranked if s >= opts.min_score]
    if opts.per_doc > 0:
        ranked, folded = fold_per_document(store, ranked, opts.per_doc, doc_of)
    shown = [sid for sid, _ in ranked[opts.offset : want]]
    extra = [sid for s in shown for sid, _ in folded.get(s, ())[:FOLD_SHOWN]]
    return _Page(ranked, store.segments_by_id(shown + extra), raw, doc_raw, folded)


def _with_hints(
    store: Index, parsed: ParsedQuery, result: QueryResult,
    weights: dict[str, float], cfg: Config, opts: QueryOptions,
) -> QueryResult:  # fmt: skip
    """Did you mean, and the hint for an empty or weak first page."""
    # Spellings for what was typed: not for a camel-case name's words
    # (useEfect's "efect"), which the typed name's own fix covers (#47).
    derived = identifier_terms(parsed.positive_text, use_stem=cfg.stem)
    own = [t for t in parsed.tokens if t not in derived]
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
        fts_match(parsed), doc_filter(opts, store), documents=opts.files
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


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
