"""One batch of changed paths applied to the index (issue #5): an incremental
scan limited to them, gone over again while the tree still moves, and what it
changed (``BatchReport``). Split from ``watch`` (#49).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from docindex.config import Config
from docindex.errors import IndexBusyError, IndexUnreachableError
from docindex.ingest._debounce import Batch
from docindex.ingest.reconnect import Link
from docindex.store import Store

BUSY_RETRY_S = 1.0


# Vanishing files during a walk are races the next event fixes, not errors.
_RACES = (
    "file vanished during the walk", "file vanished before it was read", "does not exist",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class BatchReport:
    """What one applied batch changed, as printed by ``docindex watch --json``."""

    kind: str  # "catch-up", "changes" or "fallback"
    paths: int
    added: int
    updated: int
    removed: int
    errors: list[dict[str, str]] = field(default_factory=list)
    took_ms: float = 0.0
    fallback: str | None = None


def apply_retrying(
    link: Link, cfg: Config, batch: Batch, kind: str, stop_event: threading.Event,
    notice: Callable[[str], None], keep_present: bool,
) -> tuple[BatchReport, bool] | None:  # fmt: skip
    # A catch-up scan can be long: a signal stops it between files (#17).
    stop = stop_event.is_set if kind == "catch-up" else None
    while True:
        try:
            return apply_batch(link.store, cfg, batch, kind, stop, keep_present)
        except IndexUnreachableError as exc:
            if not link.renew(exc):
                return None
        except IndexBusyError:
            notice("index is busy (another docindex is writing); retrying")
            if stop_event.wait(BUSY_RETRY_S):
                return None


def apply_batch(
    store: Store, cfg: Config, batch: Batch, kind: str,
    stop: Callable[[], bool] | None = None, keep_present: bool = False,
    yield_to: Callable[[], bool] | None = None,
) -> tuple[BatchReport, bool]:  # fmt: skip
    """Apply one batch; the flag says the tree kept moving under every attempt."""
    from docindex.ingest.indexer import scan

    if kind == "changes" and cfg.workers != 1:
        # A process pool costs more to start than a few hundred changed files
        # take to prepare here; catch-up and fallback scans keep it.
        cfg = cfg.replace(workers=1)
    started = time.perf_counter()
    added = updated = removed = 0
    raced = False
    errors: list[dict[str, str]] = []
    for _attempt in range(3):
        result = scan(store, cfg, scopes=[Path(p) for p in batch.paths], stop=stop,
                      keep_present=keep_present, yield_to=yield_to)  # fmt: skip
        added, updated = added + result.indexed, updated + result.updated
        errors = [e for e in result.errors if not _raced(e)]
        if result.interrupted:  # a signal during a catch-up scan (#33)
            break
        removed += result.removed
        # A folder that vanished during the walk makes the scan skip pruning
        # (it cannot tell it from an unreadable folder), so go over the batch
        # again while the tree still moves under us.
        raced = any(_blocks_prune(e) and not os.path.lexists(e["path"])
                    for e in result.errors)  # fmt: skip
        if not raced:
            break
    took = round((time.perf_counter() - started) * 1000, 1)
    report = BatchReport(kind, len(batch.paths), added, updated, removed, errors, took,
                         batch.fallback)  # fmt: skip
    return report, raced


def _blocks_prune(error: dict[str, str]) -> bool:
    """The errors on which ``indexer.scan`` skips removing unseen documents."""
    return error.get("reason") == "error" and "directory" in error.get("message", "")


def _raced(error: dict[str, str]) -> bool:
    """An error caused by a path vanishing mid-walk (its own event follows)."""
    return error.get("message") in _RACES or not os.path.lexists(error.get("path", ""))
