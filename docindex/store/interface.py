"""The storage interface the core programs against (issue #18).

``Index`` is what ``indexer``, ``search``, ``navigate``, ``hints`` and ``api``
call; ``store.sqlite.Store`` is its one implementation today. A second one (a
server database for shared indexes) would implement the same methods with
its own schema: callers pass and receive the records of ``store.records``,
never SQL or row tuples. Two parts are SQLite-shaped on purpose and say so:
``lexical`` takes an FTS5 query string (``search.quote_fts`` builds it) and
``delete_document`` takes the FTS rows to replay (a contentless FTS5 table
cannot delete otherwise; another engine may ignore them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from docindex.store.records import (
    DocFilter,
    DocHit,
    DocName,
    EngineRows,
    Fingerprint,
    IndexCounts,
    SegmentRow,
    SkipRow,
    Space,
    StoredDocument,
    Vacuumed,
)

if TYPE_CHECKING:
    from docindex.models import SkipRecord
    from docindex.store.encoding import NewDocument

# (pre-tokenised (title, body) per segment, the document's (title, headings))
RowMaker = Callable[[Sequence[tuple[str, str]], tuple[str, str]], EngineRows]


class Index(Protocol):
    """An open index: documents, segments, vectors, postings, settings, upkeep."""

    #: a read-only replica of the index (a PostgreSQL hot standby, #48)
    replica: bool

    # -- transactions and lifecycle
    def atomic(
        self, immediate: bool = True, savepoint: bool = True
    ) -> AbstractContextManager[None]:
        """One transaction (nested calls nest); rolls back on any exception."""

    def bulk_journal(self) -> AbstractContextManager[bool]:
        """A context in which a first, bulk write may skip the write-ahead log."""

    def close(self) -> None:
        """Release the connection."""

    # -- settings (JSON values by key: tokenizer, embedder, index settings)
    def get_meta(self, key: str) -> Any:
        """The JSON value stored under ``key``, or None."""

    def set_meta(self, key: str, value: object) -> None:
        """Store a JSON-encodable value under ``key``."""

    # -- roots and documents
    def root_id(self, root: str) -> int:
        """Id of a root path, added if new."""

    def roots(self) -> dict[int, str]:
        """All roots by id."""

    def root_documents(self) -> dict[str, int]:
        """Document count per root path."""

    def root_grants(self) -> dict[str, tuple[str, ...]]:
        """Root path -> the roles that alone may read it (issue #48; roots
        without grants, readable by every reader, are left out)."""

    def move_root(self, old: str, new: str) -> bool:
        """Point a root at another folder, keeping its documents; False if unknown."""

    def delete_root(self, root: str) -> None:
        """Forget a root whose documents were removed already."""

    def fingerprints(
        self, root_id: int, under: Sequence[str] | None = None
    ) -> dict[str, Fingerprint]:
        """rel_path -> fingerprint of every document of a root (``under``: only
        those at or below these root-relative paths; "" is the whole root)."""

    def touch_document(self, doc_id: int, size: int, mtime_ns: int) -> None:
        """Record a new stat fingerprint for unchanged content."""

    def add_document(self, doc: NewDocument) -> int:
        """Insert a document with its segments, postings and vectors; its id."""

    def row_maker(self) -> RowMaker | None:
        """A picklable function that makes a document's ``EngineRows`` from its
        FTS rows and fields in the scan's workers, or None (SQLite: FTS5 does
        that work in C)."""

    def delete_document(
        self, doc_id: int, fts: Iterable[tuple[int, str, str]] = (),
        fields: tuple[str, str] | None = None,
    ) -> None:  # fmt: skip
        """Delete a document, its segments, postings and facets."""

    def document(self, doc_id: int) -> StoredDocument | None:
        """A document's row, or None."""

    def find_document(self, root_id: int, rel_path: str) -> int | None:
        """Id of the document at (root, rel_path), or None."""

    def documents(
        self, only: DocFilter = ..., limit: int = -1, offset: int = 0
    ) -> tuple[list[StoredDocument], int]:
        """A page of documents sorted by root and path, and the total."""

    def documents_at(self, pairs: Sequence[tuple[str, str]]) -> list[StoredDocument]:
        """The documents at (root, rel_path) pairs."""

    def body(self, doc_id: int) -> str:
        """A document's stored text."""

    def segment_count(self, doc_id: int) -> int:
        """A document's number of segments."""

    # -- skip records (files left out, until they change; issue #23)
    def skip_fingerprints(
        self, root_id: int, under: Sequence[str] | None = None
    ) -> dict[str, SkipRow]:
        """rel_path -> the recorded skip of every skipped file of a root
        (``under``: as ``fingerprints``)."""

    def record_skip(
        self, root_id: int, rel_path: str, reason: str, message: str,
        size: int | None, mtime_ns: int | None, hash_: str | None, at: float,
    ) -> None:  # fmt: skip
        """Record (or replace) why a file is left out."""

    def clear_skip(self, root_id: int, rel_path: str) -> None:
        """Forget a file's skip (it was indexed, or it is gone)."""

    def skipped(self, reason: str | None = None) -> list[SkipRecord]:
        """Every recorded skip (of one reason), as ``docindex skipped`` lists them."""

    def skip_counts(self) -> dict[str, int]:
        """Recorded skips per reason."""

    # -- segments
    def segments_of(self, doc_id: int) -> list[SegmentRow]:
        """A document's segments in order."""

    def segments_by_id(self, ids: Sequence[int]) -> dict[int, SegmentRow]:
        """Segments by id (missing ids left out)."""

    def segments_by_chunk_id(self, chunk_id: str) -> list[SegmentRow]:
        """Segments with this chunk id (one per root at most)."""

    def doc_ids_of(self, segment_ids: Sequence[int]) -> dict[int, int]:
        """segment id -> document id."""

    # -- postings (full-text search)
    def lexical(
        self, match: str, limit: int, title_weight: float, only: DocFilter = ...,
        within: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:  # fmt: skip
        """(segment id, bm25 score) best first for an FTS5 query (of ``within``)."""

    def document_lexical(
        self,
        match: str,
        limit: int,
        weights: tuple[float, float, float],
        only: DocFilter = ...,
    ) -> list[DocHit]:
        """The best documents by field-weighted bm25 (title, headings, body)."""

    def document_terms(self, doc_ids: Sequence[int]) -> dict[int, str]:
        """doc id -> its stored salient terms."""

    def document_names(self, doc_ids: Sequence[int]) -> dict[int, DocName]:
        """doc id -> its path, title and front-matter keywords."""

    def keyword_counts(self, keywords: Sequence[str]) -> tuple[dict[str, int], int]:
        """Documents carrying each keyword (or tag), and documents carrying any."""

    def document_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Documents holding each term."""

    def document_stats(self) -> tuple[int, float]:
        """(documents, mean body terms per document)."""

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Segments holding each term."""

    def count_matches(
        self, match: str, only: DocFilter = ..., *, documents: bool = False
    ) -> int:
        """Segments (or documents) matching an FTS5 query, without ranking."""

    def vocabulary(self, first: str, last: str) -> list[tuple[str, int]]:
        """(term, segments holding it) for terms in ``[first, last)``."""

    def tune_fts_for_bulk(self) -> None:
        """Prepare the postings for many inserts."""

    # -- vectors
    def vectors(self, ids: Sequence[int]) -> tuple[list[int], list[bytes]]:
        """Vector blobs of these segments (those that have one)."""

    def all_vectors(
        self, only: DocFilter = ..., *, first_only: bool = False
    ) -> tuple[list[int], list[bytes]]:
        """Every vector blob (of the documents ``only`` keeps); ``first_only``:
        each document's first segment's (a per-document provider, #47)."""

    def pending_vectors(
        self, after: int, limit: int, *, first_only: bool = False
    ) -> list[SegmentRow]:
        """Segments without a vector, id > ``after``, in id order; with
        ``first_only``, each document's first segment alone (its document's
        vector, issue #47)."""

    def set_vectors(self, ids: Sequence[int], blobs: Sequence[bytes]) -> None:
        """Store vector blobs by segment id."""

    # -- statistics
    def counts(self) -> IndexCounts:
        """Documents, segments, vectors, roots."""

    def fill_counts(self) -> tuple[int, int]:
        """(documents, segments), cheaply."""

    def count_embedded(self) -> int:
        """Segments with a vector."""

    def count_segments(self) -> int:
        """Segments in the index."""

    def max_segment_id(self) -> int:
        """An upper bound on the segment count, cheaply."""

    def kinds(self) -> dict[str, int]:
        """Documents per kind."""

    def facet_values(self) -> dict[str, list[str]]:
        """Distinct values of each front-matter facet."""

    def facet_counts(self) -> list[tuple[str, int, int]]:
        """(key, documents, distinct values) per facet, most documents first."""

    # -- maintenance
    def reclaim(self, min_free: float = 0.01) -> int:
        """Give free space back to the file system; pages freed."""

    def clear_fts(self) -> None:
        """Empty the FTS tables at once, before every document is rewritten."""

    def restore_fts(
        self, doc_id: int, rows: Sequence[tuple[int, str, str]], fields: tuple[str, str]
    ) -> None:
        """Give a kept document its FTS rows (and term counts) back after ``clear_fts``."""

    def tidy_fts(self) -> bool:
        """Merge the FTS index when deleted rows piled up; whether it merged."""

    def notices(self) -> list[str]:
        """What the user must do about the index's state: a repair this
        process could not make itself (``stats`` and ``scan`` print them)."""

    def space(self) -> Space:
        """Where the file's bytes go and what ``vacuum`` would give back."""

    def vacuum(self) -> Vacuumed:
        """Merge the FTS index and shrink the file."""

    def checkpoint(self) -> None:
        """Make the committed state durable in the main file."""
