"""Keep an index current from file-system events (issue #5).

Two layers. :class:`Coalescer` is pure: it takes raw events with their time,
filters them through an ``accept`` predicate (the walk's exclude rules, see
:class:`PathFilter`), coalesces them per path and hands out batches of paths
once the debounce window has passed; it never reads the clock or the disk.
:func:`watch` is the adapter: a watchdog observer feeds a queue, the calling
thread drains it into the coalescer and applies each batch with the ordinary
incremental :func:`docindex.indexer.scan` limited to the batch's paths (a path
that no longer exists removes what was indexed under it). Each batch is one
short transaction, so readers (WAL) and other writers (busy timeout) go on.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import cast

from docindex.config import Config
from docindex.errors import DocindexError, IndexBusyError, IndexUnreachableError
from docindex.ingest._debounce import Batch, Coalescer, RawEvent
from docindex.ingest.changes import (
    BUSY_RETRY_S,
    BatchReport,
    apply_batch,
    apply_retrying,
)
from docindex.ingest.observer import STOP, LogTap, RootObserver, Sink
from docindex.ingest.pathfilter import PathFilter, indexed_paths, own_files
from docindex.ingest.reconnect import Link
from docindex.models import ScanResult
from docindex.store import Store

__all__ = [
    "Batch",
    "BatchReport",
    "Coalescer",
    "PathFilter",
    "RawEvent",
    "own_files",
    "watch",
]

RULES_FILE = ".gitignore"
HEALTH_INTERVAL_S = 2.0  # how often to check the observer and vanished roots
PING_INTERVAL_S = 10.0  # how often an idle watch asks its index server (#44)


def watch(
    open_store: Callable[[], Store], cfg: Config, *, debounce_ms: int = 300,
    on_batch: Callable[[BatchReport], None], stop_event: threading.Event,
    on_notice: Callable[[str], None] | None = None, max_batch: int = 256,
    keep_present: bool = False,
) -> None:  # fmt: skip
    """Catch up with an incremental scan, then apply file-system changes until stopped.

    Args:
        open_store: opens the index (called once, in this thread).
        cfg: settings; ``cfg.roots`` are the (absolute) roots to watch.
        debounce_ms: quiet time before a batch of changes is applied.
        on_batch: called with a BatchReport after each applied batch.
        stop_event: set it to stop; pending changes are applied first. It is
            set when this function returns.
        on_notice: called with warnings (busy index, fallbacks, dropped work).
        max_batch: most paths per transaction.
        keep_present: see ``indexer.scan`` (issue #44).

    A server index whose server goes away is opened again (``reconnect``),
    then caught up with a scan.

    Raises:
        DocindexError: the index cannot be opened or its settings differ.
        IndexUnreachableError: its server stayed away past
            ``cfg.reconnect_timeout_s``.
    """
    notice = on_notice or (lambda msg: None)
    roots = [str(Path(r)) for r in cfg.roots]
    if not roots:
        raise DocindexError("no roots to watch; pass --root DIR")
    q: queue.SimpleQueue[object] = queue.SimpleQueue()
    clock = time.monotonic
    obs = RootObserver(roots, Sink(q, clock))
    tap = LogTap(q)
    wd_log = logging.getLogger("watchdog")
    link = Link(open_store, notice=notice, stop_event=stop_event,
                limit_s=cfg.reconnect_timeout_s)  # fmt: skip
    store = link.store
    wd_log.addHandler(tap)

    def _wake_on_stop() -> None:
        stop_event.wait()
        q.put(STOP)

    threading.Thread(
        target=_wake_on_stop, daemon=True, name="docindex-watch-stop"
    ).start()
    # watchdog warns from its own thread when a moved folder's watch is added
    # again; harmless, and it would be noise on stderr (an error under pytest).
    warnings.filterwarnings("ignore", "Callback with id", RuntimeWarning, "watchdog")
    try:
        # A server index (issue #34) has no files among the roots.
        path = store.path if isinstance(store.path, Path) else None
        own = own_files(path) + own_files(path.resolve()) if path else []
        filt = PathFilter(roots, cfg, own)
        co = Coalescer(
            debounce_ms / 1000, max_batch=max_batch, accept=filt.accept, roots=roots
        )
        # Observe first, then catch up: a change during the scan is applied after it.
        for root, reason in obs.start():
            notice(f"{root}: {reason}")
        done = apply_retrying(link, cfg, Batch(()), "catch-up", stop_event, notice,
                               keep_present)  # fmt: skip
        if done is not None:
            on_batch(done[0])
            if done[1]:
                co.add_fallback(None, "files changed during the catch-up scan", clock())
        _loop(link, cfg, q, co, filt, obs, clock, stop_event, on_batch, notice,
              keep_present)  # fmt: skip
    finally:
        stop_event.set()
        wd_log.removeHandler(tap)
        obs.stop()
        link.close()


def _loop(
    link: Link, cfg: Config, q: queue.SimpleQueue[object], co: Coalescer,
    filt: PathFilter, obs: RootObserver, clock: Callable[[], float],
    stop_event: threading.Event, on_batch: Callable[[BatchReport], None],
    notice: Callable[[str], None], keep_present: bool,
) -> None:  # fmt: skip
    next_health = clock() + HEALTH_INTERVAL_S
    next_ping = clock() + PING_INTERVAL_S
    stopping = False
    vectors_due = True  # a deferred embedder may have work left (issue #47)
    while not stopping:
        if vectors_due and co.next_deadline() is None:
            vectors_due = _embed_while_idle(link.store, cfg, q, stop_event, notice)
        deadline = co.next_deadline()
        wake = next_health if deadline is None else min(deadline, next_health)
        for item in _take(q, max(0.0, wake - clock())):
            if item is STOP:
                stopping = True
            else:
                _feed(item, co, filt, obs, clock(), notice)
        now = clock()
        if now >= next_health:
            next_health = now + HEALTH_INTERVAL_S
            pinged = _check_health(link, co, obs, clock, now, next_ping, stopping)
            if pinged is None:
                return
            next_ping = pinged
        batches = co.flush() if stopping else []
        batch = None if stopping else co.due(now)
        while batch is not None or batches:
            todo: Batch = batch if batch is not None else batches.pop(0)
            batch = None
            kind = "fallback" if todo.fallback else "changes"
            try:
                if todo.maybe:
                    todo = Batch(
                        todo.paths + indexed_paths(link.store, filt, todo.maybe)
                    )
                if not todo.paths:
                    batch = None if stopping else co.due(clock())
                    continue
                if todo.fallback and todo.paths[0] in obs.rearm:
                    obs.rebuild(todo.paths[0])  # before the scan: nothing slips by
                # A deferred embedder's vectors wait while changes are queued:
                # the lexical rows are committed first (issue #47).
                report, raced = apply_batch(link.store, cfg, todo, kind,
                                       keep_present=keep_present,
                                       yield_to=lambda: not q.empty())  # fmt: skip
            except IndexUnreachableError as exc:
                # The server restarted or failed over (issue #44): open the
                # index again, then go over this batch and every root.
                if stopping or not link.renew(exc):
                    notice(f"{exc}; {len(todo.paths)} pending path(s) not applied")
                    return
                co.defer(todo, clock())
                co.add_fallback(None, "reconnected to the index", clock())
                continue
            except IndexBusyError:
                if stopping:
                    dropped = len(todo.paths) + sum(len(b.paths) for b in batches)
                    notice(f"index is busy; dropped {dropped} pending path(s)")
                    return
                notice(f"index is busy; retrying {len(todo.paths)} path(s) shortly")
                co.defer(todo, clock() + BUSY_RETRY_S)
                continue
            except DocindexError as exc:
                report, raced = _failed(kind, todo, exc), False
            on_batch(report)
            vectors_due = True
            if raced and not stopping:
                # Its removals were not pruned: go over these paths again.
                co.defer(todo, clock() + co.debounce_s)
            elif raced:
                notice(f"files kept changing; {len(todo.paths)} path(s) may be stale "
                       "until the next start")  # fmt: skip
            batch = None if stopping else co.due(clock())
            if batch is not None:
                # Leave a gap between back-to-back burst transactions so another
                # writer waiting on the lock (a `docindex scan`) gets its turn.
                time.sleep(0.02)


def _take(q: queue.SimpleQueue[object], timeout: float) -> list[object]:
    """What the queue holds: wait up to ``timeout`` for the first item."""
    items = []
    try:
        items.append(q.get(timeout=timeout))
        while True:
            items.append(q.get_nowait())
    except queue.Empty:
        pass
    return items


def _check_health(
    link: Link, co: Coalescer, obs: RootObserver, clock: Callable[[], float],
    now: float, next_ping: float, stopping: bool,
) -> float | None:  # fmt: skip
    """Rescan the roots the observer lost or got back, and ping the index's
    server when due; the next ping's time, or None when the server is gone."""
    for root, reason in obs.check():
        co.add_fallback(root, reason, now)
    if now >= next_ping and not stopping:
        # An idle watch learns that its server went away, not only
        # the next time a file changes (issue #44).
        next_ping = now + PING_INTERVAL_S
        renewed = link.ping()
        if renewed is None:
            return None
        if renewed:
            co.add_fallback(None, "reconnected to the index", clock())
    return next_ping


def _failed(kind: str, todo: Batch, exc: DocindexError) -> BatchReport:
    """The report of a batch that failed as a whole."""
    error = {"path": "", "reason": "error", "message": str(exc)}
    return BatchReport(kind, len(todo.paths), 0, 0, 0, [error])


def _embed_while_idle(
    store: Store, cfg: Config, q: queue.SimpleQueue[object],
    stop_event: threading.Event, notice: Callable[[str], None],
) -> bool:  # fmt: skip
    """Embed pending deferred vectors until a change arrives (issue #47).

    Returns True when vectors are left (the queue had work, or the index
    was busy), False when none are.
    """
    from docindex.embed.choice import embedder_for
    from docindex.ingest.indexer import embed_pending

    embedder = embedder_for(cfg)
    if embedder is None or not embedder.deferred:
        return False
    result = ScanResult()
    try:
        embed_pending(store, cfg, result=result,
                      yield_to=lambda: not q.empty() or stop_event.is_set())  # fmt: skip
    except (IndexBusyError, IndexUnreachableError):
        notice("index is busy or unreachable; vectors will be embedded later")
        return True
    return result.vectors_pending > 0


def _feed(
    item: object,
    co: Coalescer,
    filt: PathFilter,
    obs: RootObserver,
    now: float,
    notice: Callable[[str], None],
) -> None:
    if isinstance(item, tuple):  # ("fallback", root or None, reason)
        co.add_fallback(item[1], item[2], now)
        return
    ev = cast("RawEvent", item)  # the queue holds RawEvents and fallback tuples
    if ev.src in filt.roots and ev.kind in ("deleted", "moved"):
        # Like a scan, keep what a vanished root held (an unmounted disk is
        # not an empty one); the health check re-arms it when it comes back.
        obs.lost.add(ev.src)
        notice(f"root {ev.src} disappeared; its documents are kept until it returns")
        return
    if ev.kind == "moved" and ev.is_directory:
        # watchdog's inotify backend can lose track of paths below a moved
        # folder (the soak test saw later events under wrong paths), so its
        # watches are rebuilt and the root rescanned incrementally (stat only
        # for unchanged files) instead of trusting the events that follow.
        for path in (ev.src, ev.dest):
            root = filt.root_of(path) if path and filt.accept(path, True) else None
            if root is not None:
                obs.rearm.add(root)
                co.add_fallback(root, "folder moved; watches rebuilt", now)
    for path in (ev.src, ev.dest):
        if path and os.path.basename(path) == RULES_FILE and filt.cfg.use_gitignore:
            # New rules: what they now exclude or include is decided by a scan
            # of the folder they govern.
            filt.invalidate()
            folder = os.path.dirname(path)
            if folder in filt.roots:
                co.add_fallback(folder, ".gitignore changed", now)
            else:
                co.add(RawEvent("rescan", folder, is_directory=True, time=now))
    co.add(ev)
