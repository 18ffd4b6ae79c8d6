"""The commands that read files into the index: ``scan``, ``reindex``, ``watch``.

Each resolves the workspace (``workspace.load``), keeps to the roots this user
accepted on this machine (``trust``, #44), waits for another writer politely
and calls the ingest side; no printing (issue #49 split ``commands``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.api import workspace
from docindex.api.params import DbArg, Overrides, ProgressArg, ProgressCallback
from docindex.config import Config
from docindex.errors import (
    DocindexError,
    MisuseError,
    OutsideRootsError,
    RelocatedIndexError,
)
from docindex.models import ScanResult
from docindex.store.location import ServerUrl

if TYPE_CHECKING:
    import threading

    from docindex.api.trust import RootGate
    from docindex.ingest.watch import BatchReport
    from docindex.store import Store


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
