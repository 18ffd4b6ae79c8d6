"""The scan's single writer: prepared files into the index, within its caps.

Files come back from the workers in walk order (``prepare._prepare_all``);
each is stored (``Index.add_document``), skipped with a recorded reason, or
replaces its old rows. ``embed_pending`` adds deferred (neural) vectors after
the lexical scan has committed (issue #9).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

from docindex.config import Config
from docindex.embed.choice import embedder_for as _embedder
from docindex.ingest.pool import POOL_THRESHOLD, Stopped, Workers
from docindex.ingest.prepare import Job, Prepared, StopFn, _prepare_all
from docindex.ingest.removal import remove_document
from docindex.models import Progress, ProgressFn, ScanResult, SkipReason
from docindex.store import Fingerprint, Index, NewDocument, SegmentRow, SkipRow
from docindex.text.fields import document_input, embed_input, title_text

EMBED_COMMIT = 512  # segments embedded per committed transaction
# Documents per transaction for a per-document embedder (~0.2-0.5 s each here).
DOCUMENT_COMMIT = 16
# Segments per progress event inside a commit: MiniLM embeds ~25 a second on
# this machine, so a whole commit was 20 s without a sign of life (#45).
EMBED_STEP = 64


def embed_pending(
    store: Index, cfg: Config, *, on_progress: ProgressFn | None = None,
    result: ScanResult | None = None, stop: StopFn | None = None,
    yield_to: StopFn | None = None,
) -> int:  # fmt: skip
    """Embed the segments that have no vector yet, committing every EMBED_COMMIT.

    Neural embedding is slow (issue #9), so it runs after the lexical scan has
    committed: an interrupted run keeps what it embedded and the next scan
    embeds only the segments whose ``vec`` is still NULL. ``max_embedded``
    caps the total as it does inline. ``stop`` is checked between batches;
    so is ``yield_to``, which leaves the rest for later without marking the
    scan interrupted (``result.vectors_pending`` says how many).
    A per-document embedder (issue #47) embeds each document's passage
    (``fields.document_input``) onto its first segment, in small batches so
    that ``watch`` returns to file changes within seconds.

    Returns:
        The number of segments embedded.
    """
    from docindex.embed.quantized import quantize

    embedder = _embedder(cfg)
    if embedder is None:
        return 0
    per_doc = embedder.unit == "document"
    batch = DOCUMENT_COMMIT if per_doc else EMBED_COMMIT
    counts = store.counts()
    room = max(0, cfg.max_embedded - counts.embedded)
    units = counts.documents if per_doc else counts.segments
    total = min(room, max(0, units - counts.embedded))
    done, after = 0, 0
    while done < total:
        if stop is not None and stop():
            if result is not None:
                result.interrupted = True
            break
        if yield_to is not None and yield_to():
            break
        rows = store.pending_vectors(
            after, min(batch, total - done), first_only=per_doc
        )
        if not rows:
            break
        inputs = [_input(store, row, per_doc) for row in rows]
        blobs: list[bytes] = []
        for start in range(0, len(inputs), EMBED_STEP):
            step = inputs[start : start + EMBED_STEP]
            blobs += quantize(embedder.embed(step), embedder.bits)
            if on_progress and start + len(step) < len(inputs):
                on_progress(Progress("embed", done + start + len(step), total))
        with store.atomic():
            store.set_vectors([r.id for r in rows], blobs)
        after = rows[-1].id
        done += len(rows)
        if result is not None:
            result.embedded += len(rows)
        if on_progress:
            on_progress(Progress("embed", done, total))
    if result is not None:
        result.vectors_pending = total - done
    return done


def _input(store: Index, row: SegmentRow, per_doc: bool) -> str:
    """What is embedded for ``row``: its chunk, or its whole document (#47)."""
    title = row.title or title_text(None, row.rel_path)
    body = store.body(row.doc_id)
    if not per_doc:
        return embed_input(title, row.heading, body[row.char_start : row.char_end])
    headings = [h for seg in store.segments_of(row.doc_id) for h in seg.heading]
    return document_input(title, headings, body)


def _apply(
    store: Index, cfg: Config, jobs: list[Job], root_ids: dict[str, int],
    known: dict[int, dict[str, Fingerprint]], result: ScanResult,
    on_progress: ProgressFn | None, workers: Workers[Config] | None = None,
    skips: dict[int, dict[str, SkipRow]] | None = None, stop: StopFn | None = None,
    remove: Callable[[int], None] | None = None,
) -> None:  # fmt: skip
    if not jobs:  # a no-op rescan must not count the segments (a table scan)
        return
    if remove is None:
        remove = functools.partial(remove_document, store, cfg)
    skips = skips if skips is not None else {}
    now = time.time()

    def remember(job: Job, reason: str, message: str, digest: str | None) -> None:
        """Keep the skip until the file changes (issue #23).

        Without a content hash (the file could not be read, or the index was
        full) no fingerprint is kept, so the next scan tries the file again.
        """
        size, mtime = (job.size, job.mtime_ns) if digest else (None, None)
        store.record_skip(root_ids[job.root], job.rel_path, reason, message or reason,
                          size, mtime, digest or None, now)  # fmt: skip

    if len(jobs) >= POOL_THRESHOLD:
        store.tune_fts_for_bulk()
    fill = _Fill.of(store)
    total = len(jobs)
    prepared = _prepare_all(jobs, cfg, workers, stop, store.row_maker())
    done = 0
    while True:
        if stop is not None and stop():
            result.interrupted = True
        else:
            try:
                prep = next(prepared, None)
            except Stopped:
                result.interrupted = True
        if result.interrupted:
            result.pending = total - done
            return
        if prep is None:
            return
        done += 1
        job = prep.job
        if on_progress:
            on_progress(Progress("index", done, total, job.rel_path))
        rid = root_ids[job.root]
        _apply_one(store, cfg, prep, rid, known, result, fill, remember, skips,
                   remove)  # fmt: skip


@dataclass(slots=True)
class _Fill:
    """How full the index is, against max_docs, max_segments and max_embedded.

    Counting segments or vectors reads the whole segments table (~50 MB per
    corpus copy, issue #7); documents.n_segments sums the same number, and
    n_segments bounds the vector count until the max_embedded check needs the
    exact figure (``embedded_exact``).
    """

    docs: int
    segments: int
    embedded: int
    embedded_exact: bool = False

    @classmethod
    def of(cls, store: Index) -> _Fill:
        n_docs, n_segments = store.fill_counts()
        return cls(n_docs, n_segments, n_segments)


Remember = Callable[[Job, str, str, str | None], None]


def _apply_one(
    store: Index, cfg: Config, prep: Prepared, rid: int,
    known: dict[int, dict[str, Fingerprint]], result: ScanResult, fill: _Fill,
    remember: Remember, skips: dict[int, dict[str, SkipRow]],
    remove: Callable[[int], None],
) -> None:  # fmt: skip
    """Store one prepared file (or its skip), within the index's caps."""
    job = prep.job
    old = known[rid].get(job.rel_path)
    if prep.same and old is not None:
        store.touch_document(old.id, job.size, job.mtime_ns)
        result.unchanged += 1
        return
    if prep.skip:
        result.skip(prep.skip, job.path, prep.message)
        remember(job, prep.skip, prep.message, prep.hash)
        if old is not None:  # a file that turned bad loses its stale rows
            fill.segments -= store.segment_count(old.id)
            remove(old.id)
            known[rid].pop(job.rel_path, None)
            fill.docs -= 1
            result.removed += 1
        return
    if old is not None:
        fill.segments -= store.segment_count(old.id)
        remove(old.id)
        fill.docs -= 1
    elif fill.docs >= cfg.max_docs:
        message = f"index holds max_docs={cfg.max_docs}"
        result.skip(SkipReason.MAX_DOCS, job.path, message)
        remember(job, SkipReason.MAX_DOCS, message, None)
        return
    if fill.segments + len(prep.segments) > cfg.max_segments:
        message = f"index holds max_segments={cfg.max_segments}"
        result.skip(SkipReason.MAX_SEGMENTS, job.path, message)
        remember(job, SkipReason.MAX_SEGMENTS, message, None)
        if old is not None:
            known[rid].pop(job.rel_path, None)
            result.removed += 1
        return
    vectors = _within_max_embedded(store, cfg, prep, result, fill)
    _store_prepared(store, rid, prep, vectors)
    if job.rel_path in skips.get(rid, ()):
        store.clear_skip(rid, job.rel_path)
    for key, value in prep.notes:
        # Indexed, but not whole: a capped sheet or PDF is never silent (#4).
        reason = SkipReason.TRUNCATED if key == "truncated" else SkipReason.PARTIAL
        if key == "no_text_layer":
            reason = SkipReason.NO_TEXT_LAYER
        result.skip(reason, job.path, f"{key}: {value}")
    if prep.notes:
        keys = [k for k, _ in prep.notes]
        reason = SkipReason.TRUNCATED if "truncated" in keys else SkipReason.PARTIAL
        if "no_text_layer" in keys:  # kept so that turning OCR on reads it (#36)
            reason = SkipReason.NO_TEXT_LAYER
        message = "; ".join(f"{k}: {v}" for k, v in prep.notes)
        remember(job, reason, message, prep.hash)
    if len(vectors or ()) < len(prep.vectors or ()):
        message = f"max_embedded={cfg.max_embedded} reached"
        remember(job, SkipReason.MAX_EMBEDDED, message, None)
    fill.docs += 1
    fill.segments += len(prep.segments)
    fill.embedded += len(vectors or ())
    result.segments += len(prep.segments)
    result.embedded += len(vectors or ())
    if old is not None:
        result.updated += 1
    else:
        result.indexed += 1


def _within_max_embedded(
    store: Index, cfg: Config, prep: Prepared, result: ScanResult, fill: _Fill
) -> tuple[bytes, ...] | None:
    """The file's vectors, cut to what ``max_embedded`` leaves room for."""
    vectors = prep.vectors
    if vectors is None or fill.embedded + len(vectors) <= cfg.max_embedded:
        return vectors
    if not fill.embedded_exact:
        fill.embedded, fill.embedded_exact = store.count_embedded(), True
    if fill.embedded + len(vectors) > cfg.max_embedded:
        room = max(0, cfg.max_embedded - fill.embedded)
        vectors = vectors[:room]
        result.skip(SkipReason.MAX_EMBEDDED, prep.job.path,
                    f"max_embedded={cfg.max_embedded} reached")  # fmt: skip
    return vectors


def _store_prepared(
    store: Index, root_id: int, prep: Prepared, vectors: tuple[bytes, ...] | None
) -> None:
    job = prep.job
    store.add_document(
        NewDocument(
            root_id=root_id, rel_path=job.rel_path, kind=prep.kind, title=prep.title,
            size=job.size, mtime_ns=job.mtime_ns, hash=prep.hash, body=prep.body_z,
            segments=prep.segments, fts=prep.fts, vectors=vectors or (),
            meta=prep.meta or {}, indexed_at=time.time(), fields=prep.fields,
            terms=prep.terms, doc_terms=prep.doc_terms, rows=prep.rows,
        )
    )  # fmt: skip
