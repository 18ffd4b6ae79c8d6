"""One function per user command, behind ``Index`` (``api/index.py``).

Each function resolves the workspace, opens the index, calls the core and
closes the index: one call per command, no printing. The CLI and the MCP
server reach these through ``Index``, as a script does.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.api import workspace
from docindex.config import Config
from docindex.errors import (
    DocindexError,
    MisuseError,
    OutsideRootsError,
    RelocatedIndexError,
)
from docindex.models import (
    Hit,
    Progress,
    ProgressFn,
    QueryOptions,
    QueryResult,
    ScanResult,
)
from docindex.store.location import ServerUrl

if TYPE_CHECKING:
    import threading

    from docindex.api.records import (
        IndexStats,
        RootsListing,
        SkippedFiles,
        VacuumResult,
        Vocabulary,
    )
    from docindex.api.roots import RootChange
    from docindex.api.trust import RootGate
    from docindex.ingest.watch import BatchReport
    from docindex.models.navigation import (
        DocumentList,
        Outline,
        Related,
        Section,
        Shown,
    )
    from docindex.models.serialize import JSONObject
    from docindex.store import Store

ProgressCallback = Callable[[Progress], None]
ProgressArg = ProgressCallback | AbstractContextManager[ProgressCallback | None] | None
# The settings a command-line flag may override (Config field -> value).
Overrides = dict[str, object]
# An index: a file path, a ServerUrl (never its masked string, #44), or None
# to find it by the usual rule.
DbArg = str | Path | ServerUrl | None


def scan(
    db: DbArg, *, path: Path | None = None, roots: list[str] | None = None,
    exclude: list[str] | None = None, force: bool = False, hidden: bool | None = None,
    follow_symlinks: bool | None = None, gitignore: bool | None = None,
    provider: str | None = None, progress: ProgressArg = None,
    stop: Callable[[], bool] | None = None, ocr: bool | None = None,
    on_notice: Callable[[str], None] | None = None,
) -> ScanResult:  # fmt: skip
    """Incremental scan; see ``docindex scan --help``. ``stop``: see indexer.scan.

    ``on_notice`` hears at once what a caller should know while the scan
    waits (another writer holds the index); the rest is in ``warnings``.
    """
    from docindex.api import trust
    from docindex.ingest.indexer import pin_roots

    overrides: Overrides = {}
    if hidden is not None:
        overrides["hidden"] = hidden
    if follow_symlinks is not None:
        overrides["follow_symlinks"] = follow_symlinks
    if gitignore is not None:
        overrides["use_gitignore"] = gitignore
    if provider:
        overrides["embedding_provider"] = provider
    if ocr is not None:
        overrides["ocr"] = ocr
    ws = workspace.load(
        db, overrides, extra_roots=roots, scan_path=path, must_exist=False
    )
    _refuse_relocated(ws)
    if exclude:
        ws = workspace.Workspace(
            ws.db, ws.config.replace(exclude=(*ws.config.exclude, *exclude)),
            ws.named, ws.held_back,
        )  # fmt: skip
    if not ws.config.roots:
        raise DocindexError("no roots to scan; pass a directory or --root DIR")
    gate = trust.gate_roots(ws.db, ws.config.roots, ws.named)
    scopes, missing = _scan_scopes(ws, gate, path)
    warnings = [w for w in (gate.notice(), _held_back_notice(ws)) if w]
    if not gate.read:
        ws.open(create=True).close()  # a read-only index says so first
        result = ScanResult()
        result.warnings.extend(warnings)
        return result
    # What this user named and the widening flags they gave are theirs to
    # keep: a later plain scan reads the same (issue #44).
    home = trust.home_root(ws.db)
    kept = trust.record(
        ws.db, roots=[r for r in ws.named if r != home],
        settings={k: v for k, v in overrides.items() if k in trust.WIDENING},
    )  # fmt: skip
    if kept:
        warnings.append(kept)
    result = _patiently(ws, gate, scopes, force, progress, stop, on_notice)
    result.warnings.extend(warnings)
    if not result.interrupted:
        with ws.open() as store:
            pin_roots(store, list(gate.read), keep=gate.left_out)
            result.warnings.extend(store.notices())
            if store.get_meta("location") != str(ws.db):
                # Where the index was written: a copy or move of its folder
                # shows as a different place later (workspace.relocation, #20).
                with store.atomic():
                    store.set_meta("location", str(ws.db))
    _root_warnings(result)
    if missing and not result.removed:
        raise MisuseError(f"{path} does not exist, and nothing under it was indexed")
    return result


def _scan_scopes(
    ws: workspace.Workspace, gate: RootGate, path: Path | None
) -> tuple[list[Path], bool]:
    """The paths a scan is limited to ([] = every root), and whether ``path``
    is missing. Roots this machine has not accepted are never walked (#44).

    Raises:
        OutsideRootsError: ``path`` lies outside the roots, or in one this
            machine has not accepted.
    """
    from docindex.ingest.indexer import resolve_scope

    roots_p = [Path(r) for r in ws.config.roots]
    missing = path is not None and not os.path.lexists(path)
    scopes: list[Path] = []
    if path is not None and not (
        len(roots_p) == 1 and Path(path).resolve() == roots_p[0]
    ):
        if missing and not any(_inside(Path(path), r) for r in roots_p):
            raise MisuseError(f"{path} does not exist")
        try:
            scopes.append(resolve_scope(roots_p, path))
        except OutsideRootsError:
            raise _outside(path, roots_p) from None
    for root in gate.left_out:
        if path is not None and _inside(Path(path), Path(root)):
            raise OutsideRootsError(
                f"{path} lies in the root {root}, which this machine has not "
                f"accepted; to read it here, run "
                f"`docindex roots accept {shlex.quote(root)}`"
            )
    if gate.left_out and not scopes:
        scopes = [Path(r) for r in gate.read]
    return scopes, missing


def _outside(path: Path, roots_p: list[Path]) -> OutsideRootsError:
    """``path`` is outside the roots: the command that adds it (#38)."""
    folder = path if Path(path).is_dir() else Path(path).parent
    above = Path(path).resolve()
    held = [r for r in roots_p if above in r.parents] if above.is_dir() else []
    if held:  # the folder above a root: `scan --root` would refuse (#38)
        return OutsideRootsError(_above_roots(path, held))
    return OutsideRootsError(
        f"{path} is outside the index's roots "
        f"({', '.join(map(str, roots_p)) or 'none yet'}); to add its folder as a "
        f"root and scan it, run `docindex scan --root {shlex.quote(str(folder))}`"
    )


def _held_back_notice(ws: workspace.Workspace) -> str | None:
    """The index's widening settings this machine did not apply, in one line."""
    if not ws.held_back:
        return None
    from docindex.api import trust

    return (
        "the index's settings would read more than this machine's: "
        f"{trust.describe(ws.held_back, ws.config)} (set on another machine, by "
        "another user, or by an earlier docindex); files they indexed are kept, "
        "none is read here. To read them here too, pass the flag (e.g. `docindex "
        "scan --hidden`) or set them in your DOCINDEX_CONFIG file"
    )


def _patiently(
    ws: workspace.Workspace, gate: RootGate, scopes: list[Path], force: bool,
    progress: ProgressArg, stop: Callable[[], bool] | None,
    on_notice: Callable[[str], None] | None,
) -> ScanResult:  # fmt: skip
    """The core scan, once the index is free: a scan that meets another
    writer says so once and waits for it (``stop`` ends the wait), so two
    scans at once both finish (issue #44)."""
    import time

    from docindex.errors import IndexBusyError
    from docindex.ingest.indexer import scan as core_scan

    said = False
    # Short attempts: the wait is said within a second, and Ctrl-C ends it.
    quick = workspace.Workspace(
        ws.db, ws.config.replace(busy_timeout_s=min(ws.config.busy_timeout_s, 1.0)),
        ws.named, ws.held_back,
    )  # fmt: skip
    while True:
        try:
            with (
                quick.open(create=True) as store,
                _progress_ctx(progress) as on_progress,
            ):
                return core_scan(store, ws.config, scopes=scopes, force=force,
                                 on_progress=on_progress, bulk=True, stop=stop,
                                 keep_present=bool(ws.held_back))  # fmt: skip
        except IndexBusyError:
            if stop is not None and stop():
                result = ScanResult()
                result.interrupted = True
                return result
            if not said and on_notice is not None:
                on_notice(
                    f"another docindex is writing {ws.db}; waiting for it to "
                    "finish (Ctrl-C to stop waiting)"
                )
            said = True
            time.sleep(0.2)


def _root_warnings(result: ScanResult) -> None:
    """A missing root's error as a warning with the commands that fix it."""
    for err in result.errors:
        if err["reason"] == "missing-root" and err["message"].startswith("root /"):
            result.warnings.append(err["message"])  # changed identity (#33)
        elif err["reason"] == "missing-root":
            root = shlex.quote(err["path"])
            result.warnings.append(
                f"root {err['path']} no longer exists; its documents are kept. If "
                f"it moved, run `docindex roots move {root} NEW`; to forget it, "
                f"`docindex roots remove {root}`"
            )


def _refuse_relocated(ws: workspace.Workspace) -> None:
    """A write to an index whose folder was copied or moved would index the old place."""
    moved = workspace.relocation(ws.db)
    if moved is not None and moved.old in ws.config.roots:
        gone = "" if Path(moved.old).is_dir() else ", which no longer exists"
        raise RelocatedIndexError(
            f"the index in {moved.new} was made for {moved.old}{gone}: the folder "
            f"was copied or moved. Run `{moved.fix()}` to make the index follow it "
            "(nothing is re-indexed)"
        )


def _inside(path: Path, root: Path) -> bool:
    target = path.resolve()
    return target == root or root in target.parents


def _above_roots(path: str | Path, held: list[Path]) -> str:
    """``scan TOP`` where TOP holds roots: the commands after which it works.

    Run as printed, then the user's own ``scan TOP`` indexes all of TOP (#45:
    it said `roots remove` and `scan --root`, and the scan of TOP that the
    user ran next still found TOP outside the roots).
    """
    top = shlex.quote(str(Path(path).resolve()))
    steps = [f"`docindex roots remove {shlex.quote(str(r))}`" for r in held]
    steps.append(f"`docindex roots add {top}`")
    return (
        f"{path} holds the root {held[0]}; to index all of it, run "
        + " and ".join(steps)
        + ", then this scan again"
    )


def _progress_ctx(
    progress: ProgressArg,
) -> AbstractContextManager[ProgressCallback | None]:
    """A callback, a context manager yielding one, or None, as a context manager."""
    if progress is None or isinstance(progress, AbstractContextManager):
        return progress if progress is not None else nullcontext()
    return nullcontext(progress)


def reindex(
    db: DbArg, *, path: Path | None = None, full: bool = False,
    provider: str | None = None, progress: ProgressArg = None,
    stop: Callable[[], bool] | None = None,
    roots: list[str] | None = None,
) -> ScanResult:  # fmt: skip
    """Force re-reading files; with ``full`` rebuild the index file from scratch.

    A full rebuild writes a new file beside the old one and swaps it in with
    an atomic rename, so an interrupted rebuild leaves the old index intact
    (and the next ``reindex --full`` continues the new one).
    """
    overrides: Overrides = {}
    if provider:
        overrides["embedding_provider"] = provider
    if not full:
        return scan(db, path=path, force=True, provider=provider, progress=progress,
                    roots=roots, stop=stop)  # fmt: skip
    import sqlite3

    from docindex.errors import IndexCorruptError, IndexNotFoundError
    from docindex.store import translate

    try:
        try:
            ws = workspace.load(db, overrides, extra_roots=roots, must_exist=True)
        except sqlite3.DatabaseError as exc:  # damaged past the header (#17)
            where = workspace.resolve_db(db)
            raise translate(exc, where if isinstance(where, Path) else "") from exc
    except IndexCorruptError:
        # Its roots and settings live in the damaged file (issue #8); a rebuild
        # needs them from elsewhere: --root, or the folder that holds the
        # index's default place (issue #20: the suggested command must work).
        ws = _rebuild_workspace(db, overrides, roots)
    if isinstance(ws.db, ServerUrl):
        return _rebuild_on_server(ws, progress, stop)
    if not ws.config.roots:  # e.g. a 0-byte file: nothing says what to rebuild
        raise IndexNotFoundError(
            f"index {ws.db} records no roots to rebuild; run "
            f"`docindex reindex --full --root DIR --db {shlex.quote(str(ws.db))}`"
        )
    tmp = ws.db.with_name(ws.db.name + ".rebuild")
    from docindex.ingest.indexer import scan as core_scan
    from docindex.store import Store

    if not _resumable(tmp, ws.config):
        # A first scan writes with a rollback journal (Store.bulk_journal): a
        # stale -journal must never meet a new file of the same name.
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    with Store.open(tmp, create=True, busy_timeout=ws.config.busy_timeout_s) as store, \
            _progress_ctx(progress) as on_progress:  # fmt: skip
        result = core_scan(store, ws.config, on_progress=on_progress, bulk=True,
                           stop=stop)  # fmt: skip
        store.checkpoint()
    if result.interrupted:
        return result  # the old index stays; the rebuild resumes next time
    # Take the write lock on the old index while swapping, so no writer is lost.
    try:
        old = Store.open(ws.db, busy_timeout=ws.config.busy_timeout_s)
    except IndexCorruptError:
        os.replace(tmp, ws.db)  # nobody can write a damaged index anyway
    else:
        with old, old.atomic():
            os.replace(tmp, ws.db)
    for side in (Path(f"{ws.db}-wal"), Path(f"{ws.db}-shm")):
        side.unlink(missing_ok=True)
    return result


def _rebuild_on_server(
    ws: workspace.Workspace, progress: ProgressArg, stop: Callable[[], bool] | None
) -> ScanResult:
    """``reindex --full`` on PostgreSQL: this host's roots re-read in one
    transaction; readers keep the old index until it commits (issue #34)."""
    from docindex.ingest.indexer import scan as core_scan

    with ws.open(create=True) as store, _progress_ctx(progress) as on_progress:
        with store.atomic():
            store.clear_roots(list(ws.config.roots))  # type: ignore[attr-defined]
            return core_scan(store, ws.config, on_progress=on_progress, stop=stop)


def _rebuild_workspace(
    db: DbArg, overrides: Overrides, roots: list[str] | None
) -> workspace.Workspace:
    """Settings for rebuilding a damaged index: defaults, file, env, flags, roots."""
    from docindex import config as cfgmod
    from docindex.errors import IndexCorruptError

    path = workspace.resolve_db(db, near=[Path(r) for r in roots or []])
    assert isinstance(path, Path)  # load() found a file to be damaged
    if not roots and path.parent.name == cfgmod.DEFAULT_DB_DIR:
        roots = [str(path.parent.parent)]
    if not roots:
        raise IndexCorruptError(
            f"index {path} is damaged and its roots cannot be read; rebuild it "
            f"with `docindex reindex --full --root DIR --db {shlex.quote(str(path))}`"
        )
    cfg = cfgmod.from_env(Config())
    file = cfgmod.config_file_for(path)
    if file is not None:
        cfg = cfgmod.from_env(cfgmod.load_file(file, Config()))
    changes = dict(overrides)
    changes["roots"] = tuple(workspace.canonical_roots(roots))
    return workspace.Workspace(path, cfg.replace(**changes))


def _resumable(tmp: Path, cfg: Config) -> bool:
    """True when ``tmp`` is an interrupted rebuild with exactly ``cfg``'s settings.

    Its scan phase commits the files it finished (all of them unless it was
    interrupted, issue #17) and neural vectors commit in batches (issue #9),
    so continuing it redoes no finished work; any doubt
    (damaged, other roots or settings) starts the rebuild afresh.
    """
    if not tmp.is_file():
        return False
    import sqlite3

    from docindex.errors import DocindexError
    from docindex.ingest.indexer import check_settings
    from docindex.store import Store

    try:
        with Store.open(tmp, busy_timeout=cfg.busy_timeout_s) as store:
            check_settings(store, cfg)
            return bool(
                store.get_meta("settings") == cfg.index_settings()
                and store.get_meta("embedder") is not None
                and sorted(store.roots().values()) == sorted(map(str, cfg.roots))
            )
    except (DocindexError, sqlite3.Error, OSError):
        return False


def _signed(text: str | None, opts: QueryOptions) -> dict[str, object]:
    """What a cursor is signed with: the query text and the options that shape it."""
    return {"query": text, "mode": opts.mode, "types": opts.types,
            "path_glob": opts.path_glob, "where": opts.where, "files": opts.files,
            "min_score": opts.min_score, "per_doc": opts.per_doc,
            "roots": opts.roots}  # fmt: skip


def _scoped(
    ws: workspace.Workspace, opts: QueryOptions, cwd: Path | None
) -> QueryOptions:
    """``path_glob`` and ``roots`` as the index stores them (issue #38).

    ``--path`` follows ``navigate.path_scope`` (absolute, cwd-relative or
    root-relative; outside every root is an error); ``--root`` must name
    roots of the index.
    """
    from dataclasses import replace

    roots = list(ws.config.roots)
    chosen: list[str] = []
    for given in opts.roots:
        full = workspace.canonical(given)
        if full not in roots:
            raise MisuseError(
                f"--root {given} is not a root of the index ({', '.join(roots)}); "
                "limit to a folder inside one with --path"
            )
        chosen.append(full)
    path = opts.path_glob
    if path:
        from docindex.search.navigate import path_scope

        scope = path_scope(chosen or roots, path, cwd)
        path = scope.pattern or None
        if scope.root is not None:
            chosen = [scope.root]
    return replace(opts, path_glob=path, roots=tuple(chosen))


def _with_cursor(
    opts: QueryOptions, cursor: str | None, text: str | None
) -> QueryOptions:
    if not cursor:
        return opts
    from dataclasses import replace

    from docindex.models.limits import check_length
    from docindex.search.cursor import decode_cursor

    check_length("cursor", cursor, 1024)
    # The cursor was signed with the query text (see _add_cursor).
    return replace(opts, offset=decode_cursor(cursor, _signed(text, opts)))


def query(
    db: DbArg, text: str, options: QueryOptions, *, cursor: str | None = None,
    cwd: Path | None = None,
) -> QueryResult:  # fmt: skip
    """Run one query; see ``docindex query --help``.

    ``cwd``: the folder relative ``--path`` values start from (the CLI's).
    """
    from docindex.search.engine import (  # not for a scan, which never searches (#24)
        parse,
        search,
    )

    ws = workspace.load(db, reading=True, every_root=True)
    try:
        opts = _with_cursor(_scoped(ws, options, cwd), cursor, text)
    except BaseException:
        ws.close_reader()
        raise
    with _open_for_reading(ws) as store:
        # One read transaction: a query that spans a scan's commit would find
        # FTS rowids in the old snapshot and their segments gone in the new (#8).
        with store.atomic(immediate=False):
            result = search(store, parse(text, ws.config), ws.config, opts)
            _note_pending(store, result)
    _add_cursor(result, opts)
    return result


def _note_pending(store: Store, result: QueryResult) -> None:
    """An interrupted ``scan --force`` left documents to be found by meaning only."""
    pending = store.get_meta("fts_pending")
    if pending:
        result.degraded = True
        if result.hint is None:
            result.hint = {
                "unmatched_words": [], "filtered_out": False, "would_match": {},
                "suggestion": f"{len(pending)} documents are found by meaning only "
                "until the interrupted scan is run again",
            }  # fmt: skip


def batch_query(
    db: DbArg, lines: Iterable[str], options: QueryOptions,
    *, cwd: Path | None = None,
) -> Iterator[QueryResult]:  # fmt: skip
    """Run many queries over one open index (``--queries``), in order."""
    from docindex.errors import BadInputError
    from docindex.search.engine import parse, search

    ws = workspace.load(db, reading=True, every_root=True)
    try:
        options = _scoped(ws, options, cwd)
    except BaseException:
        ws.close_reader()
        raise
    with _open_for_reading(ws) as store:
        for number, line in enumerate(lines, 1):
            try:
                with store.atomic(immediate=False):  # one snapshot per query
                    result = search(store, parse(line, ws.config), ws.config, options)
            except BadInputError as exc:
                raise BadInputError(f"line {number}: {exc}") from None
            _add_cursor(result, options)
            yield result


def _add_cursor(result: QueryResult, opts: QueryOptions) -> None:
    if result.next_offset is not None:
        from docindex.search.cursor import encode_cursor

        signed = _signed(result.query, opts)
        result.next_cursor = encode_cursor(result.next_offset, signed)


def _open_for_reading(ws: workspace.Workspace) -> Store:
    """The index for a reading command (``Workspace.open_reader``)."""
    return ws.open_reader()


_readonly_ok = workspace.readonly_ok


def stats(db: DbArg) -> IndexStats:
    """What the index holds."""
    from docindex.api.records import FacetCount, IndexStats
    from docindex.ingest.settings import tokenizer_notice

    ws = workspace.load(db, reading=True, every_root=True)
    with ws.open(readonly=_readonly_ok(ws.db)) as store:
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


def vacuum(db: DbArg, *, ocr_cache: bool = False) -> VacuumResult:
    """Merge the FTS index and give free pages back (``docindex vacuum``, #22).

    ``ocr_cache`` also empties the user's OCR text cache (#45).

    Raises:
        IndexBusyError: a scan or a watcher is writing the index; nothing changed.
    """
    from docindex.api.records import VacuumResult

    ws = workspace.load(db)
    with ws.open() as store:
        done = store.vacuum()
        left = store.space().reclaimable_bytes
    removed = freed = 0
    if ocr_cache:
        from docindex.config import cache_dir
        from docindex.ingest.extract.ocr import prune_cache

        pruned = prune_cache(cache_dir(), 0)
        removed, freed = pruned.removed, pruned.freed_bytes
    return VacuumResult(
        db=str(ws.db), before_bytes=done.before_bytes, after_bytes=done.after_bytes,
        reclaimed_bytes=max(0, done.before_bytes - done.after_bytes),
        reclaimable_bytes=left, took_ms=done.took_ms,
        ocr_cache_removed=removed, ocr_cache_freed_bytes=freed,
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
    with ws.open(readonly=_readonly_ok(ws.db)) as store:
        return SkippedFiles(store.skip_counts(), store.skipped(reason))


def watch(
    db: DbArg, *, roots: list[str] | None = None, debounce_ms: int = 300,
    on_batch: Callable[[BatchReport], None], stop_event: threading.Event,
    on_notice: Callable[[str], None] | None = None,
    on_start: Callable[[Path | ServerUrl, list[str]], None] | None = None,
) -> None:  # fmt: skip
    """Keep the index current until ``stop_event`` is set; see ``docindex watch --help``.

    The index is created if missing (with ``--root``). Its store uses a short
    busy timeout so a batch that meets another writer is retried, not stuck.
    """
    from docindex.api import trust
    from docindex.errors import DocindexError
    from docindex.ingest.watch import watch as core_watch
    from docindex.store import Store
    from docindex.store.lock import watch_lock

    ws = workspace.load(db, extra_roots=roots, must_exist=False)
    _refuse_relocated(ws)
    busy = min(ws.config.busy_timeout_s, 2.0)
    # Only the roots this user accepted on this machine are watched (#44).
    gate = trust.gate_roots(ws.db, ws.config.roots, ws.named)
    if not gate.read:
        raise DocindexError(gate.notice() or "no roots to watch; pass --root DIR")
    for line in (gate.notice(), _held_back_notice(ws),
                 trust.record(ws.db, roots=[r for r in ws.named
                                            if r != trust.home_root(ws.db)])):  # fmt: skip
        if line and on_notice is not None:
            on_notice(line)
    cfg = ws.config.replace(roots=gate.read)

    def open_store() -> Store:
        if isinstance(ws.db, ServerUrl):
            quick = ws.config.replace(busy_timeout_s=busy)
            return workspace.Workspace(ws.db, quick).open(create=True)
        return Store.open(ws.db, create=True, busy_timeout=busy,
                          private=ws.config.private_index)  # fmt: skip

    import contextlib

    if isinstance(ws.db, Path) and ws.db.is_file():  # read-only: say so first
        open_store().close()
    # One watcher per index file (issue #38); a server index takes many writers.
    lock = (
        contextlib.nullcontext() if isinstance(ws.db, ServerUrl) else watch_lock(ws.db)
    )
    with lock:
        if on_start is not None:
            on_start(ws.db, list(cfg.roots))
        core_watch(open_store, cfg, debounce_ms=debounce_ms,
                   on_batch=on_batch, stop_event=stop_event,
                   on_notice=on_notice,
                   keep_present=bool(ws.held_back))  # fmt: skip


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
    with _open_for_reading(ws) as store:
        return navigate.outline(store, ws.config.roots, file, depth=depth, cwd=cwd)


def show(
    db: DbArg, target: str, *, context: int = 0, roots: list[str] | None = None,
    cwd: Path | None = None,
) -> Shown:  # fmt: skip
    """A chunk and its neighbours; see ``docindex show --help``."""
    from docindex.search import navigate

    ws = _nav_workspace(db, roots)
    with _open_for_reading(ws) as store:
        return navigate.show(store, ws.config.roots, target, context=context, cwd=cwd)


def section(
    db: DbArg, file: str, heading: str, *, include_subsections: bool = True,
    roots: list[str] | None = None, cwd: Path | None = None,
) -> Section:  # fmt: skip
    """One heading's section; see ``docindex section --help``."""
    from docindex.search import navigate

    ws = _nav_workspace(db, roots)
    with _open_for_reading(ws) as store:
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
    with _open_for_reading(ws) as store:
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
    with _open_for_reading(ws) as store:
        return nearest.related(store, ws.config.roots, target, top=top,
                                same_file=same_file, cwd=cwd, cfg=ws.config,
                                cache_key=_file_state(ws.db))  # fmt: skip


def warm(db: DbArg, roots: list[str] | None = None) -> int:
    """Load what ``related`` reads into this process; see ``Index.warm``."""
    from docindex.search import related as nearest

    ws = _nav_workspace(db, roots)
    with _open_for_reading(ws) as store:
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
    with _open_for_reading(ws) as store:
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
    with _open_for_reading(ws) as store:
        listed = rootsmod.list_roots(store, ws.config.roots, frozenset(gate.read))
        replica = store.replica
    moved = workspace.relocation(ws.db)
    return RootsListing(
        str(ws.db), listed,
        None if moved is None else Relocated(moved.old, moved.new, moved.fix()),
        replica,
    )  # fmt: skip


def roots_change(
    db: DbArg, action: str, path: str, new: str | None = None
) -> RootChange:
    """``roots add PATH``, ``roots remove PATH``, ``roots move PATH NEW`` or
    ``roots accept PATH``.

    What this user adds, moves to or accepts is read by their later scans on
    this machine; what they remove is forgotten here too (issue #44).

    Raises:
        MisuseError: the roots come from a config file or DOCINDEX_ROOTS
            (edit those instead), or the path is not a root / not a folder.
    """
    from docindex.api import roots as rootsmod
    from docindex.api import trust

    ws = workspace.load(db)
    if action == "accept":
        change = rootsmod.accept(ws.config, path)
        return _noted(change, trust.record(ws.db, roots=[change.root]))
    _, sources = workspace.layered(ws.db)
    if sources["roots"] not in ("default", "index"):
        raise MisuseError(
            f"the roots come from the {sources['roots']}; change them there"
        )
    with ws.open() as store:
        if action == "add":
            change = rootsmod.add(store, ws.config, path)[1]
            return _noted(change, trust.record(ws.db, roots=[change.root]))
        if action == "remove":
            change = rootsmod.remove(store, ws.config, path)[1]
            return _noted(change, trust.record(ws.db, forget=[change.root]))
        assert new is not None
        change = rootsmod.move(store, ws.config, path, new, db=ws.db)[1]
    gone = [change.old] if change.old and change.old != change.root else []
    return _noted(change, trust.record(ws.db, roots=[change.root], forget=gone))


def _noted(change: RootChange, notice: str | None) -> RootChange:
    """``change`` with the warning of a state file that cannot be written."""
    from dataclasses import replace

    return replace(change, notice=notice) if notice else change


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


def hit_lines(
    db: DbArg, hits: list[Hit], context: int, *, whole_chunk: bool = False
) -> list[list[tuple[int, str]]]:
    """Each hit's line with ``context`` lines either side, from the indexed text.

    For ``query --context N`` and ``--vimgrep`` (``whole_chunk``: every line of
    the hit's segment). Lines are (number, text), numbered as the hit's
    ``line`` is (within its page or slide for PDF and PPTX), and come from
    the text the index holds.
    """
    ws = workspace.load(db, reading=True, every_root=True)
    out: list[list[tuple[int, str]]] = []
    with _open_for_reading(ws) as store:
        bodies: dict[int, list[str]] = {}
        for hit in hits:
            rows = [
                r
                for r in store.segments_by_chunk_id(hit.chunk_id)
                if r.root == hit.root
            ]
            if not rows:
                out.append([])
                continue
            seg = rows[0]
            if seg.doc_id not in bodies:
                bodies[seg.doc_id] = store.body(seg.doc_id).split("\n")
            lines = bodies[seg.doc_id]
            # The segment's first line in the whole text; its start_line may
            # count from the top of a page instead.
            first = sum(1 for _ in _newlines(lines, seg.char_start)) + 1
            shift = first - hit.start_line
            if whole_chunk:
                lo, hi = first, first + (hit.end_line - hit.start_line)
            else:
                lo, hi = hit.line + shift - context, hit.line + shift + context
            lo, hi = max(1, lo, 1 + shift), min(len(lines), hi)  # not before the page
            out.append([(n - shift, lines[n - 1]) for n in range(lo, hi + 1)])
    return out


def _newlines(lines: list[str], offset: int) -> Iterator[None]:
    """One item per line break before character ``offset`` of the joined text."""
    seen = 0
    for line in lines:
        seen += len(line) + 1
        if seen > offset:
            return
        yield None


def export(
    db: DbArg, on_progress: ProgressFn | None = None
) -> Iterator[dict[str, object]]:
    """The index as NDJSON records (``docindex export``, issue #34)."""
    from docindex.api.transfer import export_records

    ws = workspace.load(db, reading=True, every_root=True)
    with _open_for_reading(ws) as store, store.atomic(immediate=False):
        yield from export_records(store, on_progress)


def import_(
    db: DbArg, lines: Iterable[str], on_progress: ProgressFn | None = None
) -> dict[str, int]:
    """Load an export into a new index (``docindex import``, issue #34)."""
    from docindex.api.transfer import import_records

    ws = workspace.load(db, must_exist=False, scan_path=None)
    made = isinstance(ws.db, Path) and not ws.db.exists()
    try:
        with ws.open(create=True) as store:
            counts = import_records(store, ws.config, lines, on_progress)
            store.tidy_fts()  # as after a scan (PostgreSQL: the postings btrees)
            return counts
    except BaseException:
        if made and isinstance(ws.db, Path):  # a refused import leaves no file (#44)
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{ws.db}{suffix}").unlink(missing_ok=True)
        raise
