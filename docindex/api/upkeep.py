"""The commands that change the index besides a scan: ``vacuum``, ``roots
add/remove/move/accept`` and ``import`` (issue #49 split ``commands``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.api import workspace
from docindex.api.params import DbArg
from docindex.errors import MisuseError
from docindex.models import ProgressFn

if TYPE_CHECKING:
    from docindex.api.records import VacuumResult
    from docindex.api.roots import RootChange


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
