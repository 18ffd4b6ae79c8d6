"""``docindex roots grant`` and ``roots revoke``: who may read a root (issue #48).

Only a server index has roles. Granting a root to roles makes it readable by
those roles (and their members) and the index's owner alone; the server
enforces it with row-level security on every table that holds the root's
rows (``store/postgres/access.py``). Revoking the last grant makes the root
readable by every reader again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from docindex.api import workspace
from docindex.errors import MisuseError
from docindex.store.location import ServerUrl

#: What a SQLite index answers to ``roots grant`` (README: Share an index with a team).
NO_ROLES = (
    "a SQLite index has no roles: whoever may read its file reads every root; "
    "per-root grants need an index on a PostgreSQL server (README: Share an "
    "index with a team)"
)


@dataclass(frozen=True, slots=True)
class RootGrants:
    """What ``roots grant``/``revoke`` did.

    ``root``: the root's path here (else another host's); ``name``: its name
    in the index; ``readers``: the roles granted it now (empty: every reader);
    ``changed``: the roles granted or revoked by this command (a role that
    had it already, or never had it, is not listed); ``owner``: the tables'
    owner, which reads every root.
    """

    action: str
    root: str
    name: str
    readers: tuple[str, ...]
    changed: tuple[str, ...]
    owner: str


def change(
    db: str | Path | ServerUrl | None, root: str, roles: tuple[str, ...], *,
    grant: bool,
) -> RootGrants:  # fmt: skip
    """Grant root ``root`` (a path on this host or the root's name) to
    ``roles``, or revoke it from them.

    Raises:
        MisuseError: a SQLite index, no such root, or an unknown role.
        DocindexError: the role running it is not the index's owner.
    """
    ws = workspace.load(db)
    if not isinstance(ws.db, ServerUrl):
        raise MisuseError(NO_ROLES)
    from docindex.store.postgres import PgStore

    spelled = tuple(dict.fromkeys(
        (workspace.canonical(root), str(Path(root).expanduser().absolute()))
    ))  # fmt: skip
    with PgStore.open(ws.db, busy_timeout=ws.config.busy_timeout_s) as store:
        with store.atomic():
            done = store.change_grants(root, spelled, roles, grant)
    return RootGrants("grant" if grant else "revoke", done.root, done.name,
                      done.readers, done.changed, done.owner)  # fmt: skip
