"""The writing side of the PostgreSQL index (issue #34): documents held back
and sent in batches (``batch.py``), ids from a sequence, the ``vocab`` deltas
of a transaction, deletes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import docindex.store.postgres.batch as batch
import docindex.store.postgres.ranking as ranking
from docindex.store._sql import facet_rows
from docindex.store.postgres.batch import Batch
from docindex.store.postgres.roots import PgRoots
from docindex.store.postgres.schema import one
from docindex.store.records import DOC_MARK

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from psycopg import Connection
    from psycopg.rows import TupleRow

    from docindex.store.encoding import NewDocument
    from docindex.store.interface import RowMaker

# A document's segments have consecutive ids (``first_segment``); here they are
# its id shifted left by this many bits plus their ordinal, so concurrent
# writers never share a block and no lock is needed (16.7 M segments per
# document; ``max_segments`` caps a whole index far below that).
SEGMENT_BITS = ranking.SEGMENT_BITS


class PgWriter(PgRoots):
    """Adds and deletes documents; the state is set up by ``PgStore``."""

    _conn: Connection[TupleRow]
    _depth: int  # open transactions (0: none)
    _staged: bool  # row-level security applies: rows go through a temporary table
    _bodies: dict[int, str]  # document texts read in this transaction
    _segs: Counter[tuple[int, str]]  # vocab changes: segments per (root, term)
    _docs: Counter[tuple[int, str]]  # ... and documents
    _batch: Batch  # documents added, not yet sent
    _sender: batch.Sender  # a full batch being sent
    _ids: list[int]  # document ids taken from the sequence, unused
    _added: set[int]  # documents added in this transaction
    _id_block: int

    if TYPE_CHECKING:

        def atomic(
            self, immediate: bool = True, savepoint: bool = True
        ) -> AbstractContextManager[None]: ...

    def _send_held(self) -> None:
        """Write the documents ``add_document`` held back (``batch``), after
        the batch in flight (``Sender``)."""
        self._finish_behind()
        held, self._batch = self._batch, Batch()
        if held:
            held.insert_documents(self._conn)
            self._finish(held)

    def _finish_behind(self) -> None:
        """Wait for the batch in flight, and finish it if it met a clash."""
        behind = self._sender.wait()
        if behind:
            self._finish(behind)

    def _finish(self, held: Batch) -> None:
        """The rest of a batch whose ``documents`` rows are in."""
        for values in held.clashed:
            self._insert_again(values)
        held.write_rows(self._conn, self._staged)

    def _send_behind(self) -> None:
        """Write the full batch from a thread; the ids of the next are taken
        first, as nothing else may use the connection meanwhile."""
        self._finish_behind()
        if len(self._ids) < batch.MAX_DOCUMENTS:
            self._take_ids(batch.MAX_DOCUMENTS)
        held, self._batch = self._batch, Batch()
        self._sender.start(held, self._conn, self._staged)

    def _count(self, root: int, term: str, segs: int, docs: int) -> None:
        self._segs[(root, term)] += segs
        self._docs[(root, term)] += docs

    def _flush_vocab(self) -> None:
        """Append this transaction's term and total changes to ``vocab``.

        The terms of the documents it added are counted by the server from
        their postings, in one aggregate: counting them in the writer and
        sending the counts from the workers cost the scan about 2 s of CPU
        on the corpus (issue #34). A document added and deleted again, or
        rolled back to a savepoint, has no postings left to count.
        """
        self._send_held()  # may replace another writer's copy: counted first
        if self._added:
            self._conn.execute(
                "INSERT INTO vocab (root_id, term, segs, docs) SELECT root_id, "
                "term, sum(n), count(*) FILTER (WHERE fld <> 0 OR body > 0) "
                "FROM postings WHERE doc = ANY(%s::bigint[]) GROUP BY root_id, term",
                (sorted(self._added),),
            )
            self._added.clear()
        segs, docs = self._segs, self._docs
        rows = [(*k, segs[k], docs[k]) for k in segs.keys() | docs.keys()]
        rows = [row for row in rows if row[2] or row[3]]
        segs.clear()
        docs.clear()
        if not rows:
            return
        with (
            self.pg.cursor() as cur,
            batch.copying(
                cur, "COPY vocab (root_id, term, segs, docs) FROM STDIN", self._staged
            ) as copy,
        ):
            for row in rows:
                copy.write_row(row)

    def compact_vocab(self) -> None:
        """Fold ``vocab``'s delta rows into one per term (``vacuum``, after scans)."""
        with self.atomic():
            self.pg.execute(
                "WITH gone AS (DELETE FROM vocab RETURNING root_id, term, segs, "
                "docs) INSERT INTO vocab (root_id, term, segs, docs) SELECT "
                "root_id, term, sum(segs), sum(docs) FROM gone GROUP BY root_id, "
                "term HAVING sum(segs) <> 0 OR sum(docs) <> 0"
            )

    # -- documents -----------------------------------------------------------

    def next_segment_id(self) -> int:
        """The first segment id of the next document (a bound, not a promise)."""
        row = self.pg.execute("SELECT last_value + 1 FROM documents_id_seq").fetchone()
        return int(one(row)[0]) << SEGMENT_BITS

    def row_maker(self) -> RowMaker:
        """``ranking.document_rows``: the scan's workers count a document's
        terms and render its postings, not this one writer (issue #34)."""
        return ranking.document_rows

    def add_document(self, doc: NewDocument) -> int:
        """Add a document, its facets, segments and postings; return its id.

        Inside a transaction the rows are held back (``batch``) until the
        next other statement or the commit. An upsert on (root, path): when
        another writer committed the same file meanwhile, its row is
        replaced, so a file is never indexed twice.
        """
        if not self._depth:
            with self.atomic():
                return self.add_document(doc)
        key = (doc.root_id, doc.rel_path)
        if key in self._batch.paths or key in self._sender.paths:
            self._send_held()  # its earlier copy goes first
        meta = doc.meta
        rows = doc.segments.rows
        vectors = doc.vectors
        n_vec = len(vectors)
        # The scan's workers made these (``row_maker``); an import or a
        # reindex of stored text makes them here (issue #34).
        made = doc.rows or ranking.document_rows(doc.fts, doc.fields)
        doc_len, body_len, seg_len = made.doc_len, made.body_len, made.seg_len
        doc_id = self._next_id()
        first = doc_id << SEGMENT_BITS
        self._added.add(doc_id)  # its terms are counted at the commit
        root = doc.root_id
        self._count(root, " rows", len(rows), 1)
        self._count(root, " tokens", seg_len, doc_len)
        self._count(root, " body", 0, body_len)
        held = self._batch
        held.documents.append((doc_id,
            doc.root_id, doc.rel_path, doc.kind, doc.title, doc.size,
            doc.mtime_ns, doc.hash, doc.body,
            json.dumps(meta, ensure_ascii=False) if meta else None,
            len(rows), doc.indexed_at, doc.segments.sections, first,
            doc.terms or None, doc_len, body_len, seg_len,
            list(made.seg_lens),
        ))  # fmt: skip
        held.paths.add(key)
        if meta:
            held.facets.extend((doc_id, root, k, v) for k, v in facet_rows(meta))
        lens = made.seg_lens
        held.segments.extend(
            (first + i, doc_id, *seg, vectors[i] if i < n_vec else None,
             lens[i] if i < len(lens) else 0, root)
            for i, seg in enumerate(rows)
        )  # fmt: skip
        lines = made.lines.replace(DOC_MARK, f"\t{doc_id}\t{root}\t")
        if lines:
            held.postings.append(lines)
        held.size += len(lines) + len(doc.body or b"") + 1024 * n_vec
        if held.full:
            self._send_behind()  # bounds the memory held
        return doc_id

    def _next_id(self) -> int:
        """A new document id; taken from the sequence in blocks that double
        within a transaction (one round trip for many documents)."""
        if not self._ids:
            self._finish_behind()  # the connection must be free
            self._take_ids(self._id_block)
            self._id_block = min(self._id_block * 2, batch.MAX_DOCUMENTS)
        return self._ids.pop()

    def _take_ids(self, n: int) -> None:
        got = self._conn.execute(
            "SELECT nextval('documents_id_seq') FROM generate_series(1, %s)", (n,)
        ).fetchall()
        self._ids = sorted((int(r[0]) for r in got), reverse=True) + self._ids

    def _insert_again(self, values: tuple[object, ...]) -> None:
        """Insert a held-back document whose (root, path) another writer
        committed meanwhile: its copy goes first (``Batch.insert_documents``)."""
        other = self._conn.execute(
            "SELECT id FROM documents WHERE root_id = %s AND rel_path = %s",
            values[1:3],
        ).fetchone()
        if other is not None:
            self.delete_document(int(other[0]))
        one(self._conn.execute(batch.INSERT_DOCUMENT, values).fetchone())

    def _uncount_stored(self, doc_id: int) -> None:
        """Count a stored document out of ``vocab`` (before deleting it)."""
        row = self.pg.execute(
            "SELECT n_segments, seg_len, len, body_len, root_id FROM documents "
            "WHERE id = %s",
            (doc_id,),
        ).fetchone()
        if row is None:
            return
        n_segs, seg_len, doc_len, body_len, root = row
        if doc_id in self._added:  # its terms are not counted yet
            self._added.discard(doc_id)
        else:
            for term, segs, in_doc in self.pg.execute(
                "SELECT term, n, fld <> 0 OR body > 0 FROM postings WHERE doc = %s",
                (doc_id,),
            ):
                self._count(root, term, -int(segs), -1 if in_doc else 0)
        self._count(root, " rows", -int(n_segs), -1)
        self._count(root, " tokens", -int(seg_len), -int(doc_len))
        self._count(root, " body", 0, -int(body_len))

    def delete_document(
        self, doc_id: int, fts: Iterable[tuple[int, str, str]] = (),
        fields: tuple[str, str] | None = None,
    ) -> None:  # fmt: skip
        """Delete a document, its postings, segments and facets."""
        del fts, fields  # the postings hold the document's terms
        with self.atomic(savepoint=False):
            self._bodies.pop(doc_id, None)
            self._uncount_stored(doc_id)
            self.pg.execute("DELETE FROM postings WHERE doc = %s", (doc_id,))
            self.pg.execute("DELETE FROM documents WHERE id = %s", (doc_id,))

    def clear_roots(self, roots: Sequence[str]) -> None:
        """Delete every document and skip record of these roots (``reindex --full``)."""
        ids = [i for i, p in self.roots().items() if p in set(roots)]
        docs = self.pg.execute(
            "SELECT id FROM documents WHERE root_id = ANY(%s)", (ids,)
        ).fetchall()
        for (doc_id,) in docs:
            self.delete_document(int(doc_id))
        self.pg.execute("DELETE FROM skipped WHERE root_id = ANY(%s)", (ids,))
