"""The SQLite index: connection, pragmas, transactions and every SQL statement.

The index is one SQLite file in WAL mode. Document text is stored once,
zlib-compressed, in ``documents.body``; segments keep character offsets into
it. FTS5 is contentless over pre-tokenised text (see ``tokenize.py``), so a
segment's FTS row is deleted by replaying its tokens, which ``indexer.py``
recomputes from the stored text.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sqlite3
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import DEFAULT_DB_DIR
from ..errors import (
    DocindexError,
    ForeignDatabaseError,
    IndexBusyError,
    IndexCorruptError,
    IndexNotFoundError,
    SchemaTooNewError,
)
from ..models import SkipRecord, printable
from . import maintenance, migrations
from .records import (
    SEGMENT_COLUMNS,
    DocFilter,
    DocHit,
    Fingerprint,
    IndexCounts,
    SegmentRow,
    SkipRow,
    Space,
    StoredDocument,
    Vacuumed,
)

if TYPE_CHECKING:
    from .encoding import NewDocument

SQLITE_HEADER = b"SQLite format 3\x00"
_INSERT_SEGMENT = (
    f"INSERT INTO segments (id, doc_id, {', '.join(SEGMENT_COLUMNS)}, vec) "
    f"VALUES ({', '.join('?' * (len(SEGMENT_COLUMNS) + 3))})"
)
_ALL = DocFilter()
_MAX_VARS = 900
FTS_HASHSIZE = 16 * 1024 * 1024


def translate(exc: sqlite3.Error, path: Path | str) -> DocindexError:
    """Turn an sqlite3 error into a one-line DocindexError that says what to do."""
    msg = str(exc)
    # Python 3.11+ names the primary/extended result code (SQLITE_CORRUPT_VTAB...).
    code = getattr(exc, "sqlite_errorname", "") or ""
    # The CLI passes "" when it does not know which file failed.
    index = f"index {path}" if str(path) else "the index"
    if "locked" in msg or "busy" in msg:
        where = f": {path}" if str(path) else ""
        return IndexBusyError(f"index is busy (another docindex is writing){where}")
    if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or (
        isinstance(exc, sqlite3.DatabaseError)
        and ("malformed" in msg or "not a database" in msg or "corrupt" in msg)
    ):
        return IndexCorruptError(f"{index} is damaged ({msg}); {repair_hint(path)}")
    if "readonly" in msg or "read-only" in msg:
        return DocindexError(
            f"{index} is read-only ({msg}); the file and its folder must be writable"
        )
    if "disk is full" in msg or "database or disk is full" in msg:
        return DocindexError(f"disk full while writing {index}; the index is unchanged")
    if "unable to open" in msg:
        return DocindexError(
            f"cannot open {index}: {msg} (a WAL index needs a writable folder "
            "for its -wal and -shm files)"
        )
    return DocindexError(f"error in {index}: {msg}")


def repair_hint(path: Path | str) -> str:
    """The one command that fixes a damaged index at ``path`` (issue #17).

    ``reindex --full`` rebuilds from the roots the index remembers, or from
    the folder that holds ``.docindex/index.db``; when neither is known it
    needs ``--root``, so the hint names that command, not one that would only
    answer with another hint.
    """
    if not str(path):
        return "run `docindex reindex --full` or point --db elsewhere"
    path = Path(path)
    if path.parent.name == DEFAULT_DB_DIR or _remembers_roots(path):
        return "run `docindex reindex --full` to rebuild it"
    quoted = shlex.quote(str(path))
    return (
        f"rebuild it with `docindex reindex --full --root DIR --db {quoted}` "
        "(DIR: the folder it indexed), or point --db elsewhere"
    )


def _remembers_roots(path: Path) -> bool:
    """True when the settings, with roots, read back from ``path`` (read-only)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, OSError, ValueError):
        return False
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        return bool(row and json.loads(row[0]).get("roots"))
    except (sqlite3.Error, ValueError, AttributeError):
        return False
    finally:
        conn.close()


