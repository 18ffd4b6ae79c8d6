"""The Store's counts: documents, segments, vectors, kinds and facets.

A mixin of ``DocumentRows`` (``documents.py``), split from it (#49).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from docindex.store._sql import NAME_KEYS, chunks
from docindex.store.records import IndexCounts


class CountRows:
    """What ``stats``, a query's idf and the MCP schemas count."""

    conn: sqlite3.Connection

    def fill_counts(self) -> tuple[int, int]:
        """(documents, segments) from the documents table alone (no table scan)."""
        row = self.conn.execute(
            "SELECT count(*), coalesce(sum(n_segments), 0) FROM documents"
        ).fetchone()
        return int(row[0]), int(row[1])

    def count_embedded(self) -> int:
        """Number of segments with a vector (reads the whole segments table)."""
        sql = "SELECT count(*) FROM segments WHERE vec IS NOT NULL"
        return int(self.conn.execute(sql).fetchone()[0])

    def count_segments(self) -> int:
        """Number of segments in the index, from each document's count: every
        query asks (idf for ``coverage``), and ``count(*)`` of the wide segments
        table read all of it (6.4 ms on the 84k-segment corpus; this: 0.2 ms)."""
        return self.fill_counts()[1]

    def max_segment_id(self) -> int:
        """Largest segment id: a bound on the segment count without a table scan."""
        return int(self.conn.execute("SELECT max(id) FROM segments").fetchone()[0] or 0)

    def counts(self) -> IndexCounts:
        """Document, segment, vector and root counts."""
        c = self.conn.execute
        return IndexCounts(
            documents=int(c("SELECT count(*) FROM documents").fetchone()[0]),
            segments=int(c("SELECT count(*) FROM segments").fetchone()[0]),
            embedded=int(
                c("SELECT count(*) FROM segments WHERE vec IS NOT NULL").fetchone()[0]
            ),
            roots=int(c("SELECT count(*) FROM roots").fetchone()[0]),
        )

    def kinds(self) -> dict[str, int]:
        """Document count per kind."""
        return {
            k: int(n)
            for k, n in self.conn.execute(
                "SELECT kind, count(*) FROM documents GROUP BY kind ORDER BY kind"
            )
        }

    def facet_counts(self) -> list[tuple[str, int, int]]:
        """(key, documents, distinct values) per facet, most documents first."""
        rows = self.conn.execute(
            "SELECT key, count(DISTINCT doc_id), count(DISTINCT value) FROM facets "
            "GROUP BY key ORDER BY 2 DESC, key"
        )
        return [(str(k), int(d), int(v)) for k, d, v in rows]

    def keyword_counts(self, keywords: Sequence[str]) -> tuple[dict[str, int], int]:
        """Documents carrying each keyword (or tag), and documents carrying any."""
        counts: dict[str, int] = {}
        for chunk in chunks(list(keywords)):
            marks = ",".join("?" * len(chunk))
            for value, n in self.conn.execute(
                f"SELECT value, count(DISTINCT doc_id) FROM facets WHERE key IN "
                f"{NAME_KEYS} AND value IN ({marks}) GROUP BY value",
                tuple(chunk),
            ):
                counts[str(value)] = int(n)
        row = self.conn.execute(
            f"SELECT count(DISTINCT doc_id) FROM facets WHERE key IN {NAME_KEYS}"
        ).fetchone()
        return counts, int(row[0]) if row else 0

    def facet_values(self) -> dict[str, list[str]]:
        """Distinct values of each front-matter facet."""
        out: dict[str, list[str]] = {}
        for key, value in self.conn.execute(
            "SELECT DISTINCT key, value FROM facets ORDER BY key, value"
        ):
            out.setdefault(key, []).append(value)
        return out
