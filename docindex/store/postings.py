"""The Store's search side: FTS5 ranking, document fields, vectors (issues #3, #21).

A mixin of ``Store`` (``sqlite.py``): every statement a query runs.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from docindex.store._sql import (
    ALL_DOCS,
    MAX_VARS,
    MAX_WITHIN,
    NAME_KEYS,
    chunks,
    filter_sql,
)
from docindex.store.doccounts import (
    SLOT_BITS,
    TermHits,
    bm25_scores,
    decode,
    fts5_terms,
)
from docindex.store.matchexpr import Node, parse_match
from docindex.store.records import DocFilter, DocHit, DocName, SegmentRow

if TYPE_CHECKING:
    from docindex.store.halves import Halves


class PostingRows:
    """Ranked FTS5 matches, document fields and frequencies, vectors."""

    conn: sqlite3.Connection
    halves: Halves | None  # reading commands on a big index and 2+ cores
    _lengths: tuple[tuple[int, int], dict[int, int]] | None

    if TYPE_CHECKING:

        def segments_by_id(self, ids: Sequence[int]) -> dict[int, SegmentRow]: ...

        def _version(self) -> tuple[int, int]: ...

    # -- search ------------------------------------------------------------

    def lexical(
        self, match: str, limit: int, title_weight: float,
        only: DocFilter = ALL_DOCS, within: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:  # fmt: skip
        """(segment id, bm25) best first; bm25 is negated so higher is better.

        ``match`` is an FTS5 query (callers quote user text); ``only`` keeps
        the segments of the documents it selects; ``within`` (segment ids)
        keeps only those. FTS5 then computes bm25 for those rows alone: the
        per-row bm25 is most of a broad query's cost (issue #21).
        """
        if within is not None and len(within) <= MAX_WITHIN:
            # ``+rowid``: a plain ``rowid IN`` would make FTS5 run the whole
            # MATCH once per id; the unary plus leaves it a row filter.
            halves = self._halves_for(len(within))
            if halves is not None:
                ids = sorted(within)
                lower, upper = ids[: len(ids) // 2], ids[len(ids) // 2 :]
                sql = (
                    "SELECT rowid, -bm25(fts, 1.0, ?) FROM fts WHERE fts MATCH ? "
                    "AND rowid BETWEEN ? AND ? AND +rowid IN "
                    f"({','.join('?' * len(upper))}) "
                    "ORDER BY bm25(fts, 1.0, ?), rowid LIMIT ?"
                )
                # ``lower`` padded to ``upper``'s length (one statement text)
                pad = [lower[-1]] * (len(upper) - len(lower))
                a, b = halves.run(
                    self.conn, sql,
                    (title_weight, match, lower[0], lower[-1], *lower, *pad,
                     title_weight, limit),
                    (title_weight, match, upper[0], upper[-1], *upper, title_weight,
                     limit),
                )  # fmt: skip
                return _merged(a, b, limit)
            marks = ",".join("?" * len(within))
            cur = self.conn.execute(
                "SELECT rowid, -bm25(fts, 1.0, ?) FROM fts WHERE fts MATCH ? "
                f"AND +rowid IN ({marks}) ORDER BY bm25(fts, 1.0, ?), rowid LIMIT ?",
                (title_weight, match, *within, title_weight, limit),
            )
            return [(int(r[0]), float(r[1])) for r in cur]
        where, params = filter_sql(only)
        if where:
            sql = (
                "SELECT f.rowid, -bm25(fts, 1.0, ?) AS s FROM fts f "
                "JOIN segments s ON s.id = f.rowid JOIN documents d ON d.id = s.doc_id "
                f"WHERE fts MATCH ? AND {where} ORDER BY bm25(fts, 1.0, ?), f.rowid "
                "LIMIT ?"
            )
        else:
            sql = (
                "SELECT rowid, -bm25(fts, 1.0, ?) FROM fts WHERE fts MATCH ? "
                "ORDER BY bm25(fts, 1.0, ?), rowid LIMIT ?"
            )
        cur = self.conn.execute(
            sql, (title_weight, match, *params, title_weight, limit)
        )
        return [(int(r[0]), float(r[1])) for r in cur]

    def vectors(self, ids: Sequence[int]) -> tuple[list[int], list[bytes]]:
        """Vector blobs of the given segments (those that have one)."""
        out_ids: list[int] = []
        blobs: list[bytes] = []
        for chunk in chunks(ids):
            marks = ",".join("?" * len(chunk))
            for sid, blob in self.conn.execute(
                f"SELECT id, vec FROM segments WHERE id IN ({marks}) AND vec IS NOT NULL",
                tuple(chunk),
            ):
                out_ids.append(int(sid))
                blobs.append(blob)
        return out_ids, blobs

    def pending_vectors(
        self, after: int, limit: int, *, first_only: bool = False
    ) -> list[SegmentRow]:
        """Segments without a vector and id > ``after``, in id order (issue #9);
        ``first_only``: each document's first segment (issue #47)."""
        sql = (
            "SELECT s.id FROM documents d JOIN segments s ON s.id = d.first_segment "
            "WHERE s.id > ? AND s.vec IS NULL AND d.n_segments > 0 "
            "ORDER BY s.id LIMIT ?"
            if first_only
            else "SELECT id FROM segments WHERE id > ? AND vec IS NULL ORDER BY id "
            "LIMIT ?"
        )
        ids = [int(r[0]) for r in self.conn.execute(sql, (after, limit))]
        found = self.segments_by_id(ids)
        return [found[i] for i in ids if i in found]

    def set_vectors(self, ids: Sequence[int], blobs: Sequence[bytes]) -> None:
        """Store each segment's vector blob (``ids[i]`` gets ``blobs[i]``)."""
        self.conn.executemany(
            "UPDATE segments SET vec = ? WHERE id = ?", zip(blobs, ids, strict=True)
        )

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
        for sid, blob in self.conn.execute(sql, params):
            ids.append(int(sid))
            blobs.append(blob)
        return ids, blobs

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Number of segments containing each term; absent terms are left out."""
        return self._row_counts("fts", terms)

    def _row_counts(self, table: str, terms: Sequence[str]) -> dict[str, int]:
        """Rows of FTS5 ``table`` holding each term, as its fts5vocab 'row' table's ``doc``.

        Counted by ``count(*) ... MATCH '"term"'`` rather than read from the
        vocabulary table: both walk the term's postings, but fts5vocab also
        decodes every position to count instances (its ``cnt``), which costs
        ~1.5x as much (20 terms on the 10x corpus: 7.4 -> 4.9 ms). The
        tokenizer writes terms ``unicode61`` keeps whole, so the phrase is
        the term (tests compare the two counts over a whole vocabulary).
        """
        sql = f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"
        out: dict[str, int] = {}
        for term in dict.fromkeys(terms):
            (n,) = self.conn.execute(
                sql, ('"' + term.replace('"', '""') + '"',)
            ).fetchone()
            if n:
                out[term] = int(n)
        return out

    def count_matches(
        self, match: str, only: DocFilter = ALL_DOCS, *, documents: bool = False
    ) -> int:
        """Segments (or, with ``documents``, distinct documents) matching an
        FTS5 query among the documents ``only`` selects (issue #37: ``total``).

        No bm25 is computed: counting walks the postings alone.
        """
        where, params = filter_sql(only)
        if not where and not documents:
            sql = "SELECT count(*) FROM fts WHERE fts MATCH ?"
        else:
            what = "count(DISTINCT s.doc_id)" if documents else "count(*)"
            sql = (
                f"SELECT {what} FROM fts f JOIN segments s ON s.id = f.rowid "
                "JOIN documents d ON d.id = s.doc_id WHERE fts MATCH ?"
                + (f" AND {where}" if where else "")
            )
        (n,) = self.conn.execute(sql, (match, *params)).fetchone()
        return int(n)

    def vocabulary(self, first: str, last: str) -> list[tuple[str, int]]:
        """(term, segments holding it) for index terms ``first <= term < last``
        (issue #37: "did you mean"). fts5vocab answers a term range from its
        b-tree without reading the rest of the vocabulary."""
        cur = self.conn.execute(
            "SELECT term, doc FROM fts_vocab WHERE term >= ? AND term < ?",
            (first, last),
        )
        return [(str(t), int(n)) for t, n in cur]

    # -- documents as FTS rows with fields (issue #21) ---------------------

    def document_lexical(
        self,
        match: str,
        limit: int,
        weights: tuple[float, float, float],
        only: DocFilter = ALL_DOCS,
    ) -> list[DocHit]:
        """The best documents for an FTS5 query, scored as ``bm25()`` scored them
        over a ``(title, heads, body)`` FTS5 row with column ``weights``.

        Issue #46: the documents holding the query's terms and their exact
        counts come from ``doc_terms`` (``doccounts``), and ``bm25_scores``
        computes FTS5's score from them. Returns DocHits (id, score, segment
        id range) best first, ties by id.
        """
        if self.halves is not None:
            self.halves.warm()  # for the segments' ranking that follows
        tree, phrases = parse_match(match)
        hits = {t: self._term_hits(t) for t in dict.fromkeys(phrases)}
        cand = _matching(tree, hits)
        where, params = filter_sql(only)
        if where and cand:
            cand &= {
                int(r[0])
                for r in self.conn.execute(
                    f"SELECT d.id FROM documents d WHERE {where}", params
                )
            }
        if not cand:
            return []
        n_rows, total, _ = self._doc_totals()
        scores = bm25_scores(
            n_rows, total, self._doc_lengths(cand, n_rows),
            [hits[t] for t in phrases], weights,
        )  # fmt: skip
        # ties by id, as ``ORDER BY score DESC, rowid``
        best = sorted(scores.items(), key=_best_first)[:limit]
        ids = [d for d, _ in best]
        spans = {
            int(r[0]): (int(r[1]), int(r[2]))
            for chunk in chunks(ids)
            for r in self.conn.execute(
                "SELECT id, first_segment, n_segments FROM documents WHERE id IN "
                f"({','.join('?' * len(chunk))})",
                tuple(chunk),
            )
        }
        return [DocHit(d, s, *spans[d]) for d, s in best if d in spans]

    def _term_hits(self, term: str) -> TermHits:
        """The documents holding ``term`` -> its (title, heads, body) counts.

        FTS5 read a query term its tokenizer splits (``fts5_terms``) as a
        phrase of its pieces; without positions, the documents holding every
        piece stand in for it, each field counting its rarest piece (the only
        case not exactly as before, #46; our tokenizer makes none with
        ``cjk_ngram`` up to 2, and no query of the judged sets has one).
        """
        pieces = fts5_terms([term]).get(term, (term,))
        if len(pieces) == 1:
            return self._piece_hits(pieces[0])
        parts = [self._piece_hits(p) for p in pieces]
        common = set(parts[0]).intersection(*parts[1:]) if parts else set()
        return {
            d: (
                min(p[d][0] for p in parts),
                min(p[d][1] for p in parts),
                min(p[d][2] for p in parts),
            )
            for d in common
        }

    def _piece_hits(self, term: str) -> TermHits:
        """One FTS5 token's documents and counts: its ``doc_terms`` row ids'
        slots added up (``doccounts.decode``), whole counts where escaped."""
        rows = self.conn.execute(
            "SELECT rowid FROM doc_terms WHERE doc_terms MATCH ?", (_phrase(term),)
        ).fetchall()
        out, escaped = decode(rows)
        for doc in escaped:
            whole = self.conn.execute(
                "SELECT title, heads, body FROM doc_term_counts "
                "WHERE doc_id = ? AND term = ?",
                (doc, term),
            ).fetchone()
            if whole is not None:
                out[doc] = (int(whole[0]), int(whole[1]), int(whole[2]))
        return out

    def _doc_totals(self) -> tuple[int, int, int]:
        """(documents, their terms in all fields, their body terms)."""
        n, total, body = self.conn.execute(
            "SELECT documents, length, body FROM doc_totals"
        ).fetchone()
        return int(n), int(total), int(body)

    def _doc_lengths(self, docs: set[int], n_rows: int) -> dict[int, int]:
        """Each of ``docs``'s terms in all fields: looked up for a few, else from
        every document's, kept while the index is unchanged (a batch of queries,
        the MCP server and ``related`` read them once)."""
        if len(docs) <= MAX_VARS and len(docs) * 10 <= n_rows:
            marks = ",".join("?" * len(docs))
            return dict(
                self.conn.execute(
                    f"SELECT id, length FROM doc_lengths WHERE id IN ({marks})",
                    tuple(docs),
                )
            )
        version = self._version()
        cached = self._lengths
        if cached is None or cached[0] != version:
            rows = self.conn.execute("SELECT id, length FROM doc_lengths")
            cached = self._lengths = (version, dict(rows))
        every = cached[1]
        return {d: every[d] for d in docs if d in every}

    def _halves_for(self, n_ids: int) -> Halves | None:
        """The two-halves helper when a ranking over ``n_ids`` ids can be
        split: the store has one and a read transaction is open."""
        if self.halves is None or n_ids < 2 or not self.conn.in_transaction:
            return None
        return self.halves

    def row_maker(self) -> None:
        """None: FTS5 counts and stores the terms itself, in C."""
        return None

    def document_names(self, doc_ids: Sequence[int]) -> dict[int, DocName]:
        """doc id -> its path, title and front-matter keywords (and tags)."""
        out: dict[int, DocName] = {}
        for chunk in chunks(list(doc_ids)):
            marks = ",".join("?" * len(chunk))
            for doc_id, rel_path, title, keywords in self.conn.execute(
                "SELECT d.id, d.rel_path, d.title, ("
                "SELECT group_concat(f.value, char(31)) FROM facets f WHERE "
                f"f.doc_id = d.id AND f.key IN {NAME_KEYS}) "
                f"FROM documents d WHERE d.id IN ({marks})",
                tuple(chunk),
            ):
                named = tuple(keywords.split("\x1f")) if keywords else ()
                out[int(doc_id)] = DocName(rel_path, title, named)
        return out

    def document_terms(self, doc_ids: Sequence[int]) -> dict[int, str]:
        """doc id -> its stored salient terms (``NewDocument.terms``).

        Stored compressed (``compress_body``) since issue #35 (2.8 -> 1.4 MB
        on the shared corpus); rows written before are plain text.
        """
        out: dict[int, str] = {}
        for chunk in chunks(list(doc_ids)):
            marks = ",".join("?" * len(chunk))
            for doc_id, terms in self.conn.execute(
                f"SELECT id, terms FROM documents WHERE id IN ({marks}) "
                "AND terms IS NOT NULL",
                tuple(chunk),
            ):
                out[int(doc_id)] = (
                    zlib.decompress(terms).decode("utf-8")
                    if isinstance(terms, bytes)
                    else str(terms)
                )
        return out

    def document_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Number of documents holding each term; absent terms are left out."""
        out: dict[str, int] = {}
        for term in dict.fromkeys(terms):
            pieces = fts5_terms([term]).get(term, (term,))
            if len(pieces) == 1:
                (n,) = self.conn.execute(
                    f"SELECT count(DISTINCT rowid >> {SLOT_BITS}) FROM doc_terms "
                    "WHERE doc_terms MATCH ?",
                    (_phrase(pieces[0]),),
                ).fetchone()
            else:
                n = len(self._term_hits(term))
            if n:
                out[term] = int(n)
        return out

    def document_stats(self) -> tuple[int, float]:
        """(documents, mean body terms per document) from ``doc_lengths``."""
        n_docs, _, body = self._doc_totals()
        return n_docs, body / max(1, n_docs)

    def doc_ids_of(self, segment_ids: Sequence[int]) -> dict[int, int]:
        """segment id -> doc id."""
        out: dict[int, int] = {}
        for chunk in chunks(list(segment_ids)):
            marks = ",".join("?" * len(chunk))
            for sid, doc_id in self.conn.execute(
                f"SELECT id, doc_id FROM segments WHERE id IN ({marks})", tuple(chunk)
            ):
                out[int(sid)] = int(doc_id)
        return out


def _best_first(item: tuple[int, float]) -> tuple[float, int]:
    return -item[1], item[0]


def _phrase(term: str) -> str:
    """One term as an FTS5 phrase."""
    return '"' + term.replace('"', '""') + '"'


def _matching(tree: Node, hits: dict[str, TermHits]) -> set[int]:
    """The documents a MATCH tree selects, by the terms they hold."""
    if tree.op == "term":
        return set(hits[tree.term])
    kids = [_matching(k, hits) for k in tree.kids]
    if tree.op == "not":
        return kids[0] - kids[1]
    if tree.op == "or":
        return set().union(*kids)
    return kids[0].intersection(*kids[1:])


def _merged(
    a: list[tuple[int, float]], b: list[tuple[int, float]], limit: int
) -> list[tuple[int, float]]:
    """Two halves' (id, score) rows as the whole statement orders them: score
    descending, then id, the first ``limit``."""
    rows = [(int(r[0]), float(r[1])) for r in (*a, *b)]
    rows.sort(key=lambda r: (-r[1], r[0]))
    return rows[:limit]
