"""Who may read which root of a server index, and which server this is (issue #48).

A root with rows in ``root_grants`` is read only by the roles named there
(and their members) and by the tables' owner; a root without stays readable
by every role that may read the index. The server enforces it: every table
that holds a root's rows has a row-level security policy (``schema.m004``),
so a reader's own ``psql`` sees no row, count or term of a root it was not
granted, and its idf, N and average lengths sum over the roots it may read
(``vocab`` is kept per root). Only the owner changes grants: no policy lets
another role write ``root_grants``.

A hot standby (a streaming replica) answers every reading command; a writing
command there stops at its first transaction with one line naming the
primary (``Standby``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from docindex.errors import DocindexError, MisuseError
from docindex.store.location import ServerUrl, redact

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow


class ReplicaWriteError(DocindexError):
    """A writing command against a read-only replica (hot standby)."""


@dataclass(frozen=True, slots=True)
class GrantChange:
    """What ``grant``/``revoke`` did to one root: its readers afterwards
    (empty: every reader), the roles that changed, the owner's role."""

    root: str
    name: str
    readers: tuple[str, ...]
    changed: tuple[str, ...]
    owner: str


class PgAccess:
    """Grants and standby checks; the connection comes from ``PgStore``."""

    location: ServerUrl
    host: str

    @property
    def pg(self) -> Connection[TupleRow]:
        raise NotImplementedError

    def root_grants(self) -> dict[str, tuple[str, ...]]:
        """Root path here (else another host's) -> the roles granted it, for
        the roots this role may see (a root without grants is left out)."""
        rows = self.pg.execute(
            "SELECT coalesce(h.path, r.path), array_agg(g.role ORDER BY g.role) "
            "FROM root_grants g JOIN roots r ON r.id = g.root_id LEFT JOIN "
            "root_paths h ON h.root_id = r.id AND h.host = %s "
            "GROUP BY r.id, h.path, r.path",
            (self.host,),
        )
        return {str(path): tuple(map(str, roles)) for path, roles in rows}

    def owner(self) -> tuple[str, bool]:
        """(the tables' owner, whether the current role acts as it: a member,
        a superuser or a role that bypasses row-level security)."""
        row = self.pg.execute(
            "SELECT o.rolname, pg_has_role(current_user, o.oid, 'USAGE') "
            "OR me.rolsuper OR me.rolbypassrls FROM pg_class c "
            "JOIN pg_roles o ON o.oid = c.relowner "
            "JOIN pg_roles me ON me.rolname = current_user "
            "WHERE c.oid = 'root_grants'::regclass"
        ).fetchone()
        if row is None:  # pragma: no cover - the table comes with the schema
            raise DocindexError(f"index {self.location} has no root_grants table")
        return str(row[0]), bool(row[1])

    def _root(self, spec: str, spelled: tuple[str, ...]) -> tuple[int, str, str]:
        """(id, name, path here) of the root named ``spec`` or at one of the
        paths ``spelled`` on this host (else any host's).

        Raises:
            MisuseError: no such root among those this role may see.
        """
        row = self.pg.execute(
            "SELECT r.id, r.name, coalesce(h.path, r.path) FROM roots r "
            "LEFT JOIN root_paths h ON h.root_id = r.id AND h.host = %s "
            "WHERE r.name = %s OR h.path = ANY(%s) "
            "OR EXISTS (SELECT 1 FROM root_paths p WHERE p.root_id = r.id "
            "AND p.path = ANY(%s)) ORDER BY (r.name = %s) DESC, r.id LIMIT 1",
            (self.host, spec, list(spelled), list(spelled), spec),
        ).fetchone()
        if row is None:
            names = [str(r[0]) for r in self.pg.execute(
                "SELECT name FROM roots ORDER BY name"
            )]  # fmt: skip
            raise MisuseError(
                f"{spec} is not a root of this index (roots: "
                f"{', '.join(names) or 'none'}); see them with `docindex roots`"
            )
        return int(row[0]), str(row[1]), str(row[2])

    def change_grants(
        self, spec: str, spelled: tuple[str, ...], roles: tuple[str, ...],
        grant: bool,
    ) -> GrantChange:  # fmt: skip
        """Grant root ``spec`` to ``roles`` (or revoke it from them).

        Raises:
            DocindexError: this role is not the tables' owner.
            MisuseError: no such root, or a role the server does not know.
        """
        owner, acts_as_owner = self.owner()
        if not acts_as_owner:
            raise DocindexError(
                f"only the index's owner (role {owner}) grants and revokes "
                f"roots; run this as {owner}"
            )
        root_id, name, path = self._root(spec, spelled)
        known = {str(r[0]) for r in self.pg.execute(
            "SELECT rolname FROM pg_roles WHERE rolname = ANY(%s)", (list(roles),)
        )}  # fmt: skip
        unknown = [r for r in roles if r not in known]
        if grant and unknown:
            raise MisuseError(
                f"no role {', '.join(unknown)} on this server; a DBA creates it "
                "(CREATE ROLE ... LOGIN) and grants it the reader GRANTs first"
            )
        if grant:
            rows = self.pg.execute(
                "INSERT INTO root_grants (root_id, role) SELECT %s, unnest(%s::text[]) "
                "ON CONFLICT DO NOTHING RETURNING role",
                (root_id, list(roles)),
            ).fetchall()
        else:
            rows = self.pg.execute(
                "DELETE FROM root_grants WHERE root_id = %s AND role = ANY(%s) "
                "RETURNING role",
                (root_id, list(roles)),
            ).fetchall()
        readers = tuple(str(r[0]) for r in self.pg.execute(
            "SELECT role FROM root_grants WHERE root_id = %s ORDER BY role",
            (root_id,),
        ))  # fmt: skip
        changed = tuple(sorted(str(r[0]) for r in rows))
        return GrantChange(path, name, readers, changed, owner)

    def standby(self) -> Standby | None:
        """This server as a hot standby (what names its primary), or None."""
        row = self.pg.execute(
            "SELECT pg_is_in_recovery(), to_regclass('docindex_meta') IS NOT NULL"
        ).fetchone()
        if row is None or not row[0]:
            return None
        written = None
        if row[1]:  # an index is there: where its last scan wrote
            import json

            got = self.pg.execute(
                "SELECT value FROM docindex_meta WHERE key = 'location'"
            ).fetchone()
            written = json.loads(got[0]) if got else None
        return Standby(self._primary(), written if isinstance(written, str) else None)

    def _primary(self) -> str | None:
        """Host and port of the primary this standby replays from, as far as
        this role may see them: the WAL receiver's sender (superusers and
        ``pg_read_all_stats``), else ``primary_conninfo`` (superusers and
        ``pg_read_all_settings``); None when neither is visible."""
        from psycopg import Error
        from psycopg.conninfo import conninfo_to_dict

        try:
            row = self.pg.execute(
                "SELECT sender_host, sender_port FROM pg_stat_wal_receiver"
            ).fetchone()
            if row is not None and row[0]:
                return _netloc(str(row[0]), row[1])
            row = self.pg.execute(
                "SELECT setting FROM pg_settings WHERE name = 'primary_conninfo'"
            ).fetchone()
        except Error:
            return None
        if row is None or not row[0]:
            return None
        try:
            info = conninfo_to_dict(str(row[0]))
        except Error:
            return None
        host = str(info.get("host") or info.get("hostaddr") or "")
        return _netloc(host, info.get("port")) if host else None


def _netloc(host: str, port: object) -> str:
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{host}:{port}" if port else host


@dataclass(frozen=True, slots=True)
class Standby:
    """A read-only replica. ``primary``: host:port of its primary, when this
    role may see it; ``written``: the URL (masked) the index's last scan
    wrote through, which the replica holds too (``docindex_meta``)."""

    primary: str | None
    written: str | None = None

    def error(self, location: ServerUrl) -> ReplicaWriteError:
        """One line: this is a replica, write to the primary (named when seen)."""
        where = str(location)
        if self.primary is None:
            seen = (
                f"the index's last scan wrote through {redact(self.written)}"
                if self.written
                else "ask the DBA for its address (the replica's primary_conninfo)"
            )
            return ReplicaWriteError(
                f"cannot write index {where}: it is a read-only replica (hot "
                f"standby); write to its primary ({seen})"
            )
        parts = urlsplit(location.url)
        if parts.hostname:
            user = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
            url = urlunsplit(parts._replace(netloc=user + self.primary))
            hint = f"; e.g. --db '{ServerUrl(url)}'"
        else:
            hint = ""
        return ReplicaWriteError(
            f"cannot write index {where}: it is a read-only replica (hot standby) "
            f"of the primary at {self.primary}: write there{hint}"
        )
