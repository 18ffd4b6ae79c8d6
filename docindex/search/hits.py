"""A page of hits from ranked segment ids: snippets, lines, coverage,
``--explain`` details and the hits folded behind each (issues #19, #21).

Split from ``engine`` (issue #49).
"""

from __future__ import annotations

import dataclasses

from docindex.config import Config
from docindex.models import FoldedHit, Hit, QueryOptions
from docindex.search.candidates import Ranked
from docindex.search.quality import coverage, held_terms
from docindex.search.snippet import (
    best_line,
    match_spans,
    open_fence,
    snippet_with_highlights,
)
from docindex.store import Index, SegmentRow

FOLD_SHOWN = 5  # folded hits a shown hit lists (all are counted in folded_count)


def best_per_document(
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


def page_hits(
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
