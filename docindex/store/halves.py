"""A segment ranking run as two rowid halves on two cores (issue #24).

On a big index a broad query's segment stage is FTS5 walking every row that
matches and computing bm25 for the candidates: one core's work. FTS5 takes
bm25's statistics (rows, mean length, each phrase's row count) from the whole
table whatever rowid range a statement reads, so a half's scores are the
whole statement's, and the two sorted halves merge into exactly its rows.
The upper half runs on a second read-only connection in a thread (``sqlite3``
lets go of the GIL while a statement steps), opened in the background while
the query ranks documents.

Measured on the 10x corpus (21,660 files) on this project's 2-core machine:
the segment stage of the broadest query 33-38 -> 21-22 ms, of another 13-21
-> 13-14 ms; whole in-process queries 0.87-0.98x (medians of three 21-run
interleaved comparisons; a same-code control varied 0.99-1.13x); a narrow
query unchanged. Not the document stage: its halves cost as much as the
whole (16-17 ms either way).

Both halves must read the same commit. The caller's read transaction is
open; the helper's starts in the thread, and each reads the FTS5 structure
records, which every commit that writes the index changes. When the two
differ (a scan committed in between), or the helper fails in any way, the
upper half runs again on the caller's connection: the answer is always the
single statement's.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

# The structure record (rowid 10) of both FTS5 indexes: a cookie, the
# levels and segments, rewritten by every transaction that writes the index.
_SNAPSHOT = (
    "SELECT (SELECT block FROM fts_data WHERE id = 10), "
    "(SELECT block FROM doc_terms_data WHERE id = 10)"
)
Rows = list[tuple[Any, ...]]
# From this many documents (``Store.open(mapped=True)``); below it the second
# connection costs more than it saves (1x corpus, 2,166 documents: queries
# 1.01-1.15x slower split than whole).
SPLIT_MIN_DOCS = 8000


def cores() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Halves:
    """Runs the upper half of a statement on its own read-only connection."""

    def __init__(self, uri: str, pragmas: Sequence[str]) -> None:
        self._uri = uri
        self._pragmas = list(pragmas)
        self._conn: sqlite3.Connection | None = None
        self._thread: threading.Thread | None = None

    def warm(self) -> None:
        """Open the connection (and read its schema) in the background, once.

        Called as a query starts ranking documents: by the time it ranks
        segments the connection is ready, and commands that rank nothing
        never open it.
        """
        if self._conn is None and self._thread is None:
            self._thread = threading.Thread(
                target=self._open_now, daemon=True, name="docindex-half"
            )
            self._thread.start()

    def _open_now(self) -> None:
        try:
            self._open().execute("SELECT count(*) FROM sqlite_master").fetchone()
        except Exception:  # run() tries again, and falls back to one connection
            pass

    def run(
        self, main: sqlite3.Connection, sql: str, lower: Sequence[object],
        upper: Sequence[object],
    ) -> tuple[Rows, Rows]:  # fmt: skip
        """(rows of ``sql`` with ``lower``, rows with ``upper``), the second
        computed meanwhile on the helper connection when it reads ``main``'s
        snapshot. ``main`` must be inside a read transaction."""
        if self._thread is not None:
            self._thread.join()
        out: dict[str, Any] = {}
        thread = threading.Thread(
            target=self._upper, args=(sql, upper, out), daemon=True,
            name="docindex-half",
        )  # fmt: skip
        self._thread = thread
        thread.start()
        try:
            rows_lower = main.execute(sql, lower).fetchall()
            mine = main.execute(_SNAPSHOT).fetchone()
        finally:
            thread.join()
            self._thread = None
        if "rows" in out and out["snapshot"] == mine:
            return rows_lower, out["rows"]
        return rows_lower, main.execute(sql, upper).fetchall()

    def _upper(self, sql: str, params: Sequence[object], out: dict[str, Any]) -> None:
        try:
            conn = self._conn or self._open()
            conn.execute("BEGIN")
            try:
                out["snapshot"] = conn.execute(_SNAPSHOT).fetchone()
                out["rows"] = conn.execute(sql, params).fetchall()
            finally:
                conn.execute("COMMIT")
        except Exception:  # the caller runs the half itself
            out.pop("rows", None)

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._uri, uri=True, isolation_level=None, check_same_thread=False
        )
        for pragma in self._pragmas:
            conn.execute(pragma)
        self._conn = conn
        return conn

    def close(self) -> None:
        """Close the helper connection (after a half still running, if any)."""
        if self._thread is not None:
            self._thread.join()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
