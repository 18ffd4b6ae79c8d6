"""Talking to the PostgreSQL server (issue #34): the driver, its errors as
one-line DocindexErrors, the sqlite3-style adapter the shared row statements
run through, and a scratch schema for ``docindex eval``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from docindex.errors import DocindexError, IndexBusyError, IndexUnreachableError
from docindex.store.location import INSTALL_HINT, ServerUrl, redact

if TYPE_CHECKING:
    from types import ModuleType

    from psycopg import Connection, Cursor
    from psycopg.rows import TupleRow

READ_ONLY_HINT = (
    "this PostgreSQL role may only read the index; write with a role that has "
    "the writer GRANTs (README: Share an index with a team)"
)
READ_HINT = (
    "this PostgreSQL role may not read the index's tables; the tables' owner "
    "grants it with `GRANT USAGE ON SCHEMA <schema> TO <role>; GRANT SELECT ON "
    "ALL TABLES IN SCHEMA <schema> TO <role>` (README: Share an index with a team)"
)
PASSWORD_HINT = (
    "keep the password in ~/.pgpass (or PGPASSFILE, a service file, "
    "DOCINDEX_DB) rather than on the command line (README: Share an index "
    "with a team)"
)


def driver() -> ModuleType:
    try:
        import psycopg
    except ImportError:
        raise DocindexError(
            f"a PostgreSQL index needs the driver: {INSTALL_HINT}"
        ) from None
    return psycopg


def translate(
    exc: BaseException, where: ServerUrl | str, *, reading: bool = False,
    role: str = "<role>", schema: str = "<schema>",
) -> DocindexError:  # fmt: skip
    """A psycopg error as a one-line DocindexError, the password redacted.

    ``reading``: the failed statement only read (a permission error then
    means the role may not read, not that it may not write); ``role`` and
    ``schema`` fill in the GRANT it needs.
    """
    psycopg = driver()
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
    msg = redact(first, where)
    errors = psycopg.errors
    if isinstance(exc, errors.InsufficientPrivilege) and reading:
        hint = READ_HINT.replace("<role>", role).replace("<schema>", schema)
        return DocindexError(f"cannot read index {where}: {hint} ({msg})")
    if isinstance(exc, errors.InsufficientPrivilege | errors.ReadOnlySqlTransaction):
        return DocindexError(f"cannot write index {where}: {READ_ONLY_HINT} ({msg})")
    if isinstance(exc, errors.InvalidSchemaName):
        return DocindexError(
            f"cannot make the index's tables at {where}: its schema does not exist, "
            "or this role may not create in it; a DBA runs `CREATE SCHEMA name "
            f"AUTHORIZATION role` (README: Share an index with a team) ({msg})"
        )
    if isinstance(exc, errors.LockNotAvailable | errors.QueryCanceled):
        return IndexBusyError(
            f"index is busy (another docindex is writing): {where}; run the "
            "command again when it has finished, or raise busy_timeout_s"
        )
    if isinstance(
        exc, errors.InvalidPassword | errors.InvalidAuthorizationSpecification
    ):
        return DocindexError(f"cannot connect to index {where}: {msg}; {PASSWORD_HINT}")
    if isinstance(exc, psycopg.OperationalError):
        if "password" in first and "authentication failed" in first:
            return DocindexError(
                f"cannot connect to index {where}: {msg}; {PASSWORD_HINT}"
            )
        if "no password supplied" in first:
            return DocindexError(
                f"cannot connect to index {where}: the server asks for a password; "
                f"{PASSWORD_HINT}"
            )
        return IndexUnreachableError(f"cannot reach index {where}: {msg}")
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
