"""Keeping the index file small: FTS5 merges, free pages, ``vacuum`` (issue #22).

The FTS table is contentless, and FTS5 deletes a row by writing a delete
marker into a new segment: the row's postings stay in the old segment until a
merge that reaches the oldest one. Re-indexing every file of an index that way
doubled the FTS data (59 -> 87 MB over two ``scan --force``). So:

- a rewrite of the whole index empties the FTS table at once
  (``delete-all``) instead of deleting row by row;
- every row deleted otherwise is counted in ``meta.fts_stale``; past
  :data:`STALE_SHARE` of the live rows a scan merges the FTS index whole
  (``optimize``), which bounds the garbage left by repeated edits;
- ``docindex vacuum`` merges and returns every free page to the file system.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path

from docindex.store.records import Space, Vacuumed

STALE_KEY = "fts_stale"
STALE_SHARE = 0.2
"""Deleted FTS rows, as a share of the live ones, at which a scan merges them away.

Merging costs about as much as inserting the whole FTS index again (1.0-1.4 s
at the shared corpus, against a one-file rescan's 0.25 s), so it runs once per
fifth of the index re-indexed; the FTS data then stays within ~20% of its
merged size.
"""


def stale_rows(conn: sqlite3.Connection) -> int:
    """FTS rows deleted since the FTS index was last merged whole."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (STALE_KEY,)).fetchone()
    return int(row[0]) if row else 0


def note_deleted(conn: sqlite3.Connection, rows: int) -> None:
    """Count ``rows`` FTS rows deleted by delete marker."""
    if rows:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) "
            "DO UPDATE SET value = CAST(value AS INTEGER) + excluded.value",
            (STALE_KEY, rows),
        )


def _reset(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM meta WHERE key = ?", (STALE_KEY,))


def clear_fts(conn: sqlite3.Connection) -> None:
    """Empty the FTS tables in one step (every row is about to be written again)."""
    conn.execute("INSERT INTO fts (fts) VALUES ('delete-all')")
    conn.execute("INSERT INTO doc_terms (doc_terms) VALUES ('delete-all')")
    conn.execute("DELETE FROM doc_term_counts")
    conn.execute("DELETE FROM doc_lengths")
    _reset(conn)


def merge_fts(conn: sqlite3.Connection) -> None:
    """Merge the FTS indexes into one segment each, dropping deleted rows for good.

    ``doc_terms`` gets a few deletes per deleted document, far fewer than
    ``fts``'s per segment, so the segment rows' count decides when both merge.
    """
    conn.execute("INSERT INTO fts (fts) VALUES ('optimize')")
    conn.execute("INSERT INTO doc_terms (doc_terms) VALUES ('optimize')")
    _reset(conn)


def live_rows(conn: sqlite3.Connection) -> int:
    """FTS rows in the index (one per segment), from the documents table."""
    row = conn.execute("SELECT coalesce(sum(n_segments), 0) FROM documents")
    return int(row.fetchone()[0])


def merge_due(conn: sqlite3.Connection) -> bool:
    """True when enough rows were deleted for a merge to pay (:data:`STALE_SHARE`)."""
    stale = stale_rows(conn)
    return stale > 0 and stale > STALE_SHARE * live_rows(conn)


def file_bytes(path: Path) -> int:
    """The database file plus its -wal, in bytes (0 for a missing file)."""
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += Path(f"{path}{suffix}").stat().st_size
    return total


def space(conn: sqlite3.Connection, path: Path) -> Space:
    """Where the file's bytes go.

    With deleted rows pending, the FTS data's block sizes are read to weigh
    them (~0.15 s a corpus copy, 1.5 s at 10x); with none, nothing is.
    """
    c = conn.execute
    page_size = int(c("PRAGMA page_size").fetchone()[0])
    free = int(c("PRAGMA freelist_count").fetchone()[0]) * page_size
    pages = int(c("PRAGMA page_count").fetchone()[0]) * page_size  # with the -wal's
    on_disk = file_bytes(path)
    live, stale = live_rows(conn), stale_rows(conn)
    stale_b = 0
    if stale:
        sql = (
            "SELECT (SELECT coalesce(sum(length(block)), 0) FROM fts_data)"
            " + (SELECT coalesce(sum(length(block)), 0) FROM doc_terms_data)"
        )
        stale_b = round(int(c(sql).fetchone()[0]) * stale / (live + stale))
    return Space(on_disk, free, live, stale, stale_b, max(0, on_disk - pages))


def vacuum(conn: sqlite3.Connection, path: Path) -> Vacuumed:
    """Merge the FTS index, then give every free page back to the file system.

    An index made with ``auto_vacuum = INCREMENTAL`` (schema 2 on) is shrunk
    in place by ``incremental_vacuum``; an older one is rewritten once by
    ``VACUUM``, which also switches it to incremental auto-vacuum. The merge
    runs in one ``BEGIN IMMEDIATE`` transaction: while a scan or a watcher
    writes, it fails with SQLITE_BUSY and changes nothing. The caller holds
    no transaction.
    """
    started = time.perf_counter()
    before = file_bytes(path)
    conn.execute("BEGIN IMMEDIATE")
    try:
        merge_fts(conn)
        incremental = int(conn.execute("PRAGMA auto_vacuum").fetchone()[0]) == 2
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    if incremental:
        # executescript steps the pragma to the end; execute() frees one page.
        conn.executescript("PRAGMA incremental_vacuum;")
    else:
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("VACUUM")
    with contextlib.suppress(sqlite3.Error):
        # Fold the WAL back so the file shrinks now; a reader may delay it.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    took = (time.perf_counter() - started) * 1000
    return Vacuumed(before, file_bytes(path), round(took, 1))