class Store:
    """An open index. Always close it (or use it as a context manager)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self._depth = 0
        self._bodies: dict[int, str] = {}
        self._bodies_version: tuple[int, int] | None = None
        self.outdated = False  # set by _setup: read-only and before the last migration

    # -- lifecycle ---------------------------------------------------------

    @classmethod
    def open(
        cls, path: Path, *, create: bool = False, busy_timeout: float = 10.0,
        readonly: bool = False,
    ) -> Store:  # fmt: skip
        """Open (and with ``create`` make and migrate) the index at ``path``.

        Raises:
            IndexNotFoundError: no file and ``create`` is False.
            IndexCorruptError, ForeignDatabaseError, SchemaTooNewError: the file
                is not a usable docindex index.
        """
        exists = path.is_file() and path.stat().st_size > 0
        if not exists and not create:
            raise IndexNotFoundError(
                f"no index at {path}; run `docindex scan DIR` first or pass --db"
            )
        if exists:
            with path.open("rb") as fh:
                if fh.read(16) != SQLITE_HEADER:
                    raise IndexCorruptError(
                        f"{path} is not an SQLite database; delete it or use "
                        "another --db"
                    )
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        if readonly and exists:
            _roll_back_hot_journal(path, busy_timeout)
        try:
            uri = f"{path.resolve().as_uri()}?mode={'ro' if readonly else 'rwc'}"
            conn = sqlite3.connect(
                uri, uri=True, isolation_level=None, timeout=busy_timeout,
                check_same_thread=False,
            )  # fmt: skip
        except sqlite3.Error as exc:
            raise translate(exc, path) from exc
        store = cls(conn, path)
        try:
            store._setup(create and not readonly, readonly)
        except BaseException:
            conn.close()
            raise
        return store

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
                f"{migrations.SCHEMA_VERSION}); upgrade docindex"
            )
        try:
            if version == 0 and not tables and may_migrate:
                # Only a new, empty file can take this (before WAL writes its
                # header): FTS5 merges free many pages in a big scan, and
                # reclaim() gives them back.
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
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
            if version < migrations.SCHEMA_VERSION:
                if not may_migrate and version == 0:
                    raise IndexNotFoundError(f"{self.path} is not initialised")
                if readonly:
                    # Its meta (roots, settings) can still be read; the first
                    # writable open migrates it.
                    self.outdated = True
                    return
                migrations.migrate(conn)
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from exc

    def close(self) -> None:
        """Close the connection (checkpointing is left to SQLite's last close)."""
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

    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON-encodable meta value."""
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value, sort_keys=True)),
        )

    # -- skipped files (issue #23) -------------------------------------------

    def skip_fingerprints(self, root_id: int) -> dict[str, SkipRow]:
        """rel_path -> (reason, message, size, mtime_ns) of a root's skipped files."""
        rows = self.conn.execute(
            "SELECT rel_path, reason, message, size, mtime_ns FROM skipped "
            "WHERE root_id = ?",
            (root_id,),
        )
        return {r[0]: SkipRow(r[1], r[2], r[3], r[4]) for r in rows}

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

    def fingerprints(self, root_id: int) -> dict[str, Fingerprint]:
        """rel_path -> fingerprint for every document of a root."""
        rows = self.conn.execute(
            "SELECT rel_path, id, size, mtime_ns, hash FROM documents WHERE root_id = ?",
            (root_id,),
        )
        return {
            rel_path: Fingerprint(doc_id, size, mtime_ns, hash_)
            for rel_path, doc_id, size, mtime_ns, hash_ in rows
        }

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
                    doc.terms or None,
                ),
            )  # fmt: skip
            doc_id = int(cur.lastrowid or 0)
            if meta:
                self.conn.executemany(
                    "INSERT INTO facets (doc_id, key, value) VALUES (?, ?, ?)",
                    [(doc_id, k, v) for k, v in meta.items()],
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
            self.conn.execute(
                "INSERT INTO doc_fts (rowid, title, heads, body) VALUES (?, ?, ?, ?)",
                (doc_id, *doc.fields, _document_body(doc.fts)),
            )
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
        row = self.conn.execute(
            "SELECT v FROM fts_config WHERE k = 'hashsize'"
        ).fetchone()
        if row is None or int(row[0]) != FTS_HASHSIZE:
            self.conn.execute(
                "INSERT INTO fts (fts, rank) VALUES ('hashsize', ?)", (FTS_HASHSIZE,)
            )

    def delete_document(
        self, doc_id: int, fts: Iterable[tuple[int, str, str]] = (),
        fields: tuple[str, str] | None = None,
    ) -> None:  # fmt: skip
        """Delete a document with its segments (by id range), facets and FTS rows.

        The FTS tables are contentless: their rows go by replaying the exact
        (segment id, title tokens, body tokens) they were indexed with, which
        the caller recomputes from the stored text (``fts``), and the
        document's ``fields`` (``NewDocument.fields``) for its ``doc_fts`` row.
        """
        rows = list(fts)
        with self.atomic(savepoint=False):
            self.conn.executemany(
                "INSERT INTO fts (fts, rowid, title, body) VALUES ('delete', ?, ?, ?)",
                rows,
            )
            maintenance.note_deleted(self.conn, len(rows))
            if fields is not None:
                self.conn.execute(
                    "INSERT INTO doc_fts (doc_fts, rowid, title, heads, body) "
                    "VALUES ('delete', ?, ?, ?, ?)",
                    (doc_id, *fields, _document_body((t, b) for _, t, b in rows)),
                )
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
        for chunk in _chunks(ids):
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

    def _segment_rows(self, where: str, params: tuple[Any, ...]) -> list[SegmentRow]:
        from ..anchors import chunk_id

        sql = (
            "SELECT s.id, s.doc_id, s.id - d.first_segment, s.section, s.part, s.frag, "
            "s.start_line, s.start_line + s.lines, s.char_start, "
            "s.char_start + s.chars, s.page, s.slide, "
            "s.sheet, s.cells, r.path, d.rel_path, d.title, d.kind, d.sections "
            "FROM segments s JOIN documents d ON d.id = s.doc_id "
            f"JOIN roots r ON r.id = d.root_id WHERE {where}"
        )
        rows = []
        parsed: dict[int, list[Any]] = {}  # doc id -> its sections, per call
        for (
            sid, doc_id, ordinal, section, part, frag, start_line, end_line,
            char_start, char_end, page, slide, sheet, cells, root, rel_path,
            title, kind, sections_blob,
        ) in self.conn.execute(sql, params):  # fmt: skip
            sections = parsed.get(doc_id)
            if sections is None:
                sections = parsed[doc_id] = _decode_sections(sections_blob)
            heading, anchor = _decode_section(sections, section)
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
                )  # fmt: skip
            )
        return rows

    # -- search ------------------------------------------------------------

    def lexical(
        self, match: str, limit: int, title_weight: float,
        only: DocFilter = _ALL, within: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:  # fmt: skip
        """(segment id, bm25) best first; bm25 is negated so higher is better.

        ``match`` is an FTS5 query (callers quote user text); ``only`` keeps
        the segments of the documents it selects; ``within`` (segment ids)
        keeps only those. FTS5 then computes bm25 for those rows alone: the
        per-row bm25 is most of a broad query's cost (issue #21).
        """
        if within is not None and len(within) <= _MAX_WITHIN:
            # ``+rowid``: a plain ``rowid IN`` would make FTS5 run the whole
            # MATCH once per id; the unary plus leaves it a row filter.
            marks = ",".join("?" * len(within))
            cur = self.conn.execute(
                "SELECT rowid, -bm25(fts, ?, 1.0) FROM fts WHERE fts MATCH ? "
                f"AND +rowid IN ({marks}) ORDER BY bm25(fts, ?, 1.0), rowid LIMIT ?",
                (title_weight, match, *within, title_weight, limit),
            )
            return [(int(r[0]), float(r[1])) for r in cur]
        where, params = _filter_sql(only)
        if where:
            sql = (
                "SELECT f.rowid, -bm25(fts, ?, 1.0) AS s FROM fts f "
                "JOIN segments s ON s.id = f.rowid JOIN documents d ON d.id = s.doc_id "
                f"WHERE fts MATCH ? AND {where} ORDER BY bm25(fts, ?, 1.0), f.rowid "
                "LIMIT ?"
            )
        else:
            sql = (
                "SELECT rowid, -bm25(fts, ?, 1.0) FROM fts WHERE fts MATCH ? "
                "ORDER BY bm25(fts, ?, 1.0), rowid LIMIT ?"
            )
        cur = self.conn.execute(
            sql, (title_weight, match, *params, title_weight, limit)
        )
        return [(int(r[0]), float(r[1])) for r in cur]

    def vectors(self, ids: Sequence[int]) -> tuple[list[int], list[bytes]]:
        """Vector blobs of the given segments (those that have one)."""
        out_ids: list[int] = []
        blobs: list[bytes] = []
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            for sid, blob in self.conn.execute(
                f"SELECT id, vec FROM segments WHERE id IN ({marks}) AND vec IS NOT NULL",
                tuple(chunk),
            ):
                out_ids.append(int(sid))
                blobs.append(blob)
        return out_ids, blobs

    def pending_vectors(self, after: int, limit: int) -> list[SegmentRow]:
        """Segments without a vector and id > ``after``, in id order (issue #9)."""
        ids = [
            int(r[0])
            for r in self.conn.execute(
                "SELECT id FROM segments WHERE id > ? AND vec IS NULL ORDER BY id "
                "LIMIT ?",
                (after, limit),
            )
        ]
        found = self.segments_by_id(ids)
        return [found[i] for i in ids if i in found]

    def set_vectors(self, ids: Sequence[int], blobs: Sequence[bytes]) -> None:
        """Store each segment's vector blob (``ids[i]`` gets ``blobs[i]``)."""
        self.conn.executemany(
            "UPDATE segments SET vec = ? WHERE id = ?", zip(blobs, ids, strict=True)
        )

    def all_vectors(self, only: DocFilter = _ALL) -> tuple[list[int], list[bytes]]:
        """Every stored vector (of the documents ``only`` selects)."""
        where, params = _filter_sql(only)
        sql = "SELECT s.id, s.vec FROM segments s"
        if where:
            sql += f" JOIN documents d ON d.id = s.doc_id WHERE s.vec IS NOT NULL AND {where}"
        else:
            sql += " WHERE s.vec IS NOT NULL"
        ids: list[int] = []
        blobs: list[bytes] = []
        for sid, blob in self.conn.execute(sql, params):
            ids.append(int(sid))
            blobs.append(blob)
        return ids, blobs

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Number of segments containing each term (fts5vocab)."""
        out: dict[str, int] = {}
        for chunk in _chunks(list(terms)):
            marks = ",".join("?" * len(chunk))
            for term, n in self.conn.execute(
                f"SELECT term, doc FROM fts_vocab WHERE term IN ({marks})", tuple(chunk)
            ):
                out[term] = int(n)
        return out

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
        """Number of segments in the index."""
        return int(self.conn.execute("SELECT count(*) FROM segments").fetchone()[0])

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

    def documents(
        self, only: DocFilter = _ALL, limit: int = -1, offset: int = 0
    ) -> tuple[list[StoredDocument], int]:
        """Documents ``only`` selects, by root and path, and their total count."""
        where, params = _filter_sql(only)
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

    def facet_counts(self) -> list[tuple[str, int, int]]:
        """(key, documents, distinct values) per facet, most documents first."""
        rows = self.conn.execute(
            "SELECT key, count(DISTINCT doc_id), count(DISTINCT value) FROM facets "
            "GROUP BY key ORDER BY 2 DESC, key"
        )
        return [(str(k), int(d), int(v)) for k, d, v in rows]

    def facet_values(self) -> dict[str, list[str]]:
        """Distinct values of each front-matter facet."""
        out: dict[str, list[str]] = {}
        for key, value in self.conn.execute(
            "SELECT DISTINCT key, value FROM facets ORDER BY key, value"
        ):
            out.setdefault(key, []).append(value)
        return out

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
        its ``doc_fts`` row (``fields`` and the rows' bodies) after ``clear_fts``."""
        self.conn.executemany(
            "INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)", rows
        )
        self.conn.execute(
            "INSERT INTO doc_fts (rowid, title, heads, body) VALUES (?, ?, ?, ?)",
            (doc_id, *fields, _document_body((t, b) for _, t, b in rows)),
        )

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

    def documents_at(self, pairs: Sequence[tuple[str, str]]) -> list[StoredDocument]:
        """The documents at (root path, rel_path) pairs, in order; unknown pairs left out."""
        out: list[StoredDocument] = []
        for root, rel_path in pairs:
            out.extend(
                self._documents("r.path = ? AND d.rel_path = ?", (root, rel_path))
            )
        return out

    # -- documents as FTS rows with fields (issue #21) ---------------------

    def document_lexical(
        self,
        match: str,
        limit: int,
        weights: tuple[float, float, float],
        only: DocFilter = _ALL,
    ) -> list[DocHit]:
        """The best documents for an FTS5 query, by ``bm25(doc_fts, *weights)``.

        ``weights`` are the title (with file name), headings and body column
        weights. Returns DocHits (id, negated bm25, segment id range) best first.
        """
        where, params = _filter_sql(only)
        cur = self.conn.execute(
            "SELECT d.id, -bm25(doc_fts, ?, ?, ?) AS s, d.first_segment, "
            "d.n_segments FROM doc_fts JOIN documents d ON d.id = doc_fts.rowid "
            f"WHERE doc_fts MATCH ? {'AND ' + where if where else ''} "
            "ORDER BY s DESC, d.id LIMIT ?",
            (*weights, match, *params, limit),
        )
        return [DocHit(int(r[0]), float(r[1]), int(r[2]), int(r[3])) for r in cur]

    def document_terms(self, doc_ids: Sequence[int]) -> dict[int, str]:
        """doc id -> its stored salient terms (``NewDocument.terms``)."""
        out: dict[int, str] = {}
        for chunk in _chunks(list(doc_ids)):
            marks = ",".join("?" * len(chunk))
            for doc_id, terms in self.conn.execute(
                f"SELECT id, terms FROM documents WHERE id IN ({marks}) "
                "AND terms IS NOT NULL",
                tuple(chunk),
            ):
                out[int(doc_id)] = str(terms)
        return out

    def document_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """Number of documents holding each term (``doc_vocab``)."""
        out: dict[str, int] = {}
        for chunk in _chunks(list(terms)):
            marks = ",".join("?" * len(chunk))
            for term, n in self.conn.execute(
                f"SELECT term, doc FROM doc_vocab WHERE term IN ({marks})", tuple(chunk)
            ):
                out[str(term)] = int(n)
        return out

    def document_stats(self) -> tuple[int, float]:
        """(documents, mean body terms per document) from ``doc_fts``'s totals."""
        row = self.conn.execute(
            "SELECT block FROM doc_fts_data WHERE id = 1"
        ).fetchone()
        totals = _varints(row[0]) if row and row[0] else []
        n_docs = totals[0] if totals else 0
        body = totals[3] if len(totals) > 3 else 0
        return n_docs, body / max(1, n_docs)

    def _version(self) -> tuple[int, int]:
        """Changes when any connection (or this one) writes to the index."""
        return (
            int(self.conn.execute("PRAGMA data_version").fetchone()[0]),
            self.conn.total_changes,
        )

    def doc_ids_of(self, segment_ids: Sequence[int]) -> dict[int, int]:
        """segment id -> doc id."""
        out: dict[int, int] = {}
        for chunk in _chunks(list(segment_ids)):
            marks = ",".join("?" * len(chunk))
            for sid, doc_id in self.conn.execute(
                f"SELECT id, doc_id FROM segments WHERE id IN ({marks})", tuple(chunk)
            ):
                out[int(sid)] = int(doc_id)
        return out


def _roll_back_hot_journal(path: Path, busy_timeout: float) -> None:
    """Roll back a journal left by a killed writer, so a read-only open works.

    A first scan writes with a rollback journal (``bulk_journal``); killed, it
    leaves a hot journal that only a writable connection may roll back. Every
    command starts with a read-only look at the index, which then failed with
    "attempt to write a readonly database" until something opened it writable
    (issue #17). A read on a writable connection rolls the journal back; with
    no hot journal it is a plain read. Without write access the read-only open
    reports the problem.
    """
    journal = Path(f"{path}-journal")
    if not journal.is_file() or journal.stat().st_size == 0:
        return
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return
    with contextlib.suppress(sqlite3.Error):
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=busy_timeout
        )
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()


