"""The Store's skip records: files left out of the index, and why (issue #23).

A mixin of ``DocumentRows`` (``documents.py``), split from it (#49).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from docindex.models import SkipRecord, printable
from docindex.store._sql import path_ranges
from docindex.store.records import SkipRow


class SkipRows:
    """Skip records: written by a scan, listed by ``docindex skipped``."""

    conn: sqlite3.Connection
    outdated: bool

    def skip_fingerprints(
        self, root_id: int, under: Sequence[str] | None = None
    ) -> dict[str, SkipRow]:
        """rel_path -> (reason, message, size, mtime_ns) of a root's skipped files
        (``under``: as ``fingerprints``)."""
        out: dict[str, SkipRow] = {}
        for where, params in path_ranges(under):
            for r in self.conn.execute(
                "SELECT rel_path, reason, message, size, mtime_ns FROM skipped "
                f"WHERE root_id = ?{where}",
                (root_id, *params),
            ):
                out[r[0]] = SkipRow(r[1], r[2], r[3], r[4])
        return out

    def record_skip(
        self, root_id: int, rel_path: str, reason: str, message: str,
        size: int | None, mtime_ns: int | None, hash_: str | None, at: float,
    ) -> None:  # fmt: skip
        """Insert or replace the skip record of one file.

        An upsert, not ``INSERT OR REPLACE``: with foreign keys on, REPLACE
        opens a statement journal, and the savepoint makes FTS5 flush the terms
        it holds in memory to a new on-disk segment (issue #22: a scan with
        skipped files wrote and merged a small segment per skip).
        """
        self.conn.execute(
            "INSERT INTO skipped (root_id, rel_path, reason, message, size, mtime_ns, "
            "hash, skipped_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (root_id, rel_path) DO UPDATE SET reason = excluded.reason, "
            "message = excluded.message, size = excluded.size, "
            "mtime_ns = excluded.mtime_ns, hash = excluded.hash, "
            "skipped_at = excluded.skipped_at",
            (root_id, rel_path, reason, message, size, mtime_ns, hash_, at),
        )

    def clear_skip(self, root_id: int, rel_path: str) -> None:
        """Forget a file's skip record (it was indexed whole, or it is gone)."""
        self.conn.execute(
            "DELETE FROM skipped WHERE root_id = ? AND rel_path = ?",
            (root_id, rel_path),
        )

    def skipped(self, reason: str | None = None) -> list[SkipRecord]:
        """Every skip record (optionally of one reason), by root then path."""
        if self.outdated:  # read-only, before m003: nothing recorded yet
            return []
        where, params = ("WHERE s.reason = ?", (reason,)) if reason else ("", ())
        rows = self.conn.execute(
            "SELECT r.path, s.rel_path, s.reason, s.message, s.skipped_at "
            f"FROM skipped s JOIN roots r ON r.id = s.root_id {where} "
            "ORDER BY r.path, s.rel_path",
            params,
        )
        return [
            SkipRecord(
                printable(str(Path(root) / rel)),
                root,
                printable(rel),
                reason_,
                message,
                at,
            )  # fmt: skip
            for root, rel, reason_, message, at in rows
        ]

    def skip_counts(self) -> dict[str, int]:
        """Number of skip records per reason."""
        if self.outdated:
            return {}
        return {
            reason: int(n)
            for reason, n in self.conn.execute(
                "SELECT reason, count(*) FROM skipped GROUP BY reason ORDER BY reason"
            )
        }
