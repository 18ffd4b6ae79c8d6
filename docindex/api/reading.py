"""The reading commands besides ``query``: navigation (``outline``, ``show``,
``section``, ``list``, ``related``), ``stats``, ``skipped``, ``roots``,
``config`` and ``export``. Each opens the index for reading only (a replica
when ``[db] read_url`` says so, #48); issue #49 split ``commands``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.api import workspace
from docindex.api.params import DbArg
from docindex.config import Config
from docindex.errors import MisuseError
from docindex.models import ProgressFn
from docindex.store.location import ServerUrl

if TYPE_CHECKING:
    from docindex.api.records import IndexStats, RootsListing, SkippedFiles, Vocabulary
    from docindex.models.navigation import (
        DocumentList,
        Outline,
        Related,
        Section,
        Shown,
    )
    from docindex.models.serialize import JSONObject


def stats(db: DbArg) -> IndexStats:
    """What the index holds."""
    from docindex.api.records import FacetCount, IndexStats
    from docindex.ingest.settings import tokenizer_notice

    ws = workspace.load(db, reading=True, every_root=True)
    with ws.open(readonly=workspace.readonly_ok(ws.db)) as store:
        counts = store.counts()
        space = store.space()
        if isinstance(ws.db, ServerUrl):
            size, wal = space.file_bytes, Path(os.devnull, "none")
        else:
            size, wal = ws.db.stat().st_size, Path(f"{ws.db}-wal")
        return IndexStats(
            db=str(ws.db), documents=counts.documents, segments=counts.segments,
            embedded=counts.embedded, roots=list(store.roots().values()),
            types=store.kinds(),
            db_bytes=size + (wal.stat().st_size if wal.exists() else 0),
            reclaimable_bytes=space.reclaimable_bytes,
            embedder=store.get_meta("embedder"),
            tokenizer=store.get_meta("tokenizer"),
            facets=store.facet_values(),
            facet_counts=[FacetCount(k, d, v) for k, d, v in store.facet_counts()],
            skipped=store.skip_counts(),
            notices=[*store.notices(), *tokenizer_notice(store.get_meta("tokenizer"))],
        )  # fmt: skip


def skipped(db: DbArg, *, reason: str | None = None) -> SkippedFiles:
    """Files left out of the index with reason and message (issue #23).

    ``counts`` covers every reason, ``files`` only ``reason`` when one is given.

    Raises:
        MisuseError: ``reason`` is not a skip reason.
    """
    from docindex.api.records import SkippedFiles
    from docindex.models import SkipReason

    if reason is not None and reason not in {r.value for r in SkipReason}:
        known = ", ".join(sorted(SkipReason))
        raise MisuseError(f"no skip reason {reason!r}; the reasons: {known}")
    ws = workspace.load(db, reading=True, every_root=True)
    with ws.open(readonly=workspace.readonly_ok(ws.db)) as store:
        return SkippedFiles(store.skip_counts(), store.skipped(reason))


# -- navigation (issue #6) ------------------------------------------------------


def _nav_workspace(db: DbArg, roots: list[str] | None) -> workspace.Workspace:
    return workspace.load(db, extra_roots=roots, reading=True, every_root=True)


def outline(
    db: DbArg, file: str, *, depth: int = 6, roots: list[str] | None = None,
    cwd: Path | None = None,
) -> Outline:  # fmt: skip
    """A document's title and headings; see ``docindex outline --help``."""
    from docindex.search import navigate

    ws = _nav_workspace(db, roots)
    with ws.open_reader() as store:
        return navigate.outline(store, ws.config.roots, file, depth=depth, cwd=cwd)


def show(
    db: DbArg, target: str, *, context: int = 0, roots: list[str] | None = None,
    cwd: Path | None = None,
) -> Shown:  # fmt: skip
    """A chunk and its neighbours; see ``docindex show --help``."""
    from docindex.search import navigate

    ws = _nav_workspace(db, roots)
    with ws.open_reader() as store:
        return navigate.show(store, ws.config.roots, target, context=context, cwd=cwd)


def section(
    db: DbArg, file: str, heading: str, *, include_subsections: bool = True,
    roots: list[str] | None = None, cwd: Path | None = None,
) -> Section:  # fmt: skip
    """One heading's section; see ``docindex section --help``."""
    from docindex.search import navigate

    ws = _nav_workspace(db, roots)
    with ws.open_reader() as store:
        return navigate.section(store, ws.config.roots, file, heading,
                                include_subsections=include_subsections, cwd=cwd)  # fmt: skip


def list_documents(
    db: DbArg, *, path_glob: str | None = None, types: tuple[str, ...] = (),
    limit: int = 50, offset: int = 0, roots: list[str] | None = None,
    cwd: Path | None = None,
) -> DocumentList:  # fmt: skip
    """Indexed documents, a page at a time; see ``docindex list --help``.

    ``path_glob`` follows the one path rule (``navigate.path_scope``).
    """
    from docindex.search import navigate

    ws = _nav_workspace(db, roots)
    with ws.open_reader() as store:
        return navigate.list_documents(store, ws.config.roots, path_glob=path_glob,
                                       types=types, limit=limit, offset=offset,
                                       cwd=cwd)  # fmt: skip


def related(
    db: DbArg, target: str, *, top: int = 10, same_file: bool = False,
    roots: list[str] | None = None, cwd: Path | None = None,
) -> Related:  # fmt: skip
    """Nearest chunks by vector; see ``docindex related --help``."""
    from docindex.search import related as nearest

    ws = _nav_workspace(db, roots)
    with ws.open_reader() as store:
        return nearest.related(store, ws.config.roots, target, top=top,
                                same_file=same_file, cwd=cwd, cfg=ws.config,
                                cache_key=_file_state(ws.db))  # fmt: skip


def warm(db: DbArg, roots: list[str] | None = None) -> int:
    """Load what ``related`` reads into this process; see ``Index.warm``."""
    from docindex.search import related as nearest

    ws = _nav_workspace(db, roots)
    with ws.open_reader() as store:
        return nearest.warm(store, ws.config.roots, _file_state(ws.db))


def _file_state(db: Path | ServerUrl) -> tuple[str, ...] | None:
    """The index file's and its WAL's identity, size and mtime: what a write
    changes (issue #37: ``related`` keeps decoded vectors while it holds)."""
    if isinstance(db, ServerUrl):
        return None  # the server's rows can change without a file to watch
    state = [str(db)]
    for path in (db, db.with_name(db.name + "-wal")):
        try:
            st = path.stat()
        except OSError:
            state.append("-")
            continue
        # An empty WAL is no change: SQLite deletes and recreates it as
        # connections close and open.
        empty = st.st_size == 0 and path != db
        state.append("-" if empty else f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
    return tuple(state)


def index_vocabulary(db: DbArg, roots: list[str] | None = None) -> Vocabulary:
    """Types and front-matter facet values in the index (for MCP schema enums).

    Returns ``{"roots": [...], "types": [...], "facets": {key: [values]}}``;
    empty lists when no index exists yet.
    """
    from docindex.errors import IndexNotFoundError

    try:
        ws = _nav_workspace(db, roots)
    except IndexNotFoundError:
        return {"roots": [str(Path(r).resolve()) for r in roots or []], "types": [],
                "facets": {}}  # fmt: skip
    with ws.open_reader() as store:
        return {
            "roots": list(ws.config.roots),
            "types": sorted(store.kinds()),
            "facets": store.facet_values(),
        }


# -- roots and settings (issue #20) ---------------------------------------------


def roots_list(db: DbArg) -> RootsListing:
    """The index's roots with document counts; see ``docindex roots --help``."""
    from docindex.api import roots as rootsmod
    from docindex.api import trust
    from docindex.api.records import Relocated, RootsListing

    ws = workspace.load(db, reading=True)
    gate = trust.gate_roots(ws.db, ws.config.roots, ws.named)
    with ws.open_reader() as store:
        listed = rootsmod.list_roots(store, ws.config.roots, frozenset(gate.read))
        replica = store.replica
    moved = workspace.relocation(ws.db)
    return RootsListing(
        str(ws.db), listed,
        None if moved is None else Relocated(moved.old, moved.new, moved.fix()),
        replica,
    )  # fmt: skip


def settings(db: DbArg, near: list[str] | None = None) -> JSONObject:
    """Effective settings and where each comes from; see ``docindex config --help``."""
    from dataclasses import asdict

    from docindex import config as cfgmod

    places = [Path(p) for p in near or []]
    path = workspace.resolve_db(db, near=places)
    found = isinstance(path, ServerUrl) or (path is not None and path.is_file())
    if path is None:
        cfg, sources = (
            cfgmod.from_env(Config()),
            dict.fromkeys(cfgmod.FIELDS, "default"),
        )
        for name in cfgmod.env_fields():
            sources[name] = f"environment DOCINDEX_{name.upper()}"
        file = None
    else:
        cfg, sources = workspace.layered(path, read_from=workspace.read_url(db))
        file = cfgmod.config_file_for(path)
    values = asdict(cfg)
    from docindex.ingest.extract import ocr as ocrmod
    from docindex.ingest.prepare import ocr_settings

    engine = ocrmod.engine()
    wanted = ocr_settings(cfg)
    return {
        "db": {"path": None if path is None else str(path), "exists": found,
               "source": workspace.db_source(db, places) if path else "none found",
               "read_path": str(read) if (read := workspace.read_url(db)) else None},
        "config_file": None if file is None else str(file),
        "settings": {
            name: {"value": list(v) if isinstance(v, tuple) else v,
                   "source": sources[name]}
            for name, v in values.items()
        },
        "ocr": {
            "active": ocrmod.active(wanted),
            "engine": engine.version if engine else None,
            "installed": list(engine.installed) if engine else [],
            "languages": list(ocrmod.languages(wanted, engine)) if engine else [],
            "why_not": ocrmod.unavailable_message(wanted),
        },
    }  # fmt: skip


def export(
    db: DbArg, on_progress: ProgressFn | None = None
) -> Iterator[dict[str, object]]:
    """The index as NDJSON records (``docindex export``, issue #34)."""
    from docindex.api.transfer import export_records

    ws = workspace.load(db, reading=True, every_root=True)
    with ws.open_reader() as store, store.atomic(immediate=False):
        yield from export_records(store, on_progress)
