"""The records that cross the storage interface (issue #18).

Callers pass and receive these, never row tuples: only the storage package
knows its columns. The one exception is internal to it: ``SegmentColumns``
rows, built by ``encoding.encode_segments`` and read by ``Store``. The write
side's records (``NewDocument``, ``EncodedSegments``) are in ``encoding.py``:
a query never builds them, and each frozen dataclass costs about a
millisecond at import (the one-shot query budget, issue #7). For the same
reason the small read-side records are NamedTuples (immutable, typed, about
five times cheaper to define); ``SegmentRow`` stays a dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Fingerprint(NamedTuple):
    """The fingerprint of an indexed document, for incremental scans."""

    id: int
    size: int
    mtime_ns: int
    hash: str


DocRow = Fingerprint  # the name before issue #18


class SkipRow(NamedTuple):
    """A skipped file's record as a rescan needs it (issue #23)."""

    reason: str
    message: str
    size: int | None
    mtime_ns: int | None


@dataclass(frozen=True, slots=True)
class SegmentRow:
    """A stored segment with what a hit needs to be rendered."""

    id: int
    doc_id: int
    ordinal: int
    chunk_id: str
    start_line: int
    end_line: int
    char_start: int
    char_end: int
    heading: tuple[str, ...]
    page: int | None
    slide: int | None
    sheet: str | None
    cells: tuple[str, ...] | None
    root: str
    rel_path: str
    title: str | None
    kind: str
    # Words of prose, capped at text.prose.MIN_PROSE_WORDS (issue #37); None
    # when the index does not know (a PostgreSQL index older than the column).
    prose: int | None = None


# One segment as stored, between its ``doc_id`` and its vector: a plain tuple
# in this column order, because a scan builds one per segment in its worker
# processes and pickles them back (a NamedTuple made that 26x slower). Only
# ``encoding.encode_segments`` builds them and only ``Store`` reads them.
SEGMENT_COLUMNS = (
    "section", "part", "frag", "start_line", "lines", "char_start", "chars",
    "page", "slide", "sheet", "cells", "prose",
)  # fmt: skip
SegmentColumns = tuple[
    int | None, int | None, str | None, int, int, int, int, int | None, int | None,
    str | None, str | None, int,
]  # fmt: skip


class StoredDocument(NamedTuple):
    """A document's row (without its body)."""

    id: int
    root: str
    rel_path: str
    kind: str
    title: str | None
    size: int
    mtime_ns: int
    hash: str
    meta: dict[str, str]
    n_segments: int


class DocHit(NamedTuple):
    """A document ranked by ``Index.document_lexical`` (issue #21).

    ``score`` is its negated bm25 (higher is better); its segments are the
    ids ``first_segment`` .. ``first_segment + n_segments - 1``.
    """

    id: int
    score: float
    first_segment: int
    n_segments: int


class EngineRows(NamedTuple):
    """What a store derives from a document's FTS rows, made in the scan's
    worker processes (``Index.row_maker``) instead of its one writer (#34).

    ``lines``: its postings in COPY text, the document id left as ``DOC_MARK``;
    ``seg_lens``: each segment's terms; ``doc_len``, ``body_len``,
    ``seg_len``: term counts of the document row, its body and its segments.
    """

    lines: str
    seg_lens: tuple[int, ...]
    doc_len: int
    body_len: int
    seg_len: int


DOC_MARK = "\t\x00\t"  # where ``EngineRows.lines`` want the document id


class DocName(NamedTuple):
    """What names a document (issue #37): its path, title and the keywords
    (and tags) of its front matter."""

    rel_path: str
    title: str | None
    keywords: tuple[str, ...]


class DocFilter(NamedTuple):
    """Which documents a search or a listing keeps; empty keeps all.

    Args:
        root_ids: only documents of these roots (None: any root).
        kinds: document kinds (``md``, ``.pdf``...; case and dot ignored).
        path_glob: SQLite GLOB over the root-relative path (``list --path``).
        path: ``query --path``: a glob when it has ``*``, ``?`` or ``[``,
            else a file or a folder prefix (issue #19).
        facets: (key, value) front-matter pairs a document must all have.
        except_doc: leave out this document (``related`` without ``--same-file``).
    """

    root_ids: tuple[int, ...] | None = None
    kinds: tuple[str, ...] = ()
    path_glob: str | None = None
    path: str | None = None
    facets: tuple[tuple[str, str], ...] = ()
    except_doc: int | None = None

    def __bool__(self) -> bool:
        return bool(
            self.root_ids is not None
            or self.kinds
            or self.path_glob
            or self.path
            or self.facets
            or self.except_doc is not None
        )


class IndexCounts(NamedTuple):
    """Documents, segments, segments with a vector, and roots."""

    documents: int
    segments: int
    embedded: int
    roots: int


class Space(NamedTuple):
    """Where the index file's bytes go, and what ``vacuum`` would give back.

    ``stale_rows`` counts the FTS rows deleted since the FTS index was last
    merged whole: FTS5 keeps a deleted row's postings, plus a delete marker,
    until a merge reaches its oldest segment (issue #22). ``stale_bytes``
    estimates their share of the FTS data from that count.
    """

    file_bytes: int  # the database file plus its -wal
    free_bytes: int  # free pages inside the file
    live_rows: int
    stale_rows: int
    stale_bytes: int
    # What the two files hold beyond the database's own pages: a -wal whose
    # frames are copies of pages the file has, left large after a big write
    # while another connection (a watcher) kept it from being truncated.
    wal_excess_bytes: int = 0

    @property
    def reclaimable_bytes(self) -> int:
        """Free pages, the estimated stale FTS data and the -wal's excess."""
        return self.free_bytes + self.stale_bytes + self.wal_excess_bytes


class Vacuumed(NamedTuple):
    """What ``vacuum`` did: sizes of the file (with its -wal) before and after."""

    before_bytes: int
    after_bytes: int
    took_ms: float
