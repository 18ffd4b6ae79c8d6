"""The SQLite index: connection, pragmas, transactions, settings and upkeep.

``Store`` joins this file's part with two mixins that hold the rest of its
SQL: ``documents.py`` (rows of roots, documents, segments, skipped files)
and ``postings.py`` (what a query runs); ``_sql.py`` has the pieces they
share, ``sqlitefile.py`` what concerns the file itself (its place and
permissions, SQLite's errors as messages; #49).

The index is one SQLite file in WAL mode. Document text is stored once,
zlib-compressed, in ``documents.body``; segments keep character offsets into
it. FTS5 is contentless over pre-tokenised text (see ``tokenize.py``), so a
segment's FTS row is deleted by replaying its tokens, which ``indexer.py``
recomputes from the stored text.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docindex.errors import (
    DocindexError,
    ForeignDatabaseError,
    IndexNotFoundError,
    SchemaTooNewError,
    install_hint,
)
from docindex.store import maintenance, migrations
from docindex.store._sql import Section, insert_doc_terms
from docindex.store.doccounts import body_counts, doc_terms
from docindex.store.documents import DocumentRows
from docindex.store.postings import PostingRows
from docindex.store.records import Space, Vacuumed
from docindex.store.sqlitefile import (
    check_place,
    make_private,
    read_only_query,
    roll_back_hot_journal,
    translate,
)

if TYPE_CHECKING:
    from docindex.store.halves import Halves

WAL_LIMIT_BYTES = 8 << 20  # 2x the -wal of SQLite's auto-checkpoint (1,000 pages)
MMAP_BYTES = 1 << 30  # Store.open(mapped=True): a 10x corpus index is 0.8 GB


class Store(DocumentRows, PostingRows):
    """An open index. Always close it (or use it as a context manager).

    Its statements live in three parts: this file (opening, transactions,
    settings, upkeep), ``documents.py`` (rows of documents, segments, skipped
    files) and ``postings.py`` (what a query runs).
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self.halves: Halves | None = None
        self._depth = 0
        self._bodies: dict[int, str] = {}
        self._bodies_version: tuple[int, int] | None = None
        self._sections: dict[int, list[Section]] = {}  # decoded, per version
        self._sections_version: tuple[int, int] | None = None
        self._lengths: tuple[tuple[int, int], dict[int, int]] | None = None
        self.tightened: list[str] = []  # files made private on open (#33)
        self.outdated = False  # set by _setup: read-only and before the last migration
        self.immutable = False  # opened with immutable=1 (see read_only_query)
        self.replica = False  # a file has no replicas (#48: PostgreSQL's do)

    def root_grants(self) -> dict[str, tuple[str, ...]]:
        """None: a SQLite file has no roles; whoever may read it reads every
        root (issue #48)."""
        return {}

    # -- lifecycle ---------------------------------------------------------

    @classmethod
    def open(
        cls, path: Path, *, create: bool = False, busy_timeout: float = 10.0,
        readonly: bool = False, mapped: bool = False, private: bool = True,
    ) -> Store:  # fmt: skip
        """Open (and with ``create`` make and migrate) the index at ``path``.

        ``mapped`` reads the file through a memory map (``MMAP_BYTES``): a
        fresh process's first query then reads the pages the OS already
        caches instead of copying them into SQLite's own cache (issue #24).
        Queries only: a scan's RSS would count the mapped pages it touches.

        Raises:
            IndexNotFoundError: no file and ``create`` is False.
            IndexCorruptError, ForeignDatabaseError, SchemaTooNewError: the file
                is not a usable docindex index.
        """
        exists = check_place(path, create=create, readonly=readonly)
        # Tightened by writers only (scan, reindex, watch: #33); a reading
        # command leaves a deliberately shared index as it found it (#38).
        tightened = (
            make_private(path, create=create)
            if private and create and not readonly
            else []
        )
        if readonly and exists:
            roll_back_hot_journal(path, busy_timeout)
        try:
            uri = path.resolve().as_uri() + (
                read_only_query(path) if readonly else "?mode=rwc"
            )
            conn = sqlite3.connect(
                uri, uri=True, isolation_level=None, timeout=busy_timeout,
                check_same_thread=False,
            )  # fmt: skip
        except sqlite3.Error as exc:
            raise translate(exc, path) from exc
        store = cls(conn, path)
        store.tightened = tightened
        if tightened:
            # One line on stderr (logging's last-resort handler when the
            # caller set none): the index was readable by other users.
            import logging  # a warning once: every query would import it (#46)

            logging.getLogger("docindex").warning(
                "docindex: made %s private (owner only; it was readable by "
                "other users)",
                ", ".join(tightened),
            )
        store.immutable = "immutable=1" in uri
        try:
            store._setup(create and not readonly, readonly)
            if mapped:
                conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
                store._split_rankings()
        except BaseException:
            conn.close()
            raise
        return store

    def _split_rankings(self) -> None:
        """A reading command on a big index and 2+ cores ranks in two halves."""
        from docindex.store import halves

        if self.outdated or halves.cores() < 2:
            return
        try:
            n_docs = self.document_stats()[0]  # one row (``doc_totals``)
        except sqlite3.Error:
            return
        if n_docs >= halves.SPLIT_MIN_DOCS:
            self.halves = halves.Halves(
                self.path.resolve().as_uri() + read_only_query(self.path),
                [f"PRAGMA mmap_size = {MMAP_BYTES}", "PRAGMA cache_size = -32000"],
            )

    def _setup(self, may_migrate: bool, readonly: bool = False) -> None:
        conn = self.conn
        self.outdated = False
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
            ).fetchone()[0]
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from exc
        if app_id not in (0, migrations.APPLICATION_ID) or (app_id == 0 and tables):
            raise ForeignDatabaseError(
                f"{self.path} is an SQLite database of another application; "
                "use another --db"
            )
        if version > migrations.SCHEMA_VERSION:
            raise SchemaTooNewError(
                f"{self.path} was written by a newer docindex (schema {version} > "
                f"{migrations.SCHEMA_VERSION}); upgrade docindex: "
                + install_hint(upgrade=True)
            )
        try:
            if version == 0 and not tables and may_migrate:
                # Only a new, empty file can take this (before WAL writes its
                # header): FTS5 merges free many pages in a big scan, and
                # reclaim() gives them back.
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            if readonly:
                pass  # nothing to set up: the pragmas below only matter to writers
            elif conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                try:
                    conn.execute("PRAGMA journal_mode = WAL")
                except sqlite3.OperationalError:
                    # Another connection is writing a first scan with a
                    # rollback journal (bulk_journal) and will switch back;
                    # until then this one waits for locks as usual.
                    pass
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA cache_size = -32000")
            conn.execute("PRAGMA temp_store = MEMORY")
            # A -wal that a big write grew is cut back when it is next reset,
            # not kept at its largest while a watcher holds the index open.
            conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")
            if version < migrations.SCHEMA_VERSION:
                if not may_migrate and version == 0:
                    raise IndexNotFoundError(f"{self.path} is not initialised")
                if readonly:
                    # Its meta (roots, settings) can still be read; the first
                    # writable open migrates it.
                    self.outdated = True
                    return
                if migrations.migrate(conn):
                    # m007 (#46) drops a table of ~16 MB a corpus copy: give the
                    # pages back now rather than at the next scan that changes
                    # something.
                    self.reclaim()
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from exc

    def close(self) -> None:
        """Close the connection (checkpointing is left to SQLite's last close)."""
        if self.halves is not None:
            self.halves.close()
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ------------------------------------------------------

    @contextlib.contextmanager
    def bulk_journal(self) -> Iterator[bool]:
        """Write a first scan's pages once: a rollback journal while the index is empty.

        In WAL mode every page goes to the ``-wal`` file and the checkpoint at
        commit copies it into the database (and syncs it): ~0.3 s of a 60 MB
        first scan, on its critical path (issue #7). An index without
        documents has nothing for readers to see, so its first scan uses a
        rollback journal instead (a killed scan is still rolled back, from
        the journal, to the empty index) and goes back to WAL when it ends.
        Yields whether it switched; it does not when another connection has
        the index open (the switch would have to wait for it).
        """
        conn = self.conn
        switched = False
        if self._depth == 0 and not conn.in_transaction:
            try:
                empty = conn.execute("SELECT 1 FROM documents LIMIT 1").fetchone()
                if empty is None:
                    with self._no_busy_wait():
                        mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()
                    switched = mode[0] == "delete"
            except sqlite3.OperationalError:
                switched = False  # busy: stay in WAL
        try:
            yield switched
        finally:
            if switched:
                self._back_to_wal()

    def _back_to_wal(self, attempts: int = 100) -> None:
        """Switch to WAL, retrying while a reader holds a lock (about 2 s at most).

        The switch needs an exclusive lock. Each attempt runs with no busy
        wait and fails at once while a reader is mid-read; short retries get
        in between reads (a reader that opened during the scan may also be
        trying to switch). If every attempt fails, the next open (``_setup``)
        switches instead.
        """
        import time

        with self._no_busy_wait():
            for _ in range(attempts):
                with contextlib.suppress(sqlite3.OperationalError):
                    mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()
                    if mode[0] == "wal":
                        return
                time.sleep(0.02)

    @contextlib.contextmanager
    def _no_busy_wait(self) -> Iterator[None]:
        """Fail at once on a lock instead of waiting; the busy timeout comes back."""
        conn = self.conn
        timeout = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            yield
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(timeout)}")

    @contextlib.contextmanager
    def atomic(self, immediate: bool = True, savepoint: bool = True) -> Iterator[None]:
        """One transaction, nesting as SAVEPOINTs; rolls back on any exception.

        With ``savepoint=False`` a nested block opens no SAVEPOINT and an error
        inside it rolls back the enclosing transaction (the exception goes up
        through it). The indexer uses that per document: FTS5 flushes its
        pending terms to a new on-disk segment at every SAVEPOINT, which made
        a scan ~2x slower (issue #7).
        """
        conn = self.conn
        if self._depth and not savepoint:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        if self._depth == 0:
            try:
                conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            except sqlite3.OperationalError as exc:
                raise translate(exc, self.path) from exc
        else:
            conn.execute(f"SAVEPOINT sp{self._depth}")
        self._depth += 1
        try:
            yield
        except BaseException as exc:
            self._depth -= 1
            # SQLITE_FULL, IOERR or NOMEM may already have rolled the whole
            # transaction back; a second ROLLBACK would then hide the real
            # error behind "no transaction is active" (issue #8).
            with contextlib.suppress(sqlite3.Error):
                if conn.in_transaction:
                    if self._depth == 0:
                        conn.execute("ROLLBACK")
                    else:
                        conn.execute(f"ROLLBACK TO sp{self._depth}")
                        conn.execute(f"RELEASE sp{self._depth}")
            if self._depth == 0 and isinstance(exc, sqlite3.Error):
                raise translate(exc, self.path) from exc
            raise
        self._depth -= 1
        if self._depth == 0:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                raise translate(exc, self.path) from exc
        else:
            conn.execute(f"RELEASE sp{self._depth}")

    # -- meta --------------------------------------------------------------

    def get_meta(self, key: str) -> Any:
        """JSON-decoded meta value, or None."""
        row = self.conn.execute(
            "SELECT value FROM meta WHERE key = ?", (key,)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def set_meta(self, key: str, value: object) -> None:
        """Store a JSON-encodable meta value."""
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value, sort_keys=True)),
        )

    def reclaim(self, min_free: float = 0.01) -> int:
        """Return free pages to the file system when over ``min_free`` of the file.

        FTS5 merges its segments as a scan grows, leaving up to ~15% of a
        freshly built index as free pages (issue #7: index size). Indexes
        created with ``auto_vacuum = INCREMENTAL`` (all since schema 2) give
        them back here; older ones keep them for reuse. Returns the pages freed.
        """
        if self._depth or self.conn.in_transaction:
            return 0  # executescript would commit the caller's transaction
        c = self.conn.execute
        if int(c("PRAGMA auto_vacuum").fetchone()[0]) != 2:
            return 0
        free = int(c("PRAGMA freelist_count").fetchone()[0])
        if free <= min_free * int(c("PRAGMA page_count").fetchone()[0]):
            return 0
        try:
            # executescript steps the pragma to the end; execute() frees one page.
            self.conn.executescript("PRAGMA incremental_vacuum;")
        except sqlite3.OperationalError:  # busy or full: the pages stay for reuse
            return 0
        return free

    def clear_fts(self) -> None:
        """Empty the FTS table at once: every row is about to be written again.

        A caller that keeps a document must give its rows back
        (``restore_fts``); ``delete_document`` then takes no rows to replay.
        """
        maintenance.clear_fts(self.conn)

    def restore_fts(
        self, doc_id: int, rows: Sequence[tuple[int, str, str]], fields: tuple[str, str]
    ) -> None:
        """Insert a document's FTS rows (segment id, title tokens, body tokens) and
        its stored term counts (``fields`` and the rows' bodies) after ``clear_fts``."""
        self.conn.executemany(
            "INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)", rows
        )
        insert_doc_terms(
            self.conn, doc_id, doc_terms(fields, body_counts(b for _, _, b in rows))
        )

    def notices(self) -> list[str]:
        """None: every repair of a SQLite index is made by the next writer."""
        return []

    def tidy_fts(self) -> bool:
        """Merge the FTS index whole when enough deleted rows piled up (issue #22).

        Runs in its own transaction (no-op inside one); returns whether it merged.
        """
        if self._depth or self.conn.in_transaction:
            return False
        if not maintenance.merge_due(self.conn):
            return False
        with self.atomic():
            maintenance.merge_fts(self.conn)
        return True

    def space(self) -> Space:
        """Where the file's bytes go and how many ``vacuum`` would give back."""
        return maintenance.space(self.conn, self.path)

    def vacuum(self) -> Vacuumed:
        """Merge the FTS index and shrink the file (``docindex vacuum``).

        Raises:
            IndexBusyError: a scan or a watcher is writing the index.
        """
        if self._depth or self.conn.in_transaction:
            raise DocindexError("vacuum cannot run inside a transaction")
        try:
            return maintenance.vacuum(self.conn, self.path)
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from exc

    def checkpoint(self) -> None:
        """Fold the WAL back into the database file."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
