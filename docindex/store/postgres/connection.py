"""Talking to the PostgreSQL server (issue #34): the driver, its errors as
one-line DocindexErrors, the sqlite3-style adapter the shared row statements
run through, and a scratch schema for ``docindex eval``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from docindex.errors import DocindexError, IndexBusyError
from docindex.store.location import INSTALL_HINT, ServerUrl, mask

if TYPE_CHECKING:
    from types import ModuleType

    from psycopg import Connection, Cursor
    from psycopg.rows import TupleRow

READ_ONLY_HINT = (
    "this PostgreSQL role may only read the index; write with a role that has "
    "the writer GRANTs (README: Share an index with a team)"
)


def driver() -> ModuleType:
    try:
        import psycopg
    except ImportError:
        raise DocindexError(
            f"a PostgreSQL index needs the driver: {INSTALL_HINT}"
        ) from None
    return psycopg


def translate(exc: BaseException, where: ServerUrl | str) -> DocindexError:
    """A psycopg error as a one-line DocindexError; the password stays masked."""
    psycopg = driver()
    msg = mask(str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc))
    errors = psycopg.errors
    if isinstance(exc, errors.InsufficientPrivilege | errors.ReadOnlySqlTransaction):
        return DocindexError(f"cannot write index {where}: {READ_ONLY_HINT} ({msg})")
    if isinstance(exc, errors.LockNotAvailable | errors.QueryCanceled):
        return IndexBusyError(f"index is busy (another docindex is writing): {where}")
    if isinstance(exc, psycopg.OperationalError):
        return DocindexError(f"cannot reach index {where}: {msg}")
    return DocindexError(f"error in index {where}: {msg}")


class CursorRows:
    """What ``DocumentRows`` reads of an sqlite3 cursor, over a psycopg one."""

    def __init__(self, cur: Cursor[TupleRow]) -> None:
        self._cur = cur
        self.rowcount = cur.rowcount
        self.lastrowid = None

    def fetchone(self) -> TupleRow | None:
        return self._cur.fetchone() if self._cur.description else None

    def fetchall(self) -> list[TupleRow]:
        return list(self._cur.fetchall()) if self._cur.description else []

    def __iter__(self) -> Iterator[TupleRow]:
        return iter(self.fetchall())


class Adapter:
    """sqlite3-style ``execute`` for ``DocumentRows``' statements.

    ``?`` becomes ``%s``, and ``JOIN roots r ON`` joins this host's view of
    the roots (id, path), so the shared statements need no copy.
    """

    def __init__(
        self, connection: Callable[[], Connection[TupleRow]], roots_here: str
    ) -> None:
        self.connection = connection  # the store's: it writes held-back rows first
        self.roots_here = roots_here

    def _sql(self, sql: str) -> str:
        sql = sql.replace("%", "%%").replace("?", "%s")
        return sql.replace("JOIN roots r ON", f"JOIN {self.roots_here} r ON")

    def execute(self, sql: str, params: Sequence[object] = ()) -> CursorRows:
        return CursorRows(self.connection().execute(self._sql(sql), tuple(params)))

    def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        with self.connection().cursor() as cur:
            cur.executemany(self._sql(sql), [tuple(r) for r in rows])


@contextlib.contextmanager
def scratch_schema(location: ServerUrl) -> Iterator[ServerUrl]:
    """A new, empty schema on the server, dropped afterwards (``docindex eval``)."""
    import uuid

    from docindex.store.location import with_search_path

    psycopg = driver()
    name = "docindex_eval_" + uuid.uuid4().hex[:10]
    try:
        with psycopg.connect(location.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
    except psycopg.Error as exc:
        raise translate(exc, location) from None
    try:
        yield ServerUrl(with_search_path(location.url, name))
    finally:
        with contextlib.suppress(psycopg.Error):
            with psycopg.connect(location.url, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {name} CASCADE")


def _host() -> str:
    from docindex import config

    return config.host_name()


def host_name() -> str:
    """This machine's name for its root paths (``DOCINDEX_HOST`` overrides it)."""
    from docindex import config

    return config.host_name()
