"""Find the index, merge its remembered settings with file, environment and flags.

The one place that decides *which* index and *which* settings a command uses,
so every command (and the MCP server) behaves the same.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from docindex import config as cfgmod
from docindex.config import Config
from docindex.errors import DocindexError, IndexNotFoundError, MisuseError
from docindex.store import Store


@dataclass(frozen=True, slots=True)
class Workspace:
    """A resolved index path and its effective settings."""

    db: Path
    config: Config

    def open(
        self, *, create: bool = False, readonly: bool = False, mapped: bool = False
    ) -> Store:
        """Open the index with this workspace's busy timeout (``Store.open``)."""
        store = Store.open(self.db, create=create, mapped=mapped,
                           busy_timeout=self.config.busy_timeout_s, readonly=readonly)  # fmt: skip
        if store.outdated:
            store.close()
            raise DocindexError(
                f"index {self.db} was written by an older docindex and must be "
                "upgraded, which needs write access: run `docindex scan` where "
                "its folder is writable"
            )
        return store


def resolve_db(
    db: str | Path | None, cwd: Path | None = None, near: Sequence[Path] = ()
) -> Path | None:
    """The one rule that finds the index, for every command and the MCP server.

    ``--db``, else ``DOCINDEX_DB``, else the nearest ``.docindex/index.db``
    upward from each folder in ``near`` (the path or roots the command names),
    else upward from ``cwd``; None when there is none (issue #20).
    """
    if db:
        return _absolute(db)
    env = cfgmod.env_value("DB")
    if env:
        return _absolute(env)
    for place in near:
        start = _absolute(place)
        found = cfgmod.find_index(start if start.is_dir() else start.parent)
        if found is not None:
            return found
    return cfgmod.find_index(cwd or Path.cwd())


def db_source(db: str | Path | None, near: Sequence[Path] = ()) -> str:
    """Where ``resolve_db`` took the index from (``docindex config``)."""
    if db:
        return "flag --db"
    if cfgmod.env_value("DB"):
        return "environment DOCINDEX_DB"
    if any(
        cfgmod.find_index(
            _absolute(p) if _absolute(p).is_dir() else _absolute(p).parent
        )
        for p in near
    ):
        return "nearest .docindex/ upward from the named folder"
    return "nearest .docindex/ upward from the current directory"


def _absolute(path: str | Path) -> Path:
    return Path(os.path.abspath(os.path.expanduser(str(path))))


@dataclass(frozen=True, slots=True)
class Relocation:
    """An index that sits in a copied or moved folder: ``old`` root, ``new`` place."""

    old: str
    new: str

    def fix(self) -> str:
        """The one command that makes the index follow its folder."""
        return f"docindex roots move {_quote(self.old)} {_quote(self.new)}"


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)


def relocation(db: Path) -> Relocation | None:
    """Whether ``db`` lives in a folder copied or moved from one of its roots.

    An index remembers where it was written (meta ``location``). When it now
    sits at ``NEW/.docindex/index.db`` but was written at
    ``OLD/.docindex/index.db`` and ``OLD`` is one of its roots, the folder was
    copied or moved and its root still points at the old place (issue #20).
    An index older than that record counts as moved when its home folder is
    none of its roots and every root is gone.
    """
    if db.parent.name != cfgmod.DEFAULT_DB_DIR or not db.is_file():
        return None
    home = str(db.parent.parent.resolve())
    try:
        with Store.open(db, readonly=True) as store:
            roots = list(store.roots().values())
            where = store.get_meta("location")
    except DocindexError:
        return None
    if not roots or home in roots:
        return None
    if isinstance(where, str):
        old_db = Path(where)
        old_home = canonical(old_db.parent.parent)
        moved = old_db.resolve() != db.resolve()
        if moved and old_db.parent.name == cfgmod.DEFAULT_DB_DIR:
            if old_home in roots:
                return Relocation(old_home, home)
        return None
    missing = [r for r in roots if not Path(r).is_dir()]
    if len(roots) == 1 and missing:
        return Relocation(roots[0], home)
    return None


def _remembered(db: Path) -> dict[str, object]:
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
    overrides: Mapping[str, object] | None = None,
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
        MisuseError: an extra root lies inside (or holds) a root already there.
    """
    near = [Path(r) for r in extra_roots or []]
    if scan_path is not None:
        near.append(scan_path)
    path = resolve_db(db, near=near)
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
        raise IndexNotFoundError(
            f"no index at {path}; create it with `docindex scan DIR --db {path}`"
        )
    cfg, _ = layered(path)
    roots = canonical_roots(cfg.roots)
    for extra in extra_roots or []:
        if not Path(extra).expanduser().is_dir():
            raise MisuseError(f"--root {extra} does not exist or is not a directory")
        roots = add_root(roots, extra)
    if not roots and scan_path is not None and scan_path.is_dir():
        roots = [canonical(scan_path)]
    changes = dict(overrides or {})
    changes["roots"] = tuple(roots)
    return Workspace(path, cfg.replace(**changes))


def canonical(path: str | Path) -> str:
    """A root's one spelling: absolute, symlinks resolved (``.`` == ``$PWD``)."""
    return str(_absolute(path).resolve())


def canonical_roots(roots: Sequence[str]) -> list[str]:
    """Roots in their one spelling, each once, in order."""
    return list(dict.fromkeys(canonical(r) for r in roots))


def add_root(roots: Sequence[str], new: str | Path) -> list[str]:
    """``roots`` plus ``new``, unless it is there already under any spelling.

    Raises:
        MisuseError: ``new`` lies inside a root or holds one: its documents
            would be indexed twice and every hit would appear twice.
    """
    full = canonical(new)
    out = list(roots)
    if full in out:
        return out
    for root in out:
        if Path(root) in Path(full).parents:
            raise MisuseError(
                f"{new} is inside the root {root} already; scan it with "
                f"`docindex scan {_quote(str(new))}`"
            )
        if Path(full) in Path(root).parents:
            raise MisuseError(
                f"{new} holds the root {root}; to widen that root, run "
                f"`docindex roots remove {_quote(root)}` and then "
                f"`docindex roots add {_quote(str(new))}`"
            )
    out.append(full)
    return out


def layered(
    db: Path, overrides: Mapping[str, object] | None = None
) -> tuple[Config, dict[str, str]]:
    """Effective settings for ``db`` and where each comes from.

    Layers, lowest first: defaults, settings remembered in the index, the TOML
    file, ``DOCINDEX_*`` variables, command-line flags. Returns the Config and
    a source per setting (``default``, ``index``, ``config file PATH``,
    ``environment DOCINDEX_X``, ``flag``).
    """
    sources = dict.fromkeys(cfgmod.FIELDS, "default")
    remembered = _remembered(db) if db.is_file() else {}
    cfg = cfgmod.from_mapping(remembered) if remembered else Config()
    for name in cfgmod.mapping_fields(remembered):
        sources[name] = "index"
    file = cfgmod.config_file_for(db)
    if file is not None:
        cfg = cfgmod.load_file(file, cfg)
        for name in cfgmod.file_fields(file):
            sources[name] = f"config file {file}"
    cfg = cfgmod.from_env(cfg)
    for name in cfgmod.env_fields():
        sources[name] = f"environment DOCINDEX_{name.upper()}"
    if overrides:
        cfg = cfg.replace(**overrides)
        for name in overrides:
            sources[name] = "flag"
    return cfg, sources
