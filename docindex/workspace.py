"""Find the index, merge its remembered settings with file, environment and flags.

The one place that decides *which* index and *which* settings a command uses,
so every command (and the MCP server) behaves the same.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config as cfgmod
from .config import Config
from .errors import DocindexError, IndexNotFoundError
from .store import Store


@dataclass(frozen=True, slots=True)
class Workspace:
    """A resolved index path and its effective settings."""

    db: Path
    config: Config

    def open(self, *, create: bool = False, readonly: bool = False) -> Store:
        """Open the index with this workspace's busy timeout."""
        store = Store.open(self.db, create=create,
                           busy_timeout=self.config.busy_timeout_s, readonly=readonly)  # fmt: skip
        if store.outdated:
            store.close()
            raise DocindexError(
                f"index {self.db} was written by an older docindex and must be "
                "upgraded, which needs write access: run `docindex scan` where "
                "its folder is writable"
            )
        return store


def resolve_db(db: str | Path | None, cwd: Path | None = None) -> Path | None:
    """--db / DOCINDEX_DB, else the nearest ``.docindex/index.db`` upward, else None."""
    if db:
        return Path(os.path.abspath(os.path.expanduser(str(db))))
    env = cfgmod.env_value("DB")
    if env:
        return Path(os.path.abspath(os.path.expanduser(env)))
    return cfgmod.find_index(cwd or Path.cwd())


def _remembered(db: Path) -> dict[str, Any]:
    if not db.is_file():
        return {}
    try:
        with Store.open(db, readonly=True) as store:
            settings = store.get_meta("settings")
    except IndexNotFoundError:
        return {}
    return dict(settings or {})


def load(
    db: str | Path | None,
    overrides: dict[str, Any] | None = None,
    *,
    extra_roots: list[str] | None = None,
    scan_path: Path | None = None,
    must_exist: bool = True,
) -> Workspace:
    """Resolve the index and its settings for one command.

    Args:
        db: the ``--db`` value, if any.
        overrides: settings from command-line flags (highest precedence).
        extra_roots: ``--root`` directories to add to the remembered roots.
        scan_path: ``scan PATH``: becomes the root of a new index.
        must_exist: raise IndexNotFoundError when no index is found.

    Raises:
        IndexNotFoundError: no index and ``must_exist``.
    """
    path = resolve_db(db)
    if path is not None and path.exists() and not path.is_file():
        # /dev/null, a folder, a FIFO: SQLite would write "<path>-journal"
        # beside it (/dev/null-journal as root, issue #17).
        raise DocindexError(
            f"{path} is not a regular file; an index is a file: pass --db FILE"
        )
    if path is None:
        if must_exist:
            raise IndexNotFoundError(
                "no index found (looked for .docindex/index.db from here upward); "
                "run `docindex scan DIR` or pass --db / set DOCINDEX_DB"
            )
        first: str | None = extra_roots[0] if extra_roots else None
        if first is None and scan_path is not None and scan_path.is_dir():
            first = str(scan_path)
        env_roots = cfgmod.env_value("ROOTS")
        if first is None and env_roots:
            first = env_roots.split(os.pathsep)[0]
        if first is None:
            raise DocindexError("nothing to scan: pass a directory or --root DIR")
        path = cfgmod.default_db_for_root(Path(first))
    elif must_exist and not path.is_file():
        raise IndexNotFoundError(f"no index at {path}; run `docindex scan DIR` first")
    cfg = cfgmod.from_mapping(_remembered(path)) if path.is_file() else Config()
    file = cfgmod.config_file_for(path)
    if file is not None:
        cfg = cfgmod.load_file(file, cfg)
    cfg = cfgmod.from_env(cfg)
    roots = [str(Path(os.path.abspath(r))) for r in cfg.roots]
    for extra in extra_roots or []:
        full = str(Path(os.path.abspath(extra)))
        if full not in roots:
            roots.append(full)
    if not roots and scan_path is not None and scan_path.is_dir():
        roots.append(str(Path(os.path.abspath(scan_path))))
    changes = dict(overrides or {})
    changes["roots"] = tuple(str(Path(r).resolve()) for r in roots)
    return Workspace(path, cfg.replace(**changes))
