"""``PgStore``: an open PostgreSQL index (issue #34).

The connection's life (open, schema check or migration, close), its
transactions and upkeep; the reads come from ``PgReader`` (``search.py``),
the writes from ``PgWriter`` (``writes.py``), settings and roots from
``PgRoots`` (``roots.py``), grants and standbys from ``PgAccess``
(``access.py``). Row statements shared with SQLite (``documents.DocumentRows``)
run through a small adapter (``?`` placeholders, roots seen from this host).
"""

from __future__ import annotations

import contextlib
import json
import time
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import docindex.store.postgres.batch as batch
import docindex.store.postgres.schema as schema
from docindex.errors import (
    DocindexError,
    ForeignDatabaseError,
    IndexNotFoundError,
    SchemaTooNewError,
    install_hint,
)
from docindex.store.location import ServerUrl
from docindex.store.postgres.access import PgAccess
from docindex.store.postgres.batch import Batch
from docindex.store.postgres.connection import Adapter, driver, host_name, translate
from docindex.store.postgres.filters import ALL_DOCS, filter_sql
from docindex.store.postgres.schema import one
from docindex.store.postgres.search import PgReader
from docindex.store.postgres.writes import PgWriter
from docindex.store.records import (
    DocFilter,
    SegmentRow,
    Space,
    StoredDocument,
    Vacuumed,
)

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow

    from docindex.store.interface import Index

# The writers' lock of this index (one per schema: tests keep many in one database).
WRITER_LOCK = (
    "SELECT pg_advisory_xact_lock(hashtext('docindex writer ' || current_schema()))"
)
_TABLES = ("docindex_meta", "roots", "root_paths", "root_grants", "documents",
           "segments", "facets", "skipped", "vocab", "postings")  # fmt: skip


class PgStore(PgWriter, PgAccess, PgReader):
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
                self._begin(immediate)
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
            self._roll_back(exc)
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

    def _begin(self, immediate: bool) -> None:
        """BEGIN the outermost block, with fresh per-transaction caches."""
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

    def _roll_back(self, exc: BaseException) -> None:
        """Undo the block ``exc`` left (its depth already taken off); at the
        outermost one, raise the first server error met as a DocindexError."""
        psycopg = driver()
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

    # -- reads -------------------------------------------------------------

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