def compress_body(text: str) -> bytes:
    """How ``documents.body`` stores a document's text: zlib format over UTF-8.

    Written with zlib-ng when it is installed (a dependency): the same format,
    read back by the standard ``zlib``, at level 6 in 0.32 instead of 0.58
    CPU-s on the shared corpus, for 1.6% more bytes (issue #7).
    """
    if not _COMPRESS:  # imported on first use: a query never needs it
        try:
            from zlib_ng import zlib_ng

            _COMPRESS.append(zlib_ng.compress)
        except ImportError:  # a platform without its wheel: same format, slower
            _COMPRESS.append(zlib.compress)
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (issue #17): extractor output is cleaned before it
        # gets here, but storing must not be what fails. "?" keeps offsets.
        raw = text.encode("utf-8", "replace")
    compressed: bytes = _COMPRESS[0](raw, 6)
    return compressed


_COMPRESS: list[Any] = []


def _varints(blob: bytes) -> list[int]:
    """Decode SQLite's big-endian base-128 varints (FTS5 record format)."""
    out: list[int] = []
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = 0
    return out


# A stored section: a bare heading path (its anchor is the path's slug), or
# [heading path, anchor] (``encoding.encode_segments``).
Section = list[str] | list[list[str] | str]


def _decode_sections(blob: bytes | None) -> list[Section]:
    """A document's stored section list (``encode_segments``)."""
    return json.loads(zlib.decompress(blob)) if blob else []


def _decode_section(
    sections: Sequence[Section], index: int | None
) -> tuple[list[str], str]:
    """(heading path, anchor) of a stored section."""
    if index is None:
        return [], ""
    entry = sections[index]
    if not entry or isinstance(entry[0], str):  # a bare heading path
        from ..anchors import slug_path

        path: list[str] = entry  # type: ignore[assignment]
        return path, slug_path(path)
    return entry[0], entry[1]  # type: ignore[return-value]


_GLOB_CHARS = frozenset("*?[")


def _path_clause(path: str) -> tuple[str, tuple[Any, ...]]:
    """SQL over ``d.rel_path`` for ``--path`` (issue #19).

    A pattern with ``*``, ``?`` or ``[`` is a glob (SQLite GLOB: ``*`` also
    crosses ``/``); anything else is an exact file or a folder prefix, with or
    without its trailing slash (``en/apisix`` and ``en/apisix/`` are the
    same). A leading ``./`` is ignored.
    """
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    if _GLOB_CHARS & set(path):
        return "d.rel_path GLOB ?", (path,)
    folder = path.rstrip("/")
    if not folder:
        return "1", ()
    return "(d.rel_path = ? OR substr(d.rel_path, 1, ?) = ?)", (
        folder, len(folder) + 1, folder + "/",
    )  # fmt: skip


def _filter_sql(only: DocFilter) -> tuple[str, tuple[object, ...]]:
    """SQL over ``documents d`` for a DocFilter (pushed down into each query)."""
    clauses: list[str] = []
    params: list[object] = []
    if only.root_ids is not None:
        ids = list(only.root_ids) or [-1]
        clauses.append(f"d.root_id IN ({','.join('?' * len(ids))})")
        params.extend(ids)
    if only.kinds:
        clauses.append(f"d.kind IN ({','.join('?' * len(only.kinds))})")
        params.extend(t.lower().lstrip(".") for t in only.kinds)
    if only.path_glob:
        clauses.append("d.rel_path GLOB ?")
        params.append(only.path_glob)
    if only.path:
        clause, values = _path_clause(only.path)
        clauses.append(clause)
        params.extend(values)
    for key, value in only.facets:
        clauses.append(
            "EXISTS (SELECT 1 FROM facets x WHERE x.doc_id = d.id AND x.key = ? "
            "AND x.value = ?)"
        )
        params.extend((key, value))
    if only.except_doc is not None:
        clauses.append("d.id != ?")
        params.append(only.except_doc)
    return " AND ".join(clauses), tuple(params)


_MAX_WITHIN = 30_000  # bound parameters in one statement (SQLite allows 32,766)


def _document_body(fts: Iterable[tuple[str, str]]) -> str:
    """A document's ``doc_fts`` body: its segments' body tokens, in order."""
    return " ".join(body for _, body in fts if body)


def _chunks(ids: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for i in range(0, len(ids), _MAX_VARS):
        yield ids[i : i + _MAX_VARS]
