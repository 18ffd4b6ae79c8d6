"""The PostgreSQL index's settings and roots (issue #34, #48).

Roots belong to the index: each has a name (its folder's name when it was
added) and a path per host (``root_paths``), so two machines that mount the
same share at different places index and query one set of documents. A root
that a host has no path for shows the path another host gave it. What names
a host's roots is kept in those rows, not in the settings (``get_meta``).
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow


class PgRoots:
    """Settings and roots; the connection comes from ``PgStore`` (``store.py``)."""

    host: str  # this machine's name: its roots' paths are its own
    roots_here: str  # the roots as this host sees them, a SQL subquery

    if TYPE_CHECKING:

        @property
        def pg(self) -> Connection[TupleRow]: ...

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
