"""Keyword (FTS5 bm25), vector (numpy cosine) and weighted RRF fusion -> Hits.

Scores (issue #3): each list contributes ``w / (k + rank)``; the fused sum is
divided by the best sum possible for the lists that ran (every list ranking
the hit first), so a score lies in [0, 1], a hit that every list ranks first
scores 1.0 in any mode, and ``--min-score`` means the same thing everywhere.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .config import Config
from .models import Hit
from .snippet import best_line, make_snippet
from .store import SegmentRow, Store
from .tokenize import has_cjk, query_terms

MODES = ("auto", "lexical", "semantic")
MAX_TOP = 1000


@dataclass(frozen=True, slots=True)
class QueryOptions:
    """How to run one query."""

    top: int = 10
    mode: str = "auto"
    snippet_chars: int = 200
    highlight: bool = True
    min_score: float = 0.0
    files: bool = False
    explain: bool = False
    types: tuple[str, ...] = ()
    path_glob: str | None = None
    where: tuple[tuple[str, str], ...] = ()
    offset: int = 0


@dataclass(slots=True)
class QueryResult:
    """What ``docindex query`` prints (``--json`` keys are these field names)."""

    query: str
    mode: str
    used: list[str] = field(default_factory=list)
    degraded: bool = False
    took_ms: float = 0.0
    total: int = 0
    hits: list[Hit] = field(default_factory=list)
    next_offset: int | None = None
    next_cursor: str | None = None
    hint: dict[str, Any] | None = None


def quote_fts(term: str) -> str:
    """Quote one term for FTS5 MATCH: user text never reaches FTS5 as syntax."""
    return '"' + term.replace('"', '""') + '"'


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


def _filters(opts: QueryOptions) -> tuple[str, tuple[Any, ...]]:
    """SQL over ``documents d`` for --type, --path and --where (pushed down)."""
    clauses: list[str] = []
    params: list[Any] = []
    if opts.types:
        clauses.append(f"d.kind IN ({','.join('?' * len(opts.types))})")
        params.extend(t.lower().lstrip(".") for t in opts.types)
    if opts.path_glob:
        clauses.append("d.rel_path GLOB ?")
        params.append(opts.path_glob)
    for key, value in opts.where:
        clauses.append(
            "EXISTS (SELECT 1 FROM facets x WHERE x.doc_id = d.id AND x.key = ? "
            "AND x.value = ?)"
        )
        params.extend((key, value))
    return " AND ".join(clauses), tuple(params)


def search(
    store: Store, text: str, cfg: Config, opts: QueryOptions, *, hint: bool = True
) -> QueryResult:
    """Run one query against an open index.

    Args:
        store: the index.
        text: the user's query (any string; never FTS5 syntax).
        cfg: settings (ranking weights, tokenizer, embedder).
        opts: per-query options.
        hint: explain an empty first page in ``result.hint`` (issue #6).

    Returns:
        A QueryResult with hits best first.
    """
    started = time.perf_counter()
    text, opts = _utf8(text), _utf8_options(opts)
    result = QueryResult(query=text, mode=opts.mode)
    qterms = query_terms(text, cjk_ngram=cfg.cjk_ngram, use_stem=cfg.stem)
    if not qterms:
        if hint:
            result.hint = _zero_hint(store, text, cfg, opts)
        result.took_ms = _ms(started)
        return result
    where, params = _filters(opts)
    pool = max(200, min(2000, (opts.top + opts.offset) * 20))
    lists: list[list[int]] = []
    weights: list[float] = []
    raw: dict[str, dict[int, tuple[int, float]]] = {}
    lexical: list[tuple[int, float]] = []
    if opts.mode in ("auto", "lexical") or opts.mode == "semantic":
        match = " OR ".join(quote_fts(t) for t in qterms)
        lexical = store.lexical(match, pool, cfg.title_weight, where, params)
    if opts.mode in ("auto", "lexical"):
        lists.append([sid for sid, _ in lexical])
        weights.append(1.0)
        raw["lexical"] = {sid: (i, s) for i, (sid, s) in enumerate(lexical, start=1)}
        result.used.append("lexical")
    if opts.mode in ("auto", "semantic"):
        semantic = _semantic(store, text, cfg, [sid for sid, _ in lexical])
        if semantic is None:
            result.degraded = True
            if opts.mode == "semantic":
                lists.append([sid for sid, _ in lexical])
                weights.append(1.0)
                raw["lexical"] = {sid: (i, s) for i, (sid, s) in enumerate(lexical, 1)}
                result.used.append("lexical")
        elif semantic:
            weight = cfg.semantic_weight if opts.mode == "auto" else 1.0
            if opts.mode == "auto" and has_cjk(text):
                weight = cfg.semantic_weight  # n-gram vectors are language-neutral
            lists.append([sid for sid, _ in semantic])
            weights.append(weight)
            raw["semantic"] = {sid: (i, s) for i, (sid, s) in enumerate(semantic, 1)}
            result.used.append("semantic")
    fused = rrf(lists, weights, cfg.rrf_k)
    ranked = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
    ranked = [(sid, s) for sid, s in ranked if s >= opts.min_score]
    rows = store.segments_by_id(
        [sid for sid, _ in ranked[: (opts.top + opts.offset) * 8 + 50]]
    )
    if opts.files:
        seen_docs: set[int] = set()
        per_doc = []
        for sid, score in ranked:
            row = rows.get(sid)
            if row is None or row.doc_id in seen_docs:
                continue
            seen_docs.add(row.doc_id)
            per_doc.append((sid, score))
        ranked = per_doc
    result.total = len(ranked)
    page = ranked[opts.offset : opts.offset + opts.top]
    if opts.offset + opts.top < len(ranked):
        result.next_offset = opts.offset + opts.top
    for sid, score in page:
        row = rows.get(sid) or store.segments_by_id([sid]).get(sid)
        if row is None:
            continue
        explain = None
        if opts.explain:
            explain = {
                name: {"rank": r[sid][0], "raw": round(r[sid][1], 6)}
                for name, r in raw.items()
                if sid in r
            }
            explain["fused"] = round(score, 6)
        result.hits.append(_hit(store, row, score, qterms, cfg, opts, raw, explain))
    if hint and not result.hits and opts.offset == 0:
        result.hint = _zero_hint(store, text, cfg, opts)
    result.took_ms = _ms(started)
    return result


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


def _zero_hint(store: Store, text: str, cfg: Config, opts: QueryOptions) -> Any:
    from .hints import zero_result_hint

    return zero_result_hint(store, text, cfg, opts)


def _semantic(
    store: Store, text: str, cfg: Config, candidates: list[int]
) -> list[tuple[int, float]] | None:
    """Cosine ranking of candidate segments; None when no vectors are available."""
    from .indexer import _embedder

    embedder = _embedder(cfg)
    if embedder is None or store.get_meta("embedder") is None:
        return None
    if not candidates:
        return []
    import numpy as np

    from .embed import dequantize

    qt = embedder.query_terms(text)
    n_total = max(1, store.count_segments())
    dfs = store.doc_freqs(qt)
    idf = {t: math.log(1 + n_total / (1 + dfs.get(t, 0))) for t in qt}
    qvec = embedder.embed([text], weights=idf)[0]
    if not np.any(qvec):
        return []
    ids, blobs = store.vectors(candidates)
    if not ids:
        return None
    matrix = dequantize(blobs, embedder.dim)
    sims = matrix @ qvec
    order = np.lexsort((np.asarray(ids), -sims))
    return [(ids[i], float(sims[i])) for i in order if sims[i] > 0]


def _hit(
    store: Store, row: SegmentRow, score: float, qterms: list[str], cfg: Config,
    opts: QueryOptions, raw: dict[str, dict[int, tuple[int, float]]],
    explain: dict[str, Any] | None,
) -> Hit:  # fmt: skip
    body = store.body(row.doc_id)
    text = body[row.char_start : row.char_end]
    qset = set(qterms)
    snippet = make_snippet(text, qset, opts.snippet_chars, opts.highlight, cfg)
    offset_line = best_line(text, qset, cfg)
    line = row.start_line + offset_line
    cell = None
    if row.cells and offset_line < len(row.cells):
        cell = row.cells[offset_line]
    root = row.root
    sep = "" if root.endswith(("/", "\\")) else "/"
    from_ = [name for name in raw if row.id in raw[name]]
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
