"""The Store's rows of roots, documents, segments and skipped files (issue #18).

A mixin of ``Store`` (``sqlite.py``): the statements that write and read a
document and its segments and list documents; skipped files are in
``skips.py``, counts and facets in ``counts.py`` (#49).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.store import maintenance
from docindex.store._sql import (
    ALL_DOCS,
    Section,
    chunks,
    compress_body,
    decode_section,
    decode_sections,
    delete_doc_counts,
    facet_rows,
    filter_sql,
    insert_doc_terms,
    path_ranges,
)
from docindex.store.counts import CountRows
from docindex.store.doccounts import SLOT_BITS, body_counts, doc_terms
from docindex.store.records import (
    SEGMENT_COLUMNS,
    DocFilter,
    Fingerprint,
    SegmentRow,
    StoredDocument,
)
from docindex.store.skips import SkipRows

if TYPE_CHECKING:
    from docindex.store.encoding import NewDocument

FTS_HASHSIZE = 16 * 1024 * 1024
_INSERT_SEGMENT = (
    f"INSERT INTO segments (id, doc_id, {', '.join(SEGMENT_COLUMNS)}, vec) "
    f"VALUES ({', '.join('?' * (len(SEGMENT_COLUMNS) + 3))})"
)


class DocumentRows(SkipRows, CountRows):
    """Roots, documents, segments; listings (skipped files: ``SkipRows``,
    counts and facets: ``CountRows``)."""

    conn: sqlite3.Connection
    path: Path
    outdated: bool
    _bodies: dict[int, str]
    _bodies_version: tuple[int, int] | None
    _sections: dict[int, list[Section]]
    _sections_version: tuple[int, int] | None

    if TYPE_CHECKING:

        def atomic(
            self, immediate: bool = True, savepoint: bool = True
        ) -> contextlib.AbstractContextManager[None]: ...

    # -- roots and documents -----------------------------------------------

    def root_id(self, root: str) -> int:
        """Id of a root path, inserted if new."""
        row = self.conn.execute(
            "SELECT id FROM roots WHERE path = ?", (root,)
        ).fetchone()
        if row:
            return int(row[0])
        cur = self.conn.execute("INSERT INTO roots (path) VALUES (?)", (root,))
        return int(cur.lastrowid or 0)

    def roots(self) -> dict[int, str]:
        """All roots by id."""
        return {int(i): p for i, p in self.conn.execute("SELECT id, path FROM roots")}

    def root_documents(self) -> dict[str, int]:
        """Document count per root path (roots without documents included)."""
        rows = self.conn.execute(
            "SELECT r.path, count(d.id) FROM roots r "
            "LEFT JOIN documents d ON d.root_id = r.id GROUP BY r.id"
        )
        return {str(path): int(n) for path, n in rows}

    def move_root(self, old: str, new: str) -> bool:
        """Point a root at another folder; its documents stay (paths are root-relative).

        Returns False when ``old`` is not a root. A stale, document-less row
        for ``new`` (a root removed earlier) is dropped first.
        """
        stale = (
            "path = ? AND NOT EXISTS (SELECT 1 FROM documents WHERE root_id = roots.id)"
        )
        self.conn.execute(
            f"DELETE FROM skipped WHERE root_id IN (SELECT id FROM roots WHERE {stale})",
            (new,),
        )
        self.conn.execute(f"DELETE FROM roots WHERE {stale}", (new,))
        cur = self.conn.execute("UPDATE roots SET path = ? WHERE path = ?", (new, old))
        return cur.rowcount > 0

    def delete_root(self, root: str) -> None:
        """Forget a root whose documents were removed already (and its skip records)."""
        self.conn.execute(
            "DELETE FROM skipped WHERE root_id IN (SELECT id FROM roots WHERE path = ?)",
            (root,),
        )
        self.conn.execute("DELETE FROM roots WHERE path = ?", (root,))

    def fingerprints(
        self, root_id: int, under: Sequence[str] | None = None
    ) -> dict[str, Fingerprint]:
        """rel_path -> fingerprint for every document of a root.

        ``under``: only the documents at or below these root-relative paths
        ("" is the whole root), read as ranges of the fingerprint index: a
        ``scan FILE`` on a 21,660-file root read every row (59 of its 72 ms).
        """
        out: dict[str, Fingerprint] = {}
        for where, params in path_ranges(under):
            rows = self.conn.execute(
                "SELECT rel_path, id, size, mtime_ns, hash FROM documents "
                f"WHERE root_id = ?{where}",
                (root_id, *params),
            )
            out.update(
                (rel_path, Fingerprint(doc_id, size, mtime_ns, hash_))
                for rel_path, doc_id, size, mtime_ns, hash_ in rows
            )
        return out

    def touch_document(self, doc_id: int, size: int, mtime_ns: int) -> None:
        """Record a new stat fingerprint for unchanged content."""
        self.conn.execute(
            "UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?",
            (size, mtime_ns, doc_id),
        )

    def add_document(self, doc: NewDocument) -> int:
        """Insert a document, its facets, segments, FTS rows and vectors; return its id.

        One transaction (no SAVEPOINT inside a scan's: FTS5 flushes at each,
        issue #7). The segments take consecutive ids from the next free one,
        recorded as the document's ``first_segment``.
        """
        meta = doc.meta
        rows = doc.segments.rows
        vectors = doc.vectors
        n_vec = len(vectors)
        with self.atomic(savepoint=False):
            first = self.next_segment_id()
            cur = self.conn.execute(
                "INSERT INTO documents (root_id, rel_path, kind, title, size, mtime_ns, "
                "hash, body, meta, n_segments, indexed_at, sections, first_segment, "
                "terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    doc.root_id, doc.rel_path, doc.kind, doc.title, doc.size,
                    doc.mtime_ns, doc.hash, doc.body,
                    json.dumps(meta, ensure_ascii=False) if meta else None,
                    len(rows), doc.indexed_at, doc.segments.sections, first,
                    compress_body(doc.terms) if doc.terms else None,
                ),
            )  # fmt: skip
            doc_id = int(cur.lastrowid or 0)
            if meta:
                self.conn.executemany(
                    "INSERT INTO facets (doc_id, key, value) VALUES (?, ?, ?)",
                    [(doc_id, k, v) for k, v in facet_rows(meta)],
                )
            self.conn.executemany(
                _INSERT_SEGMENT,
                [
                    (first + i, doc_id, *row, vectors[i] if i < n_vec else None)
                    for i, row in enumerate(rows)
                ],
            )
            self.conn.executemany(
                "INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)",
                [(first + i, title, body) for i, (title, body) in enumerate(doc.fts)],
            )
            counts = doc.doc_terms
            if counts is None:
                counts = doc_terms(doc.fields, body_counts(b for _, b in doc.fts))
            insert_doc_terms(self.conn, doc_id, counts)
        return doc_id

    def next_segment_id(self) -> int:
        """The id the next inserted segment gets."""
        first = self.conn.execute("SELECT coalesce(max(id), 0) + 1 FROM segments")
        return int(first.fetchone()[0])

    def tune_fts_for_bulk(self) -> None:
        """Let FTS5 buffer 16 MB of terms before it writes a segment (issue #7).

        The default (1 MB) makes a big scan write and merge many small
        segments: 16 MB saved ~30% of the FTS insert time on the shared
        corpus. The setting persists in ``fts_config``; it costs memory only
        while writing.
        """
        for table in ("fts", "doc_terms"):  # the documents' too (issues #35, #46)
            row = self.conn.execute(
                f"SELECT v FROM {table}_config WHERE k = 'hashsize'"
            ).fetchone()
            if row is None or int(row[0]) != FTS_HASHSIZE:
                self.conn.execute(
                    f"INSERT INTO {table} ({table}, rank) VALUES ('hashsize', ?)",
                    (FTS_HASHSIZE,),
                )

    def delete_document(
        self, doc_id: int, fts: Iterable[tuple[int, str, str]] = (),
        fields: tuple[str, str] | None = None,
    ) -> None:  # fmt: skip
        """Delete a document with its segments (by id range), facets and FTS rows.

        The FTS tables are contentless: their rows go by replaying the exact
        (segment id, title tokens, body tokens) they were indexed with, which
        the caller recomputes from the stored text (``fts``), and the
        document's ``fields`` (``NewDocument.fields``) for its ``doc_terms``
        rows (made from the fields and the rows' bodies, #46).
        """
        rows = list(fts)
        with self.atomic(savepoint=False):
            self.conn.executemany(
                "INSERT INTO fts (fts, rowid, title, body) VALUES ('delete', ?, ?, ?)",
                rows,
            )
            maintenance.note_deleted(self.conn, len(rows))
            if fields is not None:
                counts = doc_terms(fields, body_counts(b for _, _, b in rows))
                self.conn.executemany(
                    "INSERT INTO doc_terms (doc_terms, rowid, terms) "
                    "VALUES ('delete', ?, ?)",
                    [(doc_id << SLOT_BITS | s, t) for s, t in counts.slots],
                )
            delete_doc_counts(self.conn, doc_id)
            self._bodies.pop(doc_id, None)
            span = self._span(doc_id)
            if span is not None:
                self.conn.execute("DELETE FROM segments WHERE id >= ? AND id < ?", span)
            self.conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def segment_count(self, doc_id: int) -> int:
        """A document's number of segments (0 when it is not indexed)."""
        row = self.conn.execute(
            "SELECT n_segments FROM documents WHERE id = ?", (doc_id,)
        ).fetchone()
        return int(row[0]) if row else 0

    def _span(self, doc_id: int) -> tuple[int, int] | None:
        """The document's segment ids as a half-open range (consecutive ids)."""
        row = self.conn.execute(
            "SELECT first_segment, first_segment + n_segments FROM documents "
            "WHERE id = ?",
            (doc_id,),
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def document(self, doc_id: int) -> StoredDocument | None:
        """A document's row (without its body), or None."""
        return next(iter(self._documents("d.id = ?", (doc_id,))), None)

    def _documents(
        self, where: str, params: Sequence[object], tail: str = ""
    ) -> list[StoredDocument]:
        cur = self.conn.execute(
            "SELECT d.id, r.path, d.rel_path, d.kind, d.title, d.size, d.mtime_ns, "
            "d.hash, d.meta, d.n_segments FROM documents d JOIN roots r "
            f"ON r.id = d.root_id WHERE {where} {tail}",
            tuple(params),
        )
        return [
            StoredDocument(
                int(doc_id),
                root,
                rel_path,
                kind,
                title,
                int(size),
                int(mtime_ns),
                hash_,
                json.loads(meta) if meta else {},
                int(n_segments),
            )  # fmt: skip
            for (
                doc_id,
                root,
                rel_path,
                kind,
                title,
                size,
                mtime_ns,
                hash_,
                meta,
                n_segments,
            ) in cur  # fmt: skip
        ]

    def find_document(self, root_id: int, rel_path: str) -> int | None:
        """Id of the document at (root, rel_path), or None."""
        row = self.conn.execute(
            "SELECT id FROM documents WHERE root_id = ? AND rel_path = ?",
            (root_id, rel_path),
        ).fetchone()
        return int(row[0]) if row else None

    def body(self, doc_id: int) -> str:
        """The document's stored text (decompressed, small LRU).

        The cache is dropped whenever the index changed (this connection's or
        another's write): a re-indexed document may get its old id back, and a
        long-lived reader (``--queries``, a library user) must not pair new
        segment offsets with old text.
        """
        version = self._version()
        if version != self._bodies_version:
            self._bodies.clear()
            self._bodies_version = version
        text = self._bodies.get(doc_id)
        if text is None:
            row = self.conn.execute(
                "SELECT body FROM documents WHERE id = ?", (doc_id,)
            ).fetchone()
            text = zlib.decompress(row[0]).decode("utf-8") if row else ""
            if len(self._bodies) > 256:
                self._bodies.clear()
            self._bodies[doc_id] = text
        return text

    def segments_of(self, doc_id: int) -> list[SegmentRow]:
        """Every segment of a document in order."""
        span = self._span(doc_id)
        if span is None:
            return []
        return self._segment_rows("s.id >= ? AND s.id < ? ORDER BY s.id", span)

    def segments_by_id(self, ids: Sequence[int]) -> dict[int, SegmentRow]:
        """Segments for the given ids."""
        out: dict[int, SegmentRow] = {}
        for chunk in chunks(ids):
            marks = ",".join("?" * len(chunk))
            for row in self._segment_rows(f"s.id IN ({marks})", tuple(chunk)):
                out[row.id] = row
        return out

    def segments_by_chunk_id(self, chunk_id: str) -> list[SegmentRow]:
        """Segments whose chunk id is ``chunk_id`` (one per root at most).

        A chunk id starts with its file's ``rel_path``; the candidates are the
        documents named by the prefixes ending before each ``#`` or ``~``, and
        their segments' ids are rebuilt (issue #7: no chunk-id column).
        """
        cuts = [i for i, ch in enumerate(chunk_id) if ch in "#~"]
        prefixes = sorted({chunk_id, *(chunk_id[:i] for i in cuts)})
        marks = ",".join("?" * len(prefixes))
        docs = self.conn.execute(
            f"SELECT id FROM documents WHERE rel_path IN ({marks}) ORDER BY id",
            tuple(prefixes),
        ).fetchall()
        return [
            row
            for (doc_id,) in docs
            for row in self.segments_of(int(doc_id))
            if row.chunk_id == chunk_id
        ]

    def _segment_rows(self, where: str, params: tuple[object, ...]) -> list[SegmentRow]:
        from docindex.text.anchors import chunk_id

        sql = (
            "SELECT s.id, s.doc_id, s.id - d.first_segment, s.section, s.part, s.frag, "
            "s.start_line, s.start_line + s.lines, s.char_start, "
            "s.char_start + s.chars, s.page, s.slide, "
            "s.sheet, s.cells, r.path, d.rel_path, d.title, d.kind, d.sections, "
            "s.prose "
            "FROM segments s JOIN documents d ON d.id = s.doc_id "
            f"JOIN roots r ON r.id = d.root_id WHERE {where}"
        )
        rows = []
        parsed = self._parsed_sections()  # doc id -> its sections
        for (
            sid, doc_id, ordinal, section, part, frag, start_line, end_line,
            char_start, char_end, page, slide, sheet, cells, root, rel_path,
            title, kind, sections_blob, prose,
        ) in self.conn.execute(sql, params):  # fmt: skip
            sections = parsed.get(doc_id)
            if sections is None:
                if len(parsed) > 256:
                    parsed.clear()
                sections = parsed[doc_id] = decode_sections(sections_blob)
            heading, anchor = decode_section(sections, section)
            if frag is not None:
                cid = rel_path + frag
            else:
                cid = chunk_id(rel_path, anchor, part or 1)
            rows.append(
                SegmentRow(
                    sid,
                    doc_id,
                    ordinal,
                    cid,
                    start_line,
                    end_line,
                    char_start,
                    char_end,
                    tuple(heading),
                    page,
                    slide,
                    sheet,
                    tuple(json.loads(cells)) if cells else None,
                    root,
                    rel_path,
                    title,
                    kind,
                    prose,
                )  # fmt: skip
            )
        return rows

    def documents(
        self, only: DocFilter = ALL_DOCS, limit: int = -1, offset: int = 0
    ) -> tuple[list[StoredDocument], int]:
        """Documents ``only`` selects, by root and path, and their total count."""
        where, params = filter_sql(only)
        cond = f"WHERE {where}" if where else ""
        total = self.conn.execute(
            f"SELECT count(*) FROM documents d {cond}", params
        ).fetchone()[0]
        docs = self._documents(
            where or "1",
            (*params, limit, offset),
            "ORDER BY r.path, d.rel_path LIMIT ? OFFSET ?",
        )
        return docs, int(total)

    def documents_at(self, pairs: Sequence[tuple[str, str]]) -> list[StoredDocument]:
        """The documents at (root path, rel_path) pairs, in order; unknown pairs left out."""
        out: list[StoredDocument] = []
        for root, rel_path in pairs:
            out.extend(
                self._documents("r.path = ? AND d.rel_path = ?", (root, rel_path))
            )
        return out

    def _parsed_sections(self) -> dict[int, list[Section]]:
        """doc id -> its decoded section list, kept while the index is unchanged:
        a query reads its documents' segments several times (ranking, fragments,
        the page), and each read decompressed and parsed them again (#46)."""
        version = self._version()
        if version != self._sections_version:
            self._sections = {}
            self._sections_version = version
        return self._sections

    def _version(self) -> tuple[int, int]:
        """Changes when any connection (or this one) writes to the index."""
        return (
            int(self.conn.execute("PRAGMA data_version").fetchone()[0]),
            self.conn.total_changes,
        )
