"""The PostgreSQL index: a team's shared index on a server (issue #34).

``PgStore`` implements ``store.interface.Index`` on a PostgreSQL database,
selected by a ``postgresql://`` URL (``store.location``). This module holds
the connection's life, transactions, roots and writes (segment-id blocks
from a sequence, upserts, COPY); ``search.py`` the reads (FTS5's bm25 over
stored term frequencies, ``ranking.py``), ``connection.py`` the driver and
its errors, ``filters.py`` the document filters, ``schema.py`` the
migrations. Row statements shared with SQLite (``documents.DocumentRows``)
run through a small adapter (``?`` placeholders, roots seen from this host).

Roots belong to the index: each has a name (its folder's name when it was
added) and a path per host (``root_paths``), so two machines that mount the
same share at different places index and query one set of documents. A root
that a host has no path for shows the path another host gave it.
"""

from __future__ import annotations

import contextlib
import json
import time
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from docindex.errors import (
    DocindexError,
    ForeignDatabaseError,
    IndexNotFoundError,
    SchemaTooNewError,
    install_hint,
)
from docindex.store._sql import facet_rows
from docindex.store.location import ServerUrl
from docindex.store.postgres import batch, ranking, schema
from docindex.store.postgres.access import PgAccess
from docindex.store.postgres.batch import Batch
from docindex.store.postgres.connection import (
    READ_ONLY_HINT,
    Adapter,
    driver,
    host_name,
    scratch_schema,
    translate,
)
from docindex.store.postgres.filters import ALL_DOCS, filter_sql, glob_regex
from docindex.store.postgres.schema import one
from docindex.store.postgres.search import PgReader
from docindex.store.records import (
    DOC_MARK,
    DocFilter,
    SegmentRow,
    Space,
    StoredDocument,
    Vacuumed,
)

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow

    from docindex.store.encoding import NewDocument
    from docindex.store.interface import Index, RowMaker

# A document's segments have consecutive ids (``first_segment``); here they are
# its id shifted left by this many bits plus their ordinal, so concurrent
# writers never share a block and no lock is needed (16.7 M segments per
# document; ``max_segments`` caps a whole index far below that).
SEGMENT_BITS = ranking.SEGMENT_BITS
# The writers' lock of this index (one per schema: tests keep many in one database).
WRITER_LOCK = (
    "SELECT pg_advisory_xact_lock(hashtext('docindex writer ' || current_schema()))"
)
__all__ = ["READ_ONLY_HINT", "PgStore", "filter_sql", "glob_regex", "scratch_schema",
           "translate"]  # fmt: skip
_TABLES = ("docindex_meta", "roots", "root_paths", "root_grants", "documents",
           "segments", "facets", "skipped", "vocab", "postings")  # fmt: skip


