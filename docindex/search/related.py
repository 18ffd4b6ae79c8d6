"""``related``: the documents nearest a chunk, a section or a file by vector.

Split from ``navigate`` (issue #37), whose path rules it uses: one entry per
document, as ``query`` shows hits, with the document's other near chunks
folded behind it, snippets cleaned as query's are, and the decoded vectors
kept between calls (``search.vectors``).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from docindex.config import Config
from docindex.errors import DocindexError, MisuseError
from docindex.models import FoldedHit
from docindex.models.limits import MAX_TOP, check_range
from docindex.models.navigation import Related, RelatedHit
from docindex.search.locate import (
    chunk_file,
    chunk_rows,
    join_path,
    opening_of,
    resolve_file,
    roots_filter,
)
from docindex.store import Index, SegmentRow

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docindex.search.vectors import VectorMatrix


def related(
    store: Index, roots: Sequence[str], target: str, *, top: int = 10,
    same_file: bool = False, cwd: Path | None = None, cfg: Config | None = None,
    cache_key: Hashable | None = None,
) -> Related:  # fmt: skip
    """Documents nearest by vector to a chunk, or to a file's centroid.

    One entry per document, its best chunk, as ``query`` shows hits (issue
    #37): the document's other chunks among the nearest ``FOLD_POOL`` fold
    behind it (``folded_count``, the best ``FOLD_SHOWN`` in ``folded``).
    With ``same_file`` the source file's own chunks are each listed.

    Args:
        store: the index (built with an embedding provider).
        roots: the configured roots; results stay inside them.
        target: ``FILE`` or ``FILE#CHUNK`` (a chunk id).
        top: how many entries to return.
        same_file: also return chunks of the source file (never the source chunk).
        cwd: also resolve relative paths against this directory.
        cfg: the settings snippets follow (defaults when None).
        cache_key: identifies the index's current state; with it the decoded
            vectors are kept for the next call (``search.vectors``).

    Raises:
        OutsideRootsError: the path part escapes the roots.
        DocindexError: unknown file or chunk, or an index without vectors.
    """
    import numpy as np

    from docindex.embed.quantized import dequantize

    check_range("top", top, 1, MAX_TOP)
    emb = store.get_meta("embedder")
    if not emb:
        raise DocindexError("this index has no vectors (embedding provider none)")
    doc_id, source, source_ids, own, own_file = _source(store, roots, target, cwd)
    dim = int(emb["dim"])
    _, blobs = store.vectors(source_ids)
    if not blobs and emb.get("unit") == "document":
        # One vector per document (issue #47): a chunk stands for its page.
        _, blobs = store.vectors([s.id for s in store.segments_of(doc_id)])
    if not blobs:
        raise DocindexError(f"{source} has no vectors")
    query = dequantize(blobs, dim).mean(axis=0)
    norm = float(np.linalg.norm(query))
    if norm == 0:
        return Related(source, [])
    query /= norm
    matrix = _matrix(store, roots, dim, cache_key)
    if not len(matrix.ids):
        return Related(source, [])
    sims = matrix.cosines(query)
    if not same_file:
        own = own or store.segments_of(doc_id)
        skip = {s.id for s in own}
    else:
        # the source chunk (or section) itself never; a whole file's chunks do
        skip = set() if source == own_file else set(source_ids)
    if skip:
        sims[np.isin(matrix.ids, np.fromiter(skip, dtype=np.int64))] = -1.0
    shown, folded = _nearest(store, matrix.ids, sims, top,
                             doc_id if same_file else None)  # fmt: skip
    wanted = [sid for sid, _ in shown]
    wanted += [f for sid, _ in shown for f, _ in folded.get(sid, [])[:FOLD_SHOWN]]
    found = store.segments_by_id(wanted)
    cfg = cfg or Config()
    hits = [
        _related_hit(store, found[sid], score, cfg, folded.get(sid, []), found)
        for sid, score in shown
        if sid in found
    ]
    return Related(source, hits)


class _Source(NamedTuple):
    """What ``related`` starts from: a chunk, a heading's section or a file."""

    doc_id: int
    source: str  # its chunk id, FILE#heading or rel_path, as shown
    source_ids: list[int]  # the segments whose vectors make the query
    own: list[SegmentRow]  # its document's segments, when already read
    own_file: str  # the source's rel_path when it is a whole file, else ""


def _source(
    store: Index, roots: Sequence[str], target: str, cwd: Path | None
) -> _Source:
    rows = chunk_rows(store, roots, target, cwd)
    if rows:
        return _Source(rows[0].doc_id, rows[0].chunk_id, [rows[0].id], [], "")
    if "#" in target:
        # A heading with no chunk of its own (``outline`` names it): the
        # centroid of the chunks under it, as ``show`` opens it (issue #37).
        doc = resolve_file(store, roots, chunk_file(target), cwd=cwd)
        own = store.segments_of(doc.id)
        source = f"{doc.rel_path}#{target.rpartition('#')[2]}"
        first = opening_of(own, doc.rel_path, target)
        if first is None:
            raise MisuseError(
                f"{doc.rel_path} has no chunk {target!r}; list its chunk ids "
                f"with `docindex outline {doc.rel_path}`"
            )
        ids = [s.id for s in own if s.chunk_id.startswith(f"{source}/")]
        return _Source(doc.id, source, ids, own, "")
    doc = resolve_file(store, roots, target, cwd=cwd)
    own = store.segments_of(doc.id)
    return _Source(doc.id, doc.rel_path, [s.id for s in own], own, doc.rel_path)


def warm(store: Index, roots: Sequence[str], cache_key: Hashable | None) -> int:
    """Decode every vector ``related`` reads and keep them (``search.vectors``):
    a long-lived process calls it at start so that its first ``related``
    answers as its next ones do (issue #37). Returns the vectors kept."""
    emb = store.get_meta("embedder")
    if not emb or cache_key is None:
        return 0
    return len(_matrix(store, roots, int(emb["dim"]), cache_key).ids)


def _matrix(
    store: Index, roots: Sequence[str], dim: int, cache_key: Hashable | None
) -> VectorMatrix:
    """Every vector inside the roots, decoded (kept per ``cache_key``)."""
    from docindex.search.vectors import vector_matrix

    return vector_matrix(store, roots_filter(store, roots, None, ()), dim, cache_key)


FOLD_POOL = 200  # nearest chunks folded by document; "+ N more here" counts these


def _nearest(
    store: Index, ids: npt.NDArray[np.int64], sims: npt.NDArray[np.float32],
    top: int, unfolded: int | None,
) -> tuple[list[tuple[int, float]], dict[int, list[tuple[int, float]]]]:  # fmt: skip
    """``_fold`` over the nearest chunks: ``FOLD_POOL`` of them (or 4 per
    entry), more when a few documents fill the pool before ``top`` show."""
    import numpy as np

    pool = max(FOLD_POOL, 4 * top)
    while True:
        pool = min(len(sims), pool)
        keep = np.argpartition(-sims, pool - 1)[:pool] if pool < len(sims) else None
        cand_ids = ids if keep is None else ids[keep]
        cand_sims = sims if keep is None else sims[keep]
        order = np.lexsort((cand_ids, -cand_sims))
        ranked = [
            (int(cand_ids[i]), float(cand_sims[i])) for i in order if cand_sims[i] > 0
        ]
        doc_of = store.doc_ids_of([sid for sid, _ in ranked])
        shown, folded = _fold(ranked, doc_of, top, unfolded)
        if len(shown) >= top or pool >= len(sims) or len(ranked) < pool:
            return shown, folded
        pool *= 4


FOLD_SHOWN = 5  # folded chunks an entry lists, as query's hits do


def _fold(
    ranked: list[tuple[int, float]], doc_of: dict[int, int], top: int,
    unfolded: int | None,
) -> tuple[list[tuple[int, float]], dict[int, list[tuple[int, float]]]]:  # fmt: skip
    """The first ``top`` documents' best chunks, and the chunks folded behind each.

    Chunks of document ``unfolded`` (``--same-file``'s source) are each shown.
    """
    shown: list[tuple[int, float]] = []
    first: dict[int, int] = {}  # doc -> its shown segment
    folded: dict[int, list[tuple[int, float]]] = {}
    for sid, score in ranked:
        doc = doc_of.get(sid, -sid)
        if doc in first and doc != unfolded:
            folded.setdefault(first[doc], []).append((sid, score))
        elif len(shown) < top:
            first[doc] = sid
            shown.append((sid, score))
    return shown, folded


SNIPPET_CHARS = 200  # as ``query``'s default ``snippet_chars``


def _related_hit(
    store: Index, row: SegmentRow, score: float, cfg: Config,
    folded: list[tuple[int, float]], rows: dict[int, SegmentRow],
) -> RelatedHit:  # fmt: skip
    from docindex.search.snippet import open_fence, snippet_with_highlights

    body = store.body(row.doc_id)
    text = body[row.char_start : row.char_end]
    fence = ""
    if row.char_start and ("```" in text or "~~~" in text):
        fence = open_fence(body[: row.char_start])  # as query's hits (#19)
    # No query terms: the window opens on the chunk's first prose line, with
    # fences, heading marks and anchors gone and "…" where it is cut (#37).
    snippet, _ = snippet_with_highlights(
        text, set(), SNIPPET_CHARS, False, cfg, [], fence
    )
    title = row.title or row.rel_path.rsplit("/", 1)[-1]
    return RelatedHit(
        path=join_path(row.root, row.rel_path), rel_path=row.rel_path,
        chunk_id=row.chunk_id, line=row.start_line, start_line=row.start_line,
        end_line=row.end_line, title=title,
        heading_path=list(row.heading), score=round(min(1.0, score), 4),
        snippet=snippet or title, page=row.page, slide=row.slide, sheet=row.sheet,
        folded=[
            FoldedHit(r.chunk_id, r.start_line, round(min(1.0, s), 4), list(r.heading))
            for sid, s in folded[:FOLD_SHOWN]
            if (r := rows.get(sid)) is not None
        ],
        folded_count=len(folded),
    )  # fmt: skip
