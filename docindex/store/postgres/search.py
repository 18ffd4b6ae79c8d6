"""The reading side of the PostgreSQL index (issue #34): FTS5's bm25 over the
stored term frequencies (``ranking.py``), the match counts, the vocabulary and
the vectors. ``PgStore`` (``store.py``) adds the connection, transactions,
roots and writes.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import docindex.store.postgres.ranking as ranking
from docindex.store._sql import NAME_KEYS, Section
from docindex.store.documents import DocumentRows
from docindex.store.postgres.filters import ALL_DOCS, filter_sql
from docindex.store.records import DocFilter, DocHit, DocName, SegmentRow

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow


class PgReader(DocumentRows):
    """Search and vector reads; the state is set up by ``PgStore``."""

    _conn: Connection[TupleRow]
    _depth: int  # open transactions (0: none)
    _bodies: dict[int, str]  # document texts read in this transaction
    _totals: tuple[int, int, int, int, int] | None
    # (match, filter, documents?) -> count_matches, from document_lexical
    _matches: dict[tuple[str, DocFilter, bool], int]
    # a reading transaction's (REPEATABLE READ: one snapshot) segment rows and
    # vocab figures, read once: the search side asks for them several times
    _reading: bool
    _rows: dict[int, SegmentRow]
    _freqs: dict[tuple[str, str], int]

    def _parsed_sections(self) -> dict[int, list[Section]]:
        """A new cache per read: this engine keeps segment rows per snapshot
        instead (``_rows``), and has no cheap change counter."""
        return {}

    @property
    def pg(self) -> Connection[TupleRow]:
        return self._conn

    # -- search --------------------------------------------------------------

    def _vocab(self, terms: Sequence[str], column: str) -> dict[str, int]:
        wanted = list(dict.fromkeys(terms))
        cache = self._freqs if self._depth and self._reading else {}
        missing = [t for t in wanted if (column, t) not in cache]
        if missing:
            for t in missing:
                cache[(column, t)] = 0
            for t, n in self.pg.execute(
                f"SELECT term, sum({column}) FROM vocab WHERE term = ANY(%s) "
                "GROUP BY term",
                (missing,),
            ):
                cache[(column, str(t))] = int(n or 0)
        return {t: n for t in wanted if (n := cache[(column, t)])}

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
        """(segment id, bm25) best first, as FTS5's ``bm25(fts, title_weight, 1)``.

        The postings of the query's terms (of the documents ``within`` names)
        are unnested into (segment, term, packed hits, tokens) and grouped by
        segment: ``xN`` is the segment's packed hits of term N (NULL: absent).
        """
        _, n_rows, n_tokens, _, _ = self._stats()
        tree, phrases = ranking.parse_match(match)
        counts = self.doc_freqs(phrases)
        idfs = [ranking.idf(n_rows, counts.get(p, 0)) for p in phrases]
        terms = list(dict.fromkeys(phrases))
        slot = {t: i for i, t in enumerate(terms)}
        freqs = [
            ranking.packed_freq(f"g.x{slot[p]}", [], (title_weight, 1.0))
            for p in phrases
        ]
        lateral, lparams, score, sparams = ranking.bm25_sql(
            freqs, idfs, n_tokens / max(1, n_rows), "g.len"
        )
        cond, cparams = ranking.bool_sql(
            tree, lambda term: (f"g.x{slot[term]} IS NOT NULL", [])
        )
        where, wparams = self._postings_where(only, within)
        join, jparams = "", []
        if where.startswith(" AND u.o BETWEEN"):  # ranges (document, ordinals)
            join = (
                "JOIN unnest(%s::bigint[], %s::int[], %s::int[]) w(doc, lo, hi) "
                "ON w.doc = p.doc "
            )
            jparams, wparams = wparams, []
        sql = (
            f"SELECT g.seg, {score} AS score FROM ("
            f"SELECT {self._seg_id} AS seg, max(d.lens[u.o + 1]) AS len, "
            f"{self._slots(terms)} FROM postings p {join}JOIN documents d ON "
            "d.id = p.doc CROSS JOIN LATERAL unnest(p.segs, p.hits) AS u(o, h) "
            f"WHERE p.term = ANY(%s){where} GROUP BY 1) g "
            f"CROSS JOIN LATERAL (SELECT {lateral}) v WHERE {cond} "
            "ORDER BY score DESC, g.seg LIMIT %s"
        )
        rows = self.pg.execute(
            sql,
            [*sparams, *terms, *jparams, terms, *wparams, *lparams, *cparams, limit],
        )
        return [(int(r[0]), float(r[1])) for r in rows]

    _seg_id = f"(p.doc << {ranking.SEGMENT_BITS}) + u.o"

    @staticmethod
    def _slots(terms: Sequence[str]) -> str:
        """Per-segment packed hits of each term: ``xN`` (NULL when absent)."""
        return ", ".join(
            f"max(u.h) FILTER (WHERE p.term = %s) AS x{i}" for i in range(len(terms))
        )

    @staticmethod
    def _postings_where(
        only: DocFilter, within: Sequence[int] | None = None
    ) -> tuple[str, list[object]]:
        """Conditions on postings ``p`` (and their segments ``u``) for a filter
        or a set of segment ids."""
        if within is not None:
            # The document stage passes whole documents' segments: sent as
            # (document, first ordinal, last ordinal) ranges, not id by id.
            ranges: dict[int, list[int]] = {}
            for sid in sorted(set(within)):
                doc, ordinal = divmod(sid, 1 << ranking.SEGMENT_BITS)
                span = ranges.get(doc)
                if span is None:
                    ranges[doc] = [ordinal, ordinal]
                elif span[1] == ordinal - 1:
                    span[1] = ordinal
                else:  # not one range: each id
                    return (
                        f" AND p.doc = ANY(%s) AND {PgReader._seg_id} = ANY(%s)",
                        [sorted(ranges), list(within)],
                    )
            return (
                " AND u.o BETWEEN w.lo AND w.hi",
                [list(ranges), [a for a, _ in ranges.values()],
                 [b for _, b in ranges.values()]],
            )  # fmt: skip
        where, params = filter_sql(only)
        if not where:
            return "", []
        return f" AND p.doc IN (SELECT d.id FROM documents d WHERE {where})", params

    def count_matches(
        self, match: str, only: DocFilter = ALL_DOCS, *, documents: bool = False
    ) -> int:
        """Segments (or distinct documents) matching an FTS5-syntax query among
        the documents ``only`` selects, without ranking (issue #37)."""
        known = self._matches.get((match, only, documents))
        if known is not None:
            return known
        tree, phrases = ranking.parse_match(match)
        terms = list(dict.fromkeys(phrases))
        slot = {t: i for i, t in enumerate(terms)}
        cond, cparams = ranking.bool_sql(
            tree, lambda term: (f"g.x{slot[term]} IS NOT NULL", [])
        )
        where, wparams = self._postings_where(only)
        what = "count(DISTINCT g.doc)" if documents else "count(*)"
        sql = (
            f"SELECT {what} FROM (SELECT p.doc, u.o, {self._slots(terms)} "
            "FROM postings p CROSS JOIN LATERAL unnest(p.segs, p.hits) AS u(o, h) "
            f"WHERE p.term = ANY(%s){where} GROUP BY 1, 2) g WHERE {cond}"
        )
        row = self.pg.execute(sql, [*terms, terms, *wparams, *cparams]).fetchone()
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

        One postings row per term and document holds the document's field
        hits, its body hits (summed over its segments) and its length: the
        ranking reads the ``postings_term`` index only.
        """
        n_docs, _, _, n_tokens, _ = self._stats()
        tree, phrases = ranking.parse_match(match)
        terms = list(dict.fromkeys(phrases))
        slot = {t: i for i, t in enumerate(terms)}
        counts = self.document_freqs(terms)
        idfs = [ranking.idf(n_docs, counts.get(p, 0)) for p in phrases]
        sums = ", ".join(
            f"max(p.fld) FILTER (WHERE p.term = %s) AS f{i}, "
            f"coalesce(max(p.body) FILTER (WHERE p.term = %s), 0) AS b{i}"
            for i in range(len(terms))
        )
        sums_params = [t for t in terms for _ in (0, 1)]
        # A query of terms joined by OR matches the segments counted here, so
        # their count (``count_matches``: the hits' total) comes with the
        # ranking instead of reading the postings again.
        counts_too = tree.op == "term" or (
            tree.op == "or" and all(k.op == "term" for k in tree.kids)
        )
        freqs = []
        for p in phrases:
            sql, params = ranking.packed_freq(f"a.f{slot[p]}", [], weights[:2])
            freqs.append((f"{sql} + %s::float8 * a.b{slot[p]}", [*params, weights[2]]))
        lateral, lparams, score, sparams = ranking.bm25_sql(
            freqs, idfs, n_tokens / max(1, n_docs), "a.dlen"
        )

        def present(term: str) -> tuple[str, list[object]]:
            i = slot[term]
            return f"(coalesce(a.f{i}, 0) <> 0 OR a.b{i} > 0)", []

        cond, cparams = ranking.bool_sql(tree, present)
        where, wparams = self._postings_where(only)
        # Segments holding any of the terms: a document holding several of
        # them counts the union of their segments (its rows' arrays, read for
        # those documents only: 0.02 ms each); the others their row's ``n``.
        union = (
            "coalesce(sum(CASE WHEN x.k > 1 THEN (SELECT count(DISTINCT o) FROM "
            "postings q CROSS JOIN LATERAL unnest(q.segs) o WHERE q.doc = x.doc "
            "AND q.term = ANY(%s)) END), 0)"
            if counts_too and len(terms) > 1
            else "0"
        )
        sql = (
            "WITH a AS (SELECT p.doc, max(p.dlen) AS dlen, count(*) FILTER (WHERE "
            f"p.n > 0) AS k, sum(p.n) AS n, {sums} "
            f"FROM postings p WHERE p.term = ANY(%s){where} GROUP BY p.doc), "
            f"s AS (SELECT a.doc, {score} AS score FROM a "
            f"CROSS JOIN LATERAL (SELECT {lateral}) v WHERE {cond} "
            "ORDER BY score DESC, a.doc LIMIT %s) "
            "SELECT s.doc, s.score, d.first_segment, d.n_segments, t.segs, t.docs "
            "FROM s JOIN documents d ON d.id = s.doc CROSS JOIN (SELECT "
            f"coalesce(sum(x.n) FILTER (WHERE x.k < 2), 0) + {union} AS segs, "
            "count(*) FILTER (WHERE x.n > 0) AS docs FROM a x) t "
            "ORDER BY s.score DESC, s.doc"
        )
        params = [*sums_params, terms, *wparams, *sparams, *lparams, *cparams,
                  limit, *([terms] if union != "0" else [])]  # fmt: skip
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
            f"WHERE f.doc_id = d.id AND f.key IN {NAME_KEYS}) "
            "FROM documents d WHERE d.id = ANY(%s)",
            (list(doc_ids),),
        )
        return {int(i): DocName(str(p), t, tuple(k)) for i, p, t, k in rows}

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

    def all_vectors(
        self, only: DocFilter = ALL_DOCS, *, first_only: bool = False
    ) -> tuple[list[int], list[bytes]]:
        """Every stored vector (of the documents ``only`` selects); with
        ``first_only`` each document's first segment's alone (issue #47: a
        per-document provider reads 2k rows, not a scan of 84k)."""
        where, params = filter_sql(only)
        join = "s.id = d.first_segment" if first_only else "d.id = s.doc_id"
        sql = "SELECT s.id, s.vec FROM segments s"
        if where or first_only:
            sql += f" JOIN documents d ON {join} WHERE s.vec IS NOT NULL"
            sql += f" AND {where}" if where else ""
        else:
            sql += " WHERE s.vec IS NOT NULL"
        ids: list[int] = []
        blobs: list[bytes] = []
        for sid, blob in self.pg.execute(sql + " ORDER BY s.id", params):
            ids.append(int(sid))
            blobs.append(bytes(blob))
        return ids, blobs

    def pending_vectors(
        self, after: int, limit: int, *, first_only: bool = False
    ) -> list[SegmentRow]:
        """Segments without a vector and id > ``after``, in id order;
        ``first_only``: each document's first segment (issue #47)."""
        sql = (
            "SELECT s.id FROM documents d JOIN segments s ON s.id = d.first_segment "
            "WHERE s.id > %s AND s.vec IS NULL AND d.n_segments > 0 "
            "ORDER BY s.id LIMIT %s"
            if first_only
            else "SELECT id FROM segments WHERE id > %s AND vec IS NULL ORDER BY id "
            "LIMIT %s"
        )
        ids = [int(r[0]) for r in self.pg.execute(sql, (after, limit))]
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
        cache = self._rows if self._depth and self._reading else {}
        missing = [i for i in dict.fromkeys(ids) if i not in cache]
        if missing:
            rows = self._segment_rows("s.id = ANY(?)", (missing,))
            if self._depth:
                self._prefetch_bodies({row.doc_id for row in rows})
            if len(cache) + len(rows) > 4096:
                cache.clear()
            cache.update((row.id, row) for row in rows)
            found = {row.id: row for row in rows}
        else:
            found = {}
        return {i: row for i in ids if (row := cache.get(i) or found.get(i))}

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
