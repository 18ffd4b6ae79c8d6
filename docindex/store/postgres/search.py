"""The reading side of the PostgreSQL index (issue #34): FTS5's bm25 over the
stored term frequencies (``ranking.py``), the match counts, the vocabulary and
the vectors. ``PgStore`` (``__init__``) adds the connection, transactions,
roots and writes.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from docindex.store.documents import DocumentRows
from docindex.store.postgres import ranking
from docindex.store.postgres.filters import ALL_DOCS, filter_sql
from docindex.store.records import DocFilter, DocHit, DocName, SegmentRow

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow


class PgReader(DocumentRows):
    """Search and vector reads; the state is set up by ``PgStore``."""

    pg: Connection[TupleRow]
    _depth: int  # open transactions (0: none)
    _bodies: dict[int, str]  # document texts read in this transaction
    _totals: tuple[int, int, int, int, int] | None
    # (match, filter, documents?) -> count_matches, from document_lexical
    _matches: dict[tuple[str, DocFilter, bool], int]

    # -- search --------------------------------------------------------------

    def _vocab(self, terms: Sequence[str], column: str) -> dict[str, int]:
        rows = self.pg.execute(
            f"SELECT term, sum({column}) FROM vocab WHERE term = ANY(%s) GROUP BY term",
            (list(dict.fromkeys(terms)),),
        )
        return {str(t): int(n) for t, n in rows if n}

    def _stats(self) -> tuple[int, int, int, int, int]:
        """(documents, segments, segment tokens, document tokens, body tokens)."""
        if self._totals is None or not self._depth:
            rows = {
                str(t): (int(a or 0), int(b or 0))
                for t, a, b in self.pg.execute(
                    "SELECT term, sum(segs), sum(docs) FROM vocab "
                    "WHERE term = ANY(%s) GROUP BY term",
                    ([" rows", " tokens", " body"],),
                )
            }
            segs, docs = rows.get(" rows", (0, 0))
            seg_tokens, doc_tokens = rows.get(" tokens", (0, 0))
            body = rows.get(" body", (0, 0))[1]
            self._totals = (docs, segs, seg_tokens, doc_tokens, body)
        return self._totals

    def lexical(
        self, match: str, limit: int, title_weight: float,
        only: DocFilter = ALL_DOCS, within: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:  # fmt: skip
        """(segment id, bm25) best first, as FTS5's ``bm25(fts, title_weight, 1)``."""
        _, n_rows, n_tokens, _, _ = self._stats()
        tree, phrases = ranking.parse_match(match)
        counts = self.doc_freqs(phrases)
        idfs = [ranking.idf(n_rows, counts.get(p, 0)) for p in phrases]
        terms = list(dict.fromkeys(phrases))
        slot = {t: i for i, t in enumerate(terms)}
        # One lookup per term and row (OFFSET 0 keeps the planner from copying
        # the lookup into every use): jsonb lookups are most of the cost.
        looks = ", ".join(f"(s.tf ->> %s)::bigint AS x{i}" for i in range(len(terms)))
        freqs = [
            ranking.packed_freq(f"u.x{slot[p]}", [], (title_weight, 1.0))
            for p in phrases
        ]
        lateral, lparams, score, sparams = ranking.bm25_sql(
            freqs, idfs, n_tokens / max(1, n_rows), "s.len"
        )
        cond, cparams = ranking.match_sql(tree, "s.tf")
        join, extra = "", ""
        params: list[object] = []
        if within is not None:
            extra, params = " AND s.id = ANY(%s)", [list(within)]
        else:
            where, fparams = filter_sql(only)
            if where:
                join = "JOIN documents d ON d.id = s.doc_id"
                extra, params = f" AND {where}", fparams
        sql = (
            f"SELECT s.id, {score} AS score FROM segments s {join} "
            f"CROSS JOIN LATERAL (SELECT {looks} OFFSET 0) u "
            f"CROSS JOIN LATERAL (SELECT {lateral}) v WHERE {cond}{extra} "
            "ORDER BY score DESC, s.id LIMIT %s"
        )
        rows = self.pg.execute(
            sql, [*sparams, *terms, *lparams, *cparams, *params, limit]
        )
        return [(int(r[0]), float(r[1])) for r in rows]

    def count_matches(
        self, match: str, only: DocFilter = ALL_DOCS, *, documents: bool = False
    ) -> int:
        """Segments (or distinct documents) matching an FTS5-syntax query among
        the documents ``only`` selects, without ranking (issue #37)."""
        known = self._matches.get((match, only, documents))
        if known is not None:
            return known
        tree, _ = ranking.parse_match(match)
        cond, cparams = ranking.match_sql(tree, "s.tf")
        where, fparams = filter_sql(only)
        what = "count(DISTINCT s.doc_id)" if documents else "count(*)"
        join = "JOIN documents d ON d.id = s.doc_id " if where else ""
        sql = (
            f"SELECT {what} FROM segments s {join}WHERE {cond}"
            f"{' AND ' + where if where else ''}"
        )
        row = self.pg.execute(sql, [*cparams, *fparams]).fetchone()
        return int(row[0]) if row else 0

    def vocabulary(self, first: str, last: str) -> list[tuple[str, int]]:
        """(term, segments holding it) for terms ``first <= term < last``."""
        rows = self.pg.execute(
            "SELECT term, sum(segs) FROM vocab WHERE term >= %s AND term < %s "
            "GROUP BY term HAVING sum(segs) > 0",
            (first, last),
        )
        return [(str(t), int(n)) for t, n in rows]

    def document_lexical(
        self, match: str, limit: int, weights: tuple[float, float, float],
        only: DocFilter = ALL_DOCS,
    ) -> list[DocHit]:  # fmt: skip
        """The best documents by ``bm25(doc_fts, *weights)``, as FTS5 ranks them.

        A document's title and heading hits are in its row (``ftf``); its body
        hits are summed over its segments' body column.
        """
        n_docs, _, _, n_tokens, _ = self._stats()
        tree, phrases = ranking.parse_match(match)
        terms = list(dict.fromkeys(phrases))
        slot = {t: i for i, t in enumerate(terms)}
        counts = self.document_freqs(terms)
        idfs = [ranking.idf(n_docs, counts.get(p, 0)) for p in phrases]
        body = ", ".join(
            f"coalesce(((s.tf ->> %s)::bigint & {ranking.HIT_MASK})::float8, 0) AS b{i}"
            for i in range(len(terms))
        )
        zeros = ", ".join(f"0::float8 AS b{i}" for i in range(len(terms)))
        sums = ", ".join(f"sum(b{i}) AS b{i}" for i in range(len(terms)))
        # A query of terms joined by OR matches the segments read here, so
        # their count (``count_matches``: the hits' total) comes with the
        # ranking instead of reading every matching segment again.
        counts_too = tree.op == "term" or (
            tree.op == "or" and all(k.op == "term" for k in tree.kids)
        )
        freqs = []
        for p in phrases:
            sql, params = ranking.packed_freq(
                "(d.ftf ->> %s)::bigint", [p], weights[:2]
            )
            freqs.append((f"{sql} + %s::float8 * a.b{slot[p]}", [*params, weights[2]]))
        lateral, lparams, score, sparams = ranking.bm25_sql(
            freqs, idfs, n_tokens / max(1, n_docs), "d.len"
        )

        def present(term: str) -> tuple[str, list[object]]:
            return f"(d.ftf ? %s OR a.b{slot[term]} > 0)", [term]

        cond, cparams = ranking.bool_sql(tree, present)
        where, fparams = filter_sql(only)
        sql = (
            f"WITH a AS (SELECT id, sum(n) AS n, {sums} FROM ("
            f"SELECT s.doc_id AS id, 1 AS n, {body} FROM segments s WHERE s.tf ?| %s "
            f"UNION ALL SELECT d.id, 0, {zeros} FROM documents d WHERE d.ftf ?| %s"
            ") u GROUP BY id) "
            f"SELECT d.id, {score} AS score, d.first_segment, d.n_segments, "
            "t.segs, t.docs FROM a JOIN documents d ON d.id = a.id "
            f"CROSS JOIN LATERAL (SELECT {lateral}) v "
            "CROSS JOIN (SELECT coalesce(sum(x.n), 0) AS segs, count(*) FILTER "
            "(WHERE x.n > 0) AS docs FROM a x JOIN documents d ON d.id = x.id"
            f"{' WHERE ' + where if where else ''}) t WHERE {cond}"
            f"{' AND ' + where if where else ''} ORDER BY score DESC, d.id LIMIT %s"
        )
        params = [*terms, terms, terms, *sparams, *lparams, *fparams, *cparams,
                  *fparams, limit]  # fmt: skip
        rows = self.pg.execute(sql, params).fetchall()
        if counts_too and rows and self._depth:
            self._matches[(match, only, False)] = int(rows[0][4])
            self._matches[(match, only, True)] = int(rows[0][5])
        return [DocHit(int(r[0]), float(r[1]), int(r[2]), int(r[3])) for r in rows]

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Segments holding each term (absent terms left out)."""
        return self._vocab([t for t in terms if t.strip()], "segs")

    def document_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Documents holding each term in a field or in a segment's body."""
        return self._vocab([t for t in terms if t.strip()], "docs")

    def max_segment_id(self) -> int:
        """The segment count (``vocab`` totals): ids have gaps here (a sequence)
        and callers use this as a cheap count."""
        return self._stats()[1]

    def document_stats(self) -> tuple[int, float]:
        """(documents, mean body terms per document)."""
        n_docs, _, _, _, body = self._stats()
        return n_docs, body / max(1, n_docs)

    def document_terms(self, doc_ids: Sequence[int]) -> dict[int, str]:
        """doc id -> its stored salient terms."""
        rows = self.pg.execute(
            "SELECT id, terms FROM documents WHERE id = ANY(%s) AND terms IS NOT NULL",
            (list(doc_ids),),
        )
        return {int(i): str(t) for i, t in rows}

    def document_names(self, doc_ids: Sequence[int]) -> dict[int, DocName]:
        """doc id -> its path, title and front-matter keywords (and tags)."""
        rows = self.pg.execute(
            "SELECT d.id, d.rel_path, d.title, ARRAY(SELECT f.value FROM facets f "
            "WHERE f.doc_id = d.id AND f.key IN ('keywords', 'tags')) "
            "FROM documents d WHERE d.id = ANY(%s)",
            (list(doc_ids),),
        )
        return {int(i): DocName(str(p), t, tuple(k)) for i, p, t, k in rows}

    def keyword_counts(self, keywords: Sequence[str]) -> tuple[dict[str, int], int]:
        """Documents carrying each keyword (or tag), and documents carrying any."""
        counts = {
            str(v): int(n)
            for v, n in self.pg.execute(
                "SELECT value, count(DISTINCT doc_id) FROM facets WHERE key IN "
                "('keywords', 'tags') AND value = ANY(%s) GROUP BY value",
                (list(keywords),),
            )
        }
        row = self.pg.execute(
            "SELECT count(DISTINCT doc_id) FROM facets WHERE key IN ('keywords', 'tags')"
        ).fetchone()
        return counts, int(row[0]) if row else 0

    def doc_ids_of(self, segment_ids: Sequence[int]) -> dict[int, int]:
        """segment id -> doc id."""
        rows = self.pg.execute(
            "SELECT id, doc_id FROM segments WHERE id = ANY(%s)", (list(segment_ids),)
        )
        return {int(s): int(d) for s, d in rows}

    def tune_fts_for_bulk(self) -> None:
        """Nothing to tune: the GIN indexes buffer inserts in their pending lists."""

    # -- vectors -------------------------------------------------------------

    def vectors(self, ids: Sequence[int]) -> tuple[list[int], list[bytes]]:
        """Vector blobs of the given segments (those that have one)."""
        rows = self.pg.execute(
            "SELECT id, vec FROM segments WHERE id = ANY(%s) AND vec IS NOT NULL",
            (list(ids),),
        )
        out_ids: list[int] = []
        blobs: list[bytes] = []
        for sid, blob in rows:
            out_ids.append(int(sid))
            blobs.append(bytes(blob))
        return out_ids, blobs

    def all_vectors(self, only: DocFilter = ALL_DOCS) -> tuple[list[int], list[bytes]]:
        """Every stored vector (of the documents ``only`` selects)."""
        where, params = filter_sql(only)
        sql = "SELECT s.id, s.vec FROM segments s"
        if where:
            sql += f" JOIN documents d ON d.id = s.doc_id WHERE s.vec IS NOT NULL AND {where}"
        else:
            sql += " WHERE s.vec IS NOT NULL"
        ids: list[int] = []
        blobs: list[bytes] = []
        for sid, blob in self.pg.execute(sql + " ORDER BY s.id", params):
            ids.append(int(sid))
            blobs.append(bytes(blob))
        return ids, blobs

    def pending_vectors(self, after: int, limit: int) -> list[SegmentRow]:
        """Segments without a vector and id > ``after``, in id order."""
        ids = [
            int(r[0])
            for r in self.pg.execute(
                "SELECT id FROM segments WHERE id > %s AND vec IS NULL ORDER BY id "
                "LIMIT %s",
                (after, limit),
            )
        ]
        found = self.segments_by_id(ids)
        return [found[i] for i in ids if i in found]

    def set_vectors(self, ids: Sequence[int], blobs: Sequence[bytes]) -> None:
        """Store each segment's vector blob."""
        with self.pg.cursor() as cur:
            cur.executemany(
                "UPDATE segments SET vec = %s WHERE id = %s",
                list(zip(blobs, ids, strict=True)),
            )

    def segments_by_id(self, ids: Sequence[int]) -> dict[int, SegmentRow]:
        """Segments for the given ids.

        Inside a transaction the texts of their documents are read too, in
        one more statement: the search side reads them next (snippets,
        fragments), one ``body()`` round trip per document otherwise.
        """
        if not ids:
            return {}
        rows = self._segment_rows("s.id = ANY(?)", (list(ids),))
        if self._depth:
            self._prefetch_bodies({row.doc_id for row in rows})
        return {row.id: row for row in rows}

    def _prefetch_bodies(self, doc_ids: Iterable[int]) -> None:
        missing = [i for i in doc_ids if i not in self._bodies]
        if not missing:
            return
        if len(self._bodies) + len(missing) > 256:
            self._bodies.clear()
        for doc_id, blob in self.pg.execute(
            "SELECT id, body FROM documents WHERE id = ANY(%s)", (missing,)
        ):
            self._bodies[int(doc_id)] = zlib.decompress(blob).decode("utf-8")

    def count_segments(self) -> int:
        """Number of segments in the index (``vocab`` totals: no table scan)."""
        return self._stats()[1]
