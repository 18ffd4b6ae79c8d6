"""Documents held back and written together (issue #34).

A scan's writer sent each document in its own statements: a SAVEPOINT, the
id, the row, its facets, a COPY of its segments, one of its postings and a
RELEASE, about ten waits on the server per document (23k on the corpus, and
the server's per-statement work for each). ``Batch`` holds the rows of the
documents added since the writer's last other statement; ``PgStore`` writes
them with one pipelined multi-row INSERT and one COPY per table before any
other statement runs, so every read in the transaction still sees them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docindex.store.records import SEGMENT_COLUMNS

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow

# Written when either is reached, to bound the writer's memory.
MAX_DOCUMENTS = 500
MAX_BYTES = 32 << 20

INSERT_DOCUMENT = (
    "INSERT INTO documents (id, root_id, rel_path, kind, title, size, "
    "mtime_ns, hash, body, meta, n_segments, indexed_at, sections, "
    "first_segment, terms, len, body_len, seg_len, lens) VALUES "
    f"({', '.join(['%s'] * 18)}, %s::int[]) "
    "ON CONFLICT (root_id, rel_path) DO NOTHING RETURNING id"
)
COPY_SEGMENTS = (
    f"COPY segments (id, doc_id, {', '.join(SEGMENT_COLUMNS)}, vec, len) FROM STDIN"
)
COPY_POSTINGS = "COPY postings (term, doc, fld, body, n, dlen, segs, hits) FROM STDIN"


@dataclass(slots=True)
class Batch:
    """The rows of documents not yet sent: ``documents`` rows (their ids
    taken), ``facets`` and ``segments`` rows, ``postings`` in COPY text."""

    documents: list[tuple[object, ...]] = field(default_factory=list)
    paths: set[tuple[int, str]] = field(default_factory=set)  # (root id, path)
    facets: list[tuple[int, str, str]] = field(default_factory=list)
    segments: list[tuple[object, ...]] = field(default_factory=list)
    postings: list[str] = field(default_factory=list)
    size: int = 0  # bytes held, roughly

    def __bool__(self) -> bool:
        return bool(self.documents)

    @property
    def full(self) -> bool:
        return len(self.documents) >= MAX_DOCUMENTS or self.size >= MAX_BYTES

    def write(
        self, conn: Connection[TupleRow], replace: Callable[[tuple[object, ...]], None]
    ) -> None:
        """Send the rows; ``replace`` inserts a document whose (root, path)
        another writer committed meanwhile, after removing that copy."""
        with conn.cursor() as cur:
            cur.executemany(INSERT_DOCUMENT, self.documents, returning=True)
            clashed = []
            for values in self.documents:
                if cur.fetchone() is None:
                    clashed.append(values)
                cur.nextset()
        for values in clashed:
            replace(values)
        with conn.cursor() as cur:
            if self.facets:
                cur.executemany(
                    "INSERT INTO facets (doc_id, key, value) VALUES (%s, %s, %s)",
                    self.facets,
                )
            if self.segments:
                with cur.copy(COPY_SEGMENTS) as copy:
                    for row in self.segments:
                        copy.write_row(row)
            if self.postings:
                with cur.copy(COPY_POSTINGS) as copy:
                    copy.write("".join(self.postings))
