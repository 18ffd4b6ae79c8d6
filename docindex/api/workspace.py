"""Find the index, merge its remembered settings with file, environment and flags.

The one place that decides *which* index and *which* settings a command uses,
so every command (and the MCP server) behaves the same.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from docindex import config as cfgmod
from docindex.config import Config
from docindex.errors import DocindexError, IndexNotFoundError, MisuseError
from docindex.store import ServerUrl, Store, is_server_url, open_index

Location = Path | ServerUrl  # a SQLite file, or a PostgreSQL URL (issue #34)


@dataclass(frozen=True, slots=True)
class Workspace:
    """A resolved index path (or server URL) and its effective settings.

    ``named``: the roots this user named on this machine for this command
    (``--root``, ``scan DIR``, ``DOCINDEX_ROOTS``, the ``DOCINDEX_CONFIG``
    file); ``held_back``: the index's widening settings not applied here
    (issue #44, ``api.trust``). ``reader``: the index already opened for a
    reading command by ``load`` (``reading=True``), which read its settings
    from it; ``open_reader`` hands it over once (issue #46: one open per
    query, not two). ``read_db``: the replica a reading command reads
    instead of ``db`` (``[db] read_url``, issue #48).
    """

    db: Location
    config: Config
    named: tuple[str, ...] = ()
    held_back: Mapping[str, object] = field(default_factory=dict)
    reader: list[Store] = field(default_factory=list, compare=False, repr=False)
    read_db: ServerUrl | None = None

    def open(
        self, *, create: bool = False, readonly: bool = False, mapped: bool = False
    ) -> Store:
        """Open the index with this workspace's busy timeout (``Store.open``);
        a read-only open of a server index reads ``read_db`` when there is one."""
        where = self.read_db if readonly and self.read_db is not None else self.db
        store: Store = open_index(where, create=create, mapped=mapped,  # type: ignore[assignment]
                                  busy_timeout=self.config.busy_timeout_s,
                                  readonly=readonly,
                                  private=self.config.private_index)  # fmt: skip
        _check_current(store, self.db)
        return store

    def open_reader(self) -> Store:
        """The index for a reading command: memory-mapped, read-only where need
        be (``readonly_ok``); the one ``load`` opened, when it did."""
        if self.reader:
            return self.reader.pop()
        return self.open(readonly=readonly_ok(self.db), mapped=True)

    def close_reader(self) -> None:
        """Close the index ``load`` opened, when no one took it."""
        while self.reader:
            self.reader.pop().close()


def _check_current(store: Store, db: Location) -> None:
    if store.outdated:
        store.close()
        if isinstance(db, ServerUrl):  # the tables' owner migrates (#48)
            raise DocindexError(
                f"index {db} was written by an older docindex and must be "
                "upgraded by the owner of its tables (the role of its first "
                "scan): run `docindex scan` as that role"
            )
        raise DocindexError(
            f"index {db} was written by an older docindex and must be "
            "upgraded, which needs write access: run `docindex scan` where "
            "its folder is writable"
        )


def readonly_ok(db: Location) -> bool:
    """Open read-only when we may not write the file or its folder (issue #38).

    An index built by CI, on a read-only mount or owned by another user still
    answers every reading command (``Store.open(readonly=True)`` picks
    ``mode=ro`` or ``immutable=1``).
    """
    if isinstance(db, ServerUrl):
        # the server's GRANTs decide what a role may read (#34); a reading
        # command's sessions are read-only, so nothing it runs writes, and it
        # answers on a hot standby as on the primary (#48)
        return True
    from docindex.store.sqlitefile import read_only_filesystem

    writable = os.access(db, os.W_OK) and os.access(db.parent, os.W_OK)
    return not writable or read_only_filesystem(db)


def resolve_db(
    db: str | Path | ServerUrl | None, cwd: Path | None = None,
    near: Sequence[Path] = (),
) -> Location | None:  # fmt: skip
    """The one rule that finds the index, for every command and the MCP server.

    ``--db``, else ``DOCINDEX_DB``, else the config file's ``[db] url``
    (``DOCINDEX_CONFIG``), else the nearest ``.docindex/index.db`` upward
    from each folder in ``near`` (the path or roots the command names), else
    upward from ``cwd``; None when there is none (issue #20). A
    ``postgresql://`` URL names a server index (issue #34).
    """
    if isinstance(db, ServerUrl):
        return db
    if db:
        return ServerUrl(str(db)) if is_server_url(str(db)) else _absolute(db)
    env = cfgmod.env_value("DB")
    if env:
        return ServerUrl(env) if is_server_url(env) else _absolute(env)
    url = cfgmod.file_db_url()
    if url:
        return ServerUrl(url) if is_server_url(url) else _absolute(url)
    for place in near:
        start = _absolute(place)
        found = cfgmod.find_index(start if start.is_dir() else start.parent)
        if found is not None:
            return found
    return cfgmod.find_index(cwd or Path.cwd())


def db_source(db: str | Path | ServerUrl | None, near: Sequence[Path] = ()) -> str:
    """Where ``resolve_db`` took the index from (``docindex config``)."""
    if db:
        return "flag --db"
    if cfgmod.env_value("DB"):
        return "environment DOCINDEX_DB"
    if cfgmod.file_db_url():
        return "config file [db] url"
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


def relocation(db: Location) -> Relocation | None:
    """Whether ``db`` lives in a folder copied or moved from one of its roots.

    An index remembers where it was written (meta ``location``). When it now
    sits at ``NEW/.docindex/index.db`` but was written at
    ``OLD/.docindex/index.db`` and ``OLD`` is one of its roots, the folder was
    copied or moved and its root still points at the old place (issue #20).
    An index older than that record counts as moved when its home folder is
    none of its roots and every root is gone.
    """
    if isinstance(db, ServerUrl):  # roots have per-host paths instead
        return None
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


def _remembered(
    db: Location, read_from: ServerUrl | None = None, every_root: bool = False
) -> dict[str, object]:
    if isinstance(db, ServerUrl):
        return _remembered_on_server(read_from or db, every_root)
    if not db.is_file():
        return {}
    try:
        with Store.open(db, readonly=True) as store:
            settings = store.get_meta("settings")
    except IndexNotFoundError:
        return {}
    return dict(settings or {})


def _remembered_on_server(db: ServerUrl, every_root: bool = False) -> dict[str, object]:
    """A server index's settings, with the roots this host has paths for
    (``every_root``: every root this role may read, at this host's path,
    else another host's: what a reading command reads, #48)."""
    from docindex.store.postgres import PgStore

    try:
        with PgStore.open(db, readonly=True) as store:
            settings = dict(store.get_meta("settings") or {})
            settings["roots"] = (
                list(store.roots().values()) if every_root else store.local_roots()
            )
    except IndexNotFoundError:
        return {}
    return settings


def load(
    db: str | Path | ServerUrl | None,
    overrides: Mapping[str, object] | None = None,
    *,
    extra_roots: list[str] | None = None,
    scan_path: Path | None = None,
    must_exist: bool = True,
    reading: bool = False,
    every_root: bool = False,
) -> Workspace:
    """Resolve the index and its settings for one command.

    Args:
        db: the ``--db`` value, if any.
        overrides: settings from command-line flags (highest precedence).
        extra_roots: ``--root`` directories to add to the remembered roots.
        scan_path: ``scan PATH``: becomes the root of a new index.
        must_exist: raise IndexNotFoundError when no index is found.
        reading: a reading command: open the index as it reads (once), read
            its settings there and keep it open (``Workspace.open_reader``).
        reading: a command that only reads: with ``[db] read_url`` beside the
            ``[db] url`` that names the index, it reads the replica (#48).
        every_root: a server index's roots are all those this role may read
            (a reader's machine may have scanned none), not this host's.

    Raises:
        IndexNotFoundError: no index and ``must_exist``.
        MisuseError: an extra root lies inside (or holds) a root already there.
    """
    near = [Path(r) for r in extra_roots or []]
    if scan_path is not None:
        near.append(scan_path)
    path = resolve_db(db, near=near)
    if isinstance(path, ServerUrl):
        read = read_url(db) if reading else None
        return _server_workspace(path, overrides, extra_roots, scan_path, must_exist,
                                 read, every_root)  # fmt: skip
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
        path = _new_index_path(extra_roots, scan_path)
    elif must_exist and not path.is_file():
        raise IndexNotFoundError(
            f"no index at {path}; create it with `docindex scan DIR --db {path}`"
        )
    reader: list[Store] = []
    remembered = None
    if reading and path.is_file():
        store, remembered = _open_reader(path)
        reader.append(store)
    try:
        cfg, sources, held_back = layers(path, remembered=remembered)
        if reader:  # opened before the settings said how long to wait
            ms = int(cfg.busy_timeout_s * 1000)
            reader[0].conn.execute(f"PRAGMA busy_timeout = {ms}")
        # Roots the index remembers were resolved when they were added and are
        # pinned there (issue #33): resolving them again would follow a symbolic
        # link put in a root's place. Roots typed in a config file or the
        # environment are resolved as given.
        if sources["roots"] == "index":
            roots = list(dict.fromkeys(str(_absolute(r)) for r in cfg.roots))
        else:
            roots = canonical_roots(cfg.roots)
        ws = _settled(path, cfg, roots, sources, held_back, overrides, extra_roots,
                      scan_path)  # fmt: skip
    except BaseException:
        for store in reader:
            store.close()
        raise
    ws.reader.extend(reader)
    return ws


def _new_index_path(extra_roots: list[str] | None, scan_path: Path | None) -> Path:
    """Where a new index goes: in its first root (``--root``, ``scan DIR``,
    else ``DOCINDEX_ROOTS``).

    Raises:
        MisuseError: ``scan PATH`` names no folder.
        DocindexError: no root named at all.
    """
    first: str | None = extra_roots[0] if extra_roots else None
    if first is None and scan_path is not None and scan_path.is_dir():
        first = str(scan_path)
    env_roots = cfgmod.env_value("ROOTS")
    if first is None and env_roots:
        first = env_roots.split(os.pathsep)[0]
    if first is None and scan_path is not None:
        # `scan /no/such/folder` (#45): say what is wrong with the path
        if not os.path.lexists(scan_path):
            raise MisuseError(f"{scan_path} does not exist; nothing to scan")
        raise MisuseError(
            f"{scan_path} is not a folder; scan the folder that holds it, "
            "or pass --root DIR"
        )
    if first is None:
        raise DocindexError("nothing to scan: pass a directory or --root DIR")
    return cfgmod.default_db_for_root(Path(first))


def _open_reader(path: Path) -> tuple[Store, dict[str, object]]:
    """A reading command's index, opened once, and the settings it remembers."""
    store = Store.open(path, readonly=readonly_ok(path), mapped=True)
    try:
        _check_current(store, path)
        remembered = dict(store.get_meta("settings") or {})
    except BaseException:
        store.close()
        raise
    return store, remembered


def read_url(db: str | Path | ServerUrl | None) -> ServerUrl | None:
    """The ``[db] read_url`` replica, when the index this command uses (``db``,
    resolved as ``resolve_db`` does) is the config file's ``[db] url``."""
    url, read = cfgmod.file_db_url(), cfgmod.file_db_url(key="read_url")
    if not (url and read and is_server_url(url) and is_server_url(read)):
        return None
    used = resolve_db(db)
    if not isinstance(used, ServerUrl) or used.url != ServerUrl(url).url:
        return None
    return ServerUrl(read)


def _server_workspace(
    url: ServerUrl, overrides: Mapping[str, object] | None, extra_roots: list[str] | None,
    scan_path: Path | None, must_exist: bool, read: ServerUrl | None = None,
    every_root: bool = False,
) -> Workspace:  # fmt: skip
    """``load`` for a PostgreSQL index: its roots are this host's paths.

    ``read``: a replica that a reading command reads everything from, its
    settings included, so it answers while the primary is away (#48).
    """
    if must_exist:
        from docindex.store.postgres import PgStore

        PgStore.open(read or url, readonly=True).close()  # IndexNotFoundError
    cfg, sources, held_back = layers(url, read_from=read, every_root=every_root)
    roots = canonical_roots(cfg.roots)
    # a server index's roots are this host's paths: scan_path is its first root
    ws = _settled(url, cfg, roots, sources, held_back, overrides, extra_roots,
                  scan_path)  # fmt: skip
    return replace(ws, read_db=read) if read is not None else ws


def _settled(
    db: Location, cfg: Config, roots: list[str], sources: Mapping[str, str],
    held_back: Mapping[str, object], overrides: Mapping[str, object] | None,
    extra_roots: list[str] | None, scan_path: Path | None,
) -> Workspace:  # fmt: skip
    """The workspace with the command's flags and its roots: the remembered
    ones, ``--root`` directories added, else ``scan PATH`` for a new index;
    and which of them this user named here (issue #44)."""
    from docindex.api import trust

    local = cfgmod.local_config_file()
    mine = sources["roots"].startswith("environment") or (
        local is not None and sources["roots"] == f"config file {local}"
    )
    named = list(roots) if mine else []
    for extra in extra_roots or []:
        if not Path(extra).expanduser().is_dir():
            raise MisuseError(f"--root {extra} does not exist or is not a directory")
        roots = add_root(roots, extra)
        named.append(canonical(extra))
    if not roots and scan_path is not None and scan_path.is_dir():
        roots = [canonical(scan_path)]
        named.append(roots[0])
    elif scan_path is not None and canonical(scan_path) in roots:
        named.append(canonical(scan_path))  # `scan ROOT` names that root
    changes = dict(overrides or {})
    changes["roots"] = tuple(roots)
    cfg = cfg.replace(**changes)
    held = {k: v for k, v in held_back.items() if k not in changes}
    return Workspace(db, cfg, tuple(dict.fromkeys(named)),
                     trust.still_held_back(cfg, held))  # fmt: skip


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
                f"`docindex scan --root {_quote(str(new))}`"
            )
    out.append(full)
    return out


def layered(
    db: Location, overrides: Mapping[str, object] | None = None,
    read_from: ServerUrl | None = None,
) -> tuple[Config, dict[str, str]]:  # fmt: skip
    """Effective settings for ``db`` and where each comes from.

    Layers, lowest first: defaults, settings remembered in the index, this
    machine's remembered flags, the TOML file, ``DOCINDEX_*`` variables,
    command-line flags. Returns the Config and a source per setting
    (``default``, ``index``, ``this machine``, ``config file PATH``,
    ``environment DOCINDEX_X``, ``flag``). See ``layers`` for what the index
    may not widen.
    """
    cfg, sources, _ = layers(db, overrides, read_from=read_from)
    return cfg, sources


def layers(
    db: Location, overrides: Mapping[str, object] | None = None,
    remembered: dict[str, object] | None = None,
    read_from: ServerUrl | None = None, every_root: bool = False,
) -> tuple[Config, dict[str, str], dict[str, object]]:  # fmt: skip
    """``layered``, and the index's widening settings it did not apply
    (``remembered``: the index's own settings, when the caller read them).

    The index's remembered settings and a ``config.toml`` beside a SQLite
    index came with the index: they may narrow the walk, never widen it
    (``trust.WIDENING``); this machine's flags (remembered in the user's
    ``trust.json``), ``DOCINDEX_CONFIG``, the environment and the command's
    flags may (issue #44). The third value maps each widening setting that
    the final settings still do not admit to the value the index wanted.
    ``read_from``: the replica a server index's settings are read from;
    ``every_root``: see ``load``.
    """
    from docindex.api import trust

    sources = dict.fromkeys(cfgmod.FIELDS, "default")
    held_back: dict[str, object] = {}
    if remembered is None:
        remembered = (
            _remembered(db, read_from, every_root)
            if isinstance(db, ServerUrl) or db.is_file()
            else {}
        )
    cfg = Config()
    if remembered:
        names = cfgmod.mapping_fields(remembered)
        cfg, held = trust.narrowed(cfg, cfgmod.from_mapping(remembered), names)
        held_back.update(held)
        for name in names - held.keys():
            sources[name] = "index"
        if "roots" in names:
            cfg = cfg.replace(roots=cfgmod.from_mapping(remembered).roots)
    here = trust.accepted(db).settings if remembered else {}
    if here:
        cfg = _apply_here(cfg, here)
        for name in here:
            sources[name] = "this machine (a flag given before)"
            held_back.pop(name, None)  # this user's own choice wins
    file = cfgmod.config_file_for(db)
    if file is not None:
        names = cfgmod.file_fields(file)
        if file == cfgmod.local_config_file():
            cfg = cfgmod.load_file(file, cfg)
            taken = names
            for name in names:
                held_back.pop(name, None)
        else:  # beside the index: it came with the index
            cfg, held = trust.narrowed(cfg, cfgmod.load_file(file, cfg), names)
            held_back.update(held)
            taken = names - held.keys()
        for name in taken:
            sources[name] = f"config file {file}"
    cfg = cfgmod.from_env(cfg)
    for name in cfgmod.env_fields():
        sources[name] = f"environment DOCINDEX_{name.upper()}"
        held_back.pop(name, None)
    if overrides:
        cfg = cfg.replace(**overrides)
        for name in overrides:
            sources[name] = "flag"
            held_back.pop(name, None)
    return cfg, sources, trust.still_held_back(cfg, held_back)


def _apply_here(cfg: Config, here: Mapping[str, object]) -> Config:
    """This machine's remembered flags on top of ``cfg``."""
    return cfgmod.from_mapping(dict(here), cfg)
