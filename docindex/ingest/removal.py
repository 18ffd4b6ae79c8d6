"""Removing a document: its contentless FTS rows go by replaying their tokens.

The FTS tables keep no text, so a document's rows are deleted by inserting
the exact tokens they were indexed with, recomputed from the stored text.
``_remover`` also covers a scan that rewrites everything (issue #22).
"""

from __future__ import annotations

from collections.abc import Callable

from docindex.config import Config
from docindex.ingest.analyze import document_fields, fts_row
from docindex.models import Progress
from docindex.store import Fingerprint, Index
from docindex.text.fields import title_text


def _remover(
    store: Index, cfg: Config, known: dict[int, dict[str, Fingerprint]],
    rewrite: bool,
) -> tuple[Callable[[int], None], set[int]]:  # fmt: skip
    """How this scan removes a document, and the documents whose FTS rows it cleared.

    A scan that rewrites every document (``--force`` over all the roots, when
    they hold the whole index) empties the FTS table first (issue #22):
    deleting row by row cost as much as inserting again (``reindex`` took
    10.0 s where ``reindex --full`` took 6.0) and left every old posting
    behind a delete marker until a merge (the index grew 59 -> 87 MB). The
    returned set holds the old documents not yet removed or replaced; the
    scan gives those that stay their rows back at its end.
    """
    cleared: set[int] = set()
    if rewrite:
        ids = {fp.id for rows in known.values() for fp in rows.values()}
        if ids and len(ids) == store.fill_counts()[0]:
            store.clear_fts()
            cleared = ids

    def remove(doc_id: int) -> None:
        if doc_id in cleared:
            cleared.discard(doc_id)
            store.delete_document(doc_id)  # its FTS rows went with the clear
        else:
            remove_document(store, cfg, doc_id)

    return remove, cleared


def document_fts(
    store: Index, cfg: Config, doc_id: int
) -> tuple[list[tuple[int, str, str]], tuple[str, str]] | None:
    """A stored document's FTS rows and its fields, from its stored text
    (None when there is no such document)."""
    doc = store.document(doc_id)
    if doc is None:
        return None
    body = store.body(doc_id)
    doc_title = title_text(doc.title, doc.rel_path)
    segments = store.segments_of(doc_id)
    rows = [
        (
            seg.id,
            *fts_row(cfg, doc_title, seg.heading, body[seg.char_start : seg.char_end]),
        )
        for seg in segments
    ]
    return rows, document_fields(cfg, doc_title, (seg.heading for seg in segments))


PENDING_FTS = "fts_pending"  # meta: documents whose FTS rows wait for restore


def restore_pending_fts(
    store: Index, cfg: Config, stop: Callable[[], bool] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> bool:  # fmt: skip
    """Give back the FTS rows an interrupted ``scan --force`` left out (#38).

    Every writer that may delete or replace a document calls this first, in
    its transaction: a contentless FTS5 row is deleted by replaying its
    tokens, which must be there. Until then a word search misses those
    documents (their text, segments and vectors stay). Returns False when
    ``stop`` cut it short; what it restored stays done and the rest pending.
    """
    pending = store.get_meta(PENDING_FTS)
    if not pending:
        return True
    left = list(pending)
    while left:
        if stop is not None and stop():
            store.set_meta(PENDING_FTS, left)
            return False
        fts = document_fts(store, cfg, left[-1])
        if fts is not None:
            store.restore_fts(left[-1], *fts)
        left.pop()
        if on_progress:
            on_progress(Progress("restore", len(pending) - len(left), len(pending), ""))
    store.set_meta(PENDING_FTS, [])
    return True


def remove_document(store: Index, cfg: Config, doc_id: int) -> None:
    """Delete a document with its FTS rows (tokens recomputed from the stored text)."""
    fts = document_fts(store, cfg, doc_id)
    if fts is not None:
        store.delete_document(doc_id, *fts)