class PgStore(PgAccess, PgReader):
    """An open PostgreSQL index. Always close it (or use it as a context manager)."""

    def __init__(
        self, pg: Connection[TupleRow], location: ServerUrl, host: str
    ) -> None:
        from psycopg import sql

        self._conn = pg
        self.location = location
        self.path = location  # type: ignore[assignment]  # named in messages only
        self.host = host
        here = sql.Literal(host).as_string(pg)
        self.roots_here = (
            "(SELECT x.id, coalesce(h.path, x.path) AS path FROM roots x "
            f"LEFT JOIN root_paths h ON h.root_id = x.id AND h.host = {here})"
        )
        self.conn = Adapter(lambda: self.pg, self.roots_here)  # type: ignore[assignment]
        self.halves = None
        self.outdated = False
        self.role = self.schema = ""  # set by ``open``: named in GRANT hints
        self.replica = False  # a hot standby: reads only (set by ``open``, #48)
        self._writing = False  # in a writing transaction (``atomic``)
        # the tables' row-level security applies to this role: COPY is
        # refused, rows go through a temporary table (``batch.copying``, #48)
        self._staged = False
        self._staged_known = False
        self._depth = 0
        self._bodies: dict[int, str] = {}
        self._bodies_version = None
        self._totals: tuple[int, int, int, int, int] | None = None
        # vocab changes of this transaction: segments and documents per
        # (root, term): a reader's counts are its roots' (issue #48)
        self._segs: Counter[tuple[int, str]] = Counter()
        self._docs: Counter[tuple[int, str]] = Counter()
        self._failed: BaseException | None = None  # first error of this transaction
        self._batch = Batch()  # documents added, not yet sent (``pg``)
        self._sender = batch.Sender()  # a full batch being sent
        self._ids: list[int] = []  # document ids taken from the sequence, unused
        self._added: set[int] = set()  # documents added in this transaction
        self._id_block = 1
        # (match, filter, documents?) -> count_matches, from document_lexical
        self._matches: dict[tuple[str, DocFilter, bool], int] = {}
        self._reading = False  # in a reading transaction: the caches below hold
        self._rows: dict[int, SegmentRow] = {}  # segments read in it
        self._freqs: dict[tuple[str, str], int] = {}  # (column, term) -> vocab

    @property
    def pg(self) -> Connection[TupleRow]:
        """The connection, once the documents held back (``add_document``)
        are written: every statement after them sees them."""
        self._send_held()
        return self._conn

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

    # -- lifecycle ---------------------------------------------------------

    @classmethod
    def open(
        cls, location: ServerUrl, *, create: bool = False, readonly: bool = False,
        busy_timeout: float = 10.0, host: str = "",
    ) -> PgStore:  # fmt: skip
        """Connect, check the schema, and with ``create`` make or migrate it.

        Raises:
            IndexNotFoundError: no docindex schema and ``create`` is False.
            SchemaTooNewError: written by a newer docindex.
            ForeignDatabaseError: another application's ``documents`` table.
        """
        psycopg = driver()
        try:
            pg = psycopg.connect(
                location.url, autocommit=True, application_name="docindex",
                connect_timeout=max(1, int(busy_timeout)),
            )  # fmt: skip
        except psycopg.Error as exc:
            raise translate(exc, location) from None
        role = schema_name = "<unknown>"
        try:
            row = pg.execute(
                "SELECT set_config('lock_timeout', %s, false), current_user, "
                "coalesce(current_schema(), 'public'), pg_is_in_recovery()",
                (f"{int(busy_timeout * 1000)}ms",),
            ).fetchone()
            _, role, schema_name, in_recovery = one(row)
            if readonly:
                # a reading command never writes: on a primary too (#48)
                pg.execute("SET default_transaction_read_only = on")
            store = cls(pg, location, host or host_name())
            store.role, store.schema = str(role), str(schema_name)
            store.replica = bool(in_recovery)
            store._setup(create and not readonly)
        except BaseException as exc:
            pg.close()
            if isinstance(exc, psycopg.Error):
                # what fails before a write transaction only read (#44)
                raise translate(exc, location, reading=True, role=str(role),
                                schema=str(schema_name)) from None  # fmt: skip
            raise
        return store

    def _translate(self, exc: BaseException) -> DocindexError:
        """``translate`` with this connection's role and schema, and whether the
        failed statement ran in a writing transaction."""
        return translate(exc, self.location, reading=not self._writing,
                         role=self.role, schema=self.schema)  # fmt: skip

    def _setup(self, may_migrate: bool) -> None:
        if may_migrate and self.replica:  # a writing command, on a standby (#48)
            standby = self.standby()
            if standby is not None:
                raise standby.error(self.location)
            self.replica = False  # promoted meanwhile
        version = schema.version(self.pg)
        if version > schema.SCHEMA_VERSION:
            raise SchemaTooNewError(
                f"index {self.location} was written by a newer docindex (schema "
                f"{version} > {schema.SCHEMA_VERSION}); upgrade docindex: "
                + install_hint("postgres", upgrade=True)
            )
        if version == schema.SCHEMA_VERSION:
            if may_migrate:
                self.index_postings()
            return
        if schema.foreign(self.pg):
            raise ForeignDatabaseError(
                f"{self.location} holds another application's tables; use another "
                "database or schema (?options=-csearch_path=NAME)"
            )
        if not may_migrate:
            if version == 0:
                raise IndexNotFoundError(
                    f"no index at {self.location}; run `docindex scan DIR --db URL` "
                    "first"
                )
            self.outdated = True
            return
        if "m001_initial" not in schema.migrate(self.pg):
            self.index_postings()

    def index_postings(self) -> bool:
        """Build the postings btrees when they are missing; whether it built them.

        The process that creates an index builds them after its first scan
        (``tidy_fts``; ``schema.m003``); any later writer's open, ``tidy_fts``
        and ``vacuum`` build them when that scan was killed. Skipped inside a
        transaction, while another writer builds them or holds the table (it
        builds them when it finishes), and for a role that may not (not the
        tables' owner).
        """
        psycopg = driver()
        if self._depth or self.replica:
            return False
        try:
            row = self.pg.execute("SELECT to_regclass('postings_doc')").fetchone()
            if one(row)[0] is not None:
                return False
            with self.atomic():
                got = self.pg.execute(
                    "SELECT pg_try_advisory_xact_lock(%s)", (schema.LOCK_KEY + 1,)
                ).fetchone()
                if not one(got)[0]:
                    return False
                # another writer's open scan holds the table: do not wait for it
                self.pg.execute("SET LOCAL lock_timeout = '200ms'")
                # the sort of 1.5 M rows in memory: 2.7 -> 2.1 s on the corpus
                self.pg.execute("SET LOCAL maintenance_work_mem = '256MB'")
                for statement in schema.POSTINGS_INDEXES:
                    self.pg.execute(statement)
            # Statistics for the planner now; the visibility map that makes the
            # document stage's scan index-only comes with autovacuum (a VACUUM
            # here would rewrite every new page once more, ~1.5 s on the corpus).
            self.pg.execute("ANALYZE postings")
        except DocindexError:
            return False
        except psycopg.Error:
            return False
        return True

    def notices(self) -> list[str]:
        """The postings btrees missing (a first scan stopped before they were
        built) when this role could not build them: not the tables' owner."""
        row = self.pg.execute(
            "SELECT to_regclass('postings_term') IS NULL, (SELECT r.rolname "
            "FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
            "WHERE c.oid = to_regclass('postings'))"
        ).fetchone()
        missing, owner = one(row)
        if not missing:
            return []
        return [
            "the index's postings btrees are missing (its first scan was stopped "
            "before they were built): queries and edits read whole tables until "
            f"the owner of its tables (role {owner}) runs `docindex vacuum` on it"
        ]

    def close(self) -> None:
        """Close the connection."""
        self._sender.drop()
        self._conn.close()

    def __enter__(self) -> PgStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ------------------------------------------------------

    @contextlib.contextmanager
    def bulk_journal(self) -> Iterator[bool]:
        """No journal switch on a server: the WAL is the server's business."""
        yield False

    @contextlib.contextmanager
    def atomic(self, immediate: bool = True, savepoint: bool = True) -> Iterator[None]:
        """One transaction, nesting as SAVEPOINTs; rolls back on any exception.

        A reading transaction (``immediate=False``) is REPEATABLE READ: one
        snapshot for all its statements, as a query needs (issue #8). A
        writing one is READ COMMITTED: concurrent writers of other roots
        never fail on a serialization conflict.
        """
        psycopg = driver()
        if immediate and self.replica and self._depth == 0:
            # before the writers' lock: a standby's locks guard nothing (#48)
            standby = self.standby()
            if standby is not None:
                raise standby.error(self.location)
            self.replica = False  # promoted since it was opened
        # ``savepoint=False`` is a SQLite speed-up (issue #7); here every
        # nested block is a SAVEPOINT, so one document's failed statement
        # rolls back that document alone, as a failed statement does in
        # SQLite, instead of aborting the scan's whole transaction.
        del savepoint
        try:
            if self._depth == 0:
                self._bodies.clear()
                self._matches.clear()
                self._rows.clear()
                self._freqs.clear()
                self._reading = not immediate
                self._writing = immediate
                self._totals = None
                self._id_block = 1
                self._added.clear()
                self.pg.execute(
                    "BEGIN" if immediate else "BEGIN ISOLATION LEVEL REPEATABLE READ"
                )
                if immediate:
                    # One writer at a time, as in SQLite: a second one waits up
                    # to the busy timeout (lock_timeout), then "index is busy";
                    # no row or table lock can then stop a scan halfway (#44).
                    self.pg.execute(WRITER_LOCK)
                    if not self._staged_known:
                        row = self.pg.execute(
                            "SELECT row_security_active('postings')"
                        ).fetchone()
                        self._staged, self._staged_known = bool(one(row)[0]), True
            else:
                self.pg.execute(f"SAVEPOINT sp{self._depth}")
        except psycopg.Error as exc:
            if self._depth == 0:  # BEGIN ran, the writers' lock did not come
                with contextlib.suppress(psycopg.Error):
                    self.pg.execute("ROLLBACK")
            raise self._translate(exc) from None
        self._depth += 1
        try:
            yield
        except BaseException as exc:
            self._depth -= 1
            # held back since this block began: a SAVEPOINT writes them first
            self._batch = Batch()
            self._sender.drop()
            with contextlib.suppress(psycopg.Error):
                if self._depth == 0:
                    self.pg.execute("ROLLBACK")
                else:
                    self.pg.execute(f"ROLLBACK TO sp{self._depth}")
                    self.pg.execute(f"RELEASE sp{self._depth}")
            if isinstance(exc, psycopg.Error) and self._failed is None:
                self._failed = exc  # the cause, not "transaction is aborted" later
            if self._depth == 0:
                self._segs.clear()
                self._docs.clear()
                self._added.clear()
                first, self._failed = self._failed, None
                if isinstance(exc, psycopg.Error):
                    raise self._translate(first or exc) from None
            raise
        try:
            if self._depth == 1:
                # Still inside the transaction: a clash the flush meets deletes
                # the other copy in a savepoint, not in a transaction of its own
                # that would commit this one halfway (issue #44).
                self._flush_vocab()
                self.pg.execute("COMMIT")
                self._writing = False
            else:
                self.pg.execute(f"RELEASE sp{self._depth - 1}")
        except BaseException as exc:
            self._depth -= 1
            self._segs.clear()
            self._docs.clear()
            self._batch = Batch()
            self._sender.drop()
            with contextlib.suppress(psycopg.Error):
                self.pg.execute("ROLLBACK")
            if isinstance(exc, psycopg.Error):
                raise self._translate(exc) from None
            raise
        self._depth -= 1

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

    # -- meta --------------------------------------------------------------

    def get_meta(self, key: str) -> Any:
        """JSON-decoded meta value, or None.

        What names roots is kept with the roots, whose rows a reader sees
        only for the roots it may read (issue #48): the settings' ``roots``
        are this host's roots, ``root_pins`` their ``root_paths`` pins.
        """
        if key == "root_pins":
            return self._pins()
        row = self.pg.execute(
            "SELECT value FROM docindex_meta WHERE key = %s", (key,)
        ).fetchone()
        value = json.loads(row[0]) if row else None
        if key == "settings" and isinstance(value, dict):
            value = dict(sorted({**value, "roots": self.local_roots()}.items()))
        return value

    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON-encodable meta value (roots stay in their rows: ``get_meta``)."""
        if key == "root_pins":
            self._set_pins(dict(value or {}))
            return
        if key == "settings" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != "roots"}
        self.pg.execute(
            "INSERT INTO docindex_meta (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value, sort_keys=True)),
        )

    def _pins(self) -> dict[str, list[int]]:
        rows = self.pg.execute(
            "SELECT path, pin FROM root_paths WHERE host = %s AND pin IS NOT NULL",
            (self.host,),
        )
        return {str(path): [int(v) for v in pin] for path, pin in rows}

    def _set_pins(self, pins: dict[str, Any]) -> None:
        """This host's roots' pins (issue #33), in their ``root_paths`` rows."""
        for path, pin in [*pins.items(), *((p, None) for p in self._pins()
                                            if p not in pins)]:  # fmt: skip
            self.pg.execute(
                "UPDATE root_paths SET pin = %s WHERE host = %s AND path = %s",
                (None if pin is None else [int(v) for v in pin], self.host, path),
            )

    # -- roots (a name, a path per host) -----------------------------------

    def root_id(self, root: str) -> int:
        """Id of the root at ``root`` on this host, added if new.

        A new path joins a root of the same folder name that this host has no
        path for yet (the same share, mounted elsewhere); otherwise a new root
        is made, named after its folder (with a number when taken).
        """
        row = self.pg.execute(
            "SELECT root_id FROM root_paths WHERE host = %s AND path = %s",
            (self.host, root),
        ).fetchone()
        if row:
            return int(row[0])
        name = PurePosixPath(root.replace("\\", "/")).name or root
        row = self.pg.execute(
            "SELECT r.id FROM roots r WHERE r.name = %s AND NOT EXISTS (SELECT 1 "
            "FROM root_paths p WHERE p.root_id = r.id AND p.host = %s)",
            (name, self.host),
        ).fetchone()
        if row is None:
            for n in range(1, 1000):
                candidate = name if n == 1 else f"{name}-{n}"
                row = self.pg.execute(
                    "INSERT INTO roots (name, path) VALUES (%s, %s) "
                    "ON CONFLICT (name) DO NOTHING RETURNING id",
                    (candidate, root),
                ).fetchone()
                if row is not None:
                    break
            assert row is not None
        self.pg.execute(
            "INSERT INTO root_paths (root_id, host, path) VALUES (%s, %s, %s)",
            (row[0], self.host, root),
        )
        return int(row[0])

    def roots(self) -> dict[int, str]:
        """All roots by id, each at its path on this host (else another's)."""
        rows = self.pg.execute(f"SELECT id, path FROM {self.roots_here} r ORDER BY id")
        return {int(i): str(p) for i, p in rows}

    def local_roots(self) -> list[str]:
        """The paths of the roots this host has scanned (its remembered roots)."""
        rows = self.pg.execute(
            "SELECT path FROM root_paths WHERE host = %s ORDER BY root_id", (self.host,)
        )
        return [str(r[0]) for r in rows]

    def root_names(self) -> dict[str, list[tuple[str, str]]]:
        """Root name -> (host, path) of every host that scanned it."""
        out: dict[str, list[tuple[str, str]]] = {}
        for name, host, path in self.pg.execute(
            "SELECT r.name, p.host, p.path FROM roots r LEFT JOIN root_paths p "
            "ON p.root_id = r.id ORDER BY r.name, p.host"
        ):
            out.setdefault(str(name), [])
            if host is not None:
                out[str(name)].append((str(host), str(path)))
        return out

    def root_documents(self) -> dict[str, int]:
        """Document count per root path (roots without documents included)."""
        rows = self.pg.execute(
            f"SELECT r.path, count(d.id) FROM {self.roots_here} r "
            "LEFT JOIN documents d ON d.root_id = r.id GROUP BY r.id, r.path"
        )
        return {str(path): int(n) for path, n in rows}

    def move_root(self, old: str, new: str) -> bool:
        """Give a root another path on this host; False when ``old`` is unknown."""
        rid = {p: i for i, p in self.roots().items()}.get(old)
        if rid is None:
            return False
        self.pg.execute(
            "DELETE FROM root_paths WHERE host = %s AND path = %s AND root_id <> %s",
            (self.host, new, rid),
        )
        self.pg.execute(
            "INSERT INTO root_paths (root_id, host, path) VALUES (%s, %s, %s) "
            "ON CONFLICT (root_id, host) DO UPDATE SET path = excluded.path",
            (rid, self.host, new),
        )
        self.pg.execute("UPDATE roots SET path = %s WHERE id = %s", (new, rid))
        return True

    def delete_root(self, root: str) -> None:
        """Forget a root whose documents were removed already (and its skips)."""
        rid = {p: i for i, p in self.roots().items()}.get(root)
        if rid is None:
            return
        self.pg.execute("DELETE FROM skipped WHERE root_id = %s", (rid,))
        self.pg.execute("DELETE FROM roots WHERE id = %s", (rid,))

    def clear_roots(self, roots: Sequence[str]) -> None:
        """Delete every document and skip record of these roots (``reindex --full``)."""
        ids = [i for i, p in self.roots().items() if p in set(roots)]
        docs = self.pg.execute(
            "SELECT id FROM documents WHERE root_id = ANY(%s)", (ids,)
        ).fetchall()
        for (doc_id,) in docs:
            self.delete_document(int(doc_id))
        self.pg.execute("DELETE FROM skipped WHERE root_id = ANY(%s)", (ids,))

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

    def body(self, doc_id: int) -> str:
        """The document's stored text (cached within one transaction)."""
        text = self._bodies.get(doc_id)
        if text is None:
            row = self.pg.execute(
                "SELECT body FROM documents WHERE id = %s", (doc_id,)
            ).fetchone()
            text = zlib.decompress(row[0]).decode("utf-8") if row else ""
            if len(self._bodies) > 256:
                self._bodies.clear()
            if self._depth:
                self._bodies[doc_id] = text
        return text

    def _version(self) -> tuple[int, int]:
        return (0, 0)

    def documents(
        self, only: DocFilter = ALL_DOCS, limit: int = -1, offset: int = 0
    ) -> tuple[list[StoredDocument], int]:
        """Documents ``only`` selects, by root and path, and their total count."""
        where, params = filter_sql(only)
        cond = f"WHERE {where}" if where else ""
        total = one(
            self.pg.execute(
                f"SELECT count(*) FROM documents d {cond}", params
            ).fetchone()
        )[0]
        cur = self.pg.execute(
            "SELECT d.id, r.path, d.rel_path, d.kind, d.title, d.size, d.mtime_ns, "
            f"d.hash, d.meta, d.n_segments FROM documents d JOIN {self.roots_here} r "
            f"ON r.id = d.root_id {cond} ORDER BY r.path, d.rel_path "
            "LIMIT %s OFFSET %s",
            [*params, None if limit < 0 else limit, offset],
        )
        docs = [
            StoredDocument(int(i), root, rel, kind, title, int(size), int(mtime),
                           hash_, json.loads(meta) if meta else {}, int(n))
            for i, root, rel, kind, title, size, mtime, hash_, meta, n in cur
        ]  # fmt: skip
        return docs, int(total)

    # -- maintenance ---------------------------------------------------------

    def reclaim(self, min_free: float = 0.01) -> int:
        """Nothing to give back by hand: autovacuum reuses the space."""
        return 0

    def clear_fts(self) -> None:
        """Nothing to clear: postings live in their rows and go with them."""

    def restore_fts(
        self, doc_id: int, rows: Sequence[tuple[int, str, str]], fields: tuple[str, str]
    ) -> None:
        """Nothing to restore (``clear_fts`` cleared nothing)."""

    def tidy_fts(self) -> bool:
        """Fold ``vocab``'s deltas when many transactions added some; whether it did."""
        if self._depth:
            return False
        self.index_postings()
        row = self.pg.execute(
            "SELECT count(*) > 64 FROM (SELECT 1 FROM vocab WHERE term = ' rows' "
            "LIMIT 65) x"
        ).fetchone()
        if not one(row)[0]:
            return False
        self.compact_vocab()
        return True

    def _bytes(self) -> int:
        row = self.pg.execute(
            "SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0) "
            "FROM unnest(%s::text[]) t",
            (list(_TABLES),),
        ).fetchone()
        return int(one(row)[0])

    def space(self) -> Space:
        """The tables' bytes (with indexes and TOAST); PostgreSQL reuses its free space."""
        total = self._bytes()
        live = self.count_segments()
        return Space(total, 0, live, 0, 0)

    def vacuum(self) -> Vacuumed:
        """VACUUM (ANALYZE) the index's tables (``docindex vacuum``)."""
        if self._depth:
            raise DocindexError("vacuum cannot run inside a transaction")
        started = time.perf_counter()
        before = self._bytes()
        self.index_postings()
        self.compact_vocab()
        try:
            for table in _TABLES:
                self.pg.execute(f"VACUUM (ANALYZE) {table}")
        except driver().Error as exc:
            raise self._translate(exc) from None
        return Vacuumed(before, self._bytes(), (time.perf_counter() - started) * 1000)

    def checkpoint(self) -> None:
        """Nothing to do: a commit is durable on the server."""


def _implements_index(store: PgStore) -> Index:
    """Never called: mypy checks here that ``PgStore`` implements ``Index``."""
    checked: Index = store
    return checked
