"""Documents held back and written together (issue #34).

A scan's writer sent each document in its own statements: a SAVEPOINT, the
id, the row, its facets, a COPY of its segments, one of its postings and a
RELEASE, about ten waits on the server per document (23k on the corpus, and
the server's per-statement work for each). ``Batch`` holds the rows of the
documents added since the writer's last other statement; ``PgStore`` writes
them with one pipelined multi-row INSERT and one COPY per table before any
other statement runs, so every read in the transaction still sees them. A
full batch is written by ``Sender``'s thread while the scan goes on.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docindex.store.records import SEGMENT_COLUMNS

if TYPE_CHECKING:
    from psycopg import Connection, Copy, Cursor
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
    f"COPY segments (id, doc_id, {', '.join(SEGMENT_COLUMNS)}, vec, len, root_id) "
    "FROM STDIN"
)
COPY_POSTINGS = (
    "COPY postings (term, doc, root_id, fld, body, n, dlen, segs, hits) FROM STDIN"
)


@dataclass(slots=True)
class Batch:
    """The rows of documents not yet sent: ``documents`` rows (their ids
    taken), ``facets`` and ``segments`` rows, ``postings`` in COPY text;
    each row carries its root's id (the servers' access policies, #48)."""

    documents: list[tuple[object, ...]] = field(default_factory=list)
    paths: set[tuple[int, str]] = field(default_factory=set)  # (root id, path)
    facets: list[tuple[int, int, str, str]] = field(default_factory=list)
    segments: list[tuple[object, ...]] = field(default_factory=list)
    postings: list[str] = field(default_factory=list)
    size: int = 0  # bytes held, roughly
    clashed: list[tuple[object, ...]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.documents)

    @property
    def full(self) -> bool:
        return len(self.documents) >= MAX_DOCUMENTS or self.size >= MAX_BYTES

    def insert_documents(self, conn: Connection[TupleRow]) -> None:
        """Insert the ``documents`` rows in one pipeline; those whose (root,
        path) another writer committed meanwhile go to ``clashed``."""
        with conn.cursor() as cur:
            cur.executemany(INSERT_DOCUMENT, self.documents, returning=True)
            for values in self.documents:
                if cur.fetchone() is None:
                    self.clashed.append(values)
                cur.nextset()

    def write_rows(self, conn: Connection[TupleRow], staged: bool = False) -> None:
        """The facets, segments and postings of the inserted documents.

        ``staged``: the role is subject to the tables' row-level security,
        which refuses COPY (issue #48): the rows are copied into a temporary
        table and moved from there in one INSERT, which the policies check.
        """
        with conn.cursor() as cur:
            if self.facets:
                cur.executemany(
                    "INSERT INTO facets (doc_id, root_id, key, value) "
                    "VALUES (%s, %s, %s, %s)",
                    self.facets,
                )
            if self.segments:
                with copying(cur, COPY_SEGMENTS, staged) as copy:
                    for row in self.segments:
                        copy.write_row(row)
            if self.postings:
                with copying(cur, COPY_POSTINGS, staged) as copy:
                    copy.write("".join(self.postings))


@contextlib.contextmanager
def copying(cur: Cursor[TupleRow], statement: str, staged: bool) -> Iterator[Copy]:
    """``cur.copy(statement)`` (``COPY table (columns) FROM STDIN``), through a
    temporary table of the same columns when ``staged``."""
    if not staged:
        with cur.copy(statement) as copy:
            yield copy
        return
    table, columns = statement.split()[1], statement.split("(", 1)[1].split(")")[0]
    stage = f"docindex_stage_{table}"
    cur.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {stage} (LIKE {table}) ON COMMIT DELETE ROWS"
    )
    with cur.copy(statement.replace(f"COPY {table} ", f"COPY {stage} ", 1)) as copy:
        yield copy
    cur.execute(
        f"WITH moved AS (DELETE FROM {stage} RETURNING {columns}) "
        f"INSERT INTO {table} ({columns}) SELECT {columns} FROM moved"
    )


class Sender:
    """Writes a full batch from a thread while the scan's writer goes on
    collecting the next (issue #34: the writer waited ~3 s on the server's
    COPYs of the corpus while its workers waited on it).

    One batch at a time, and nothing else on the connection meanwhile:
    ``PgStore`` calls ``wait`` before any other statement. A batch that met
    a clash stops after its ``documents`` rows; ``wait`` hands it back.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._batch: Batch | None = None
        self._error: BaseException | None = None

    @property
    def paths(self) -> set[tuple[int, str]]:
        return self._batch.paths if self._batch is not None else set()

    def start(
        self, held: Batch, conn: Connection[TupleRow], staged: bool = False
    ) -> None:
        def run() -> None:
            try:
                held.insert_documents(conn)
                if not held.clashed:
                    held.write_rows(conn, staged)
            except BaseException as exc:  # noqa: BLE001 - raised again by wait()
                self._error = exc

        self._batch = held
        self._thread = threading.Thread(target=run, name="docindex-copy", daemon=True)
        self._thread.start()

    def wait(self) -> Batch | None:
        """Wait for the batch in flight; return it if it met a clash: its
        ``documents`` rows are in, the clashed ones and the rest are not.

        Raises:
            BaseException: what the thread's statements raised.
        """
        thread, held, self._thread, self._batch = self._thread, self._batch, None, None
        if thread is None:
            return None
        thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise error
        return held if held is not None and held.clashed else None

    def drop(self) -> None:
        """Wait for the batch in flight and forget it (a rollback follows)."""
        with contextlib.suppress(BaseException):
            self.wait()
