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

import contextlib
import logging
import os
import queue
import stat
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from docindex.config import Config
from docindex.errors import DocindexError, IndexBusyError, IndexUnreachableError
from docindex.ingest._debounce import Batch, Coalescer, RawEvent, is_under
from docindex.ingest.assets import asset_reason, opt_ins
from docindex.ingest.reconnect import Link
from docindex.ingest.walker import (
    IMAGE_SUFFIXES,
    UNSUPPORTED_SUFFIXES,
    PathRules,
    root_problem,
)
from docindex.models import ScanResult
from docindex.store import Store

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers.api import BaseObserver, ObservedWatch

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


class PathFilter:
    """The walk's rules for one event path: hidden, default/user excludes, .gitignore.

    Also drops the index's own files (the database and its -wal/-shm/-journal,
    ``.docindex/``), so writing the index never triggers a rescan of it.
    """

    def __init__(
        self, roots: Sequence[str], cfg: Config, own: Iterable[str] = ()
    ) -> None:
        self.roots = sorted(roots, key=len, reverse=True)
        self.cfg = cfg
        self.own = frozenset(own)
        self._rules: dict[str, PathRules] = {}
        self._opted_in = opt_ins(cfg.text_extensions)
        # images are documents when OCR is on (#36): their events count then
        self._unread = UNSUPPORTED_SUFFIXES - (IMAGE_SUFFIXES if cfg.ocr else set())

    def root_of(self, path: str) -> str | None:
        """The (innermost) root containing ``path``."""
        for root in self.roots:
            if path == root or is_under(path, root):
                return root
        return None

    def invalidate(self) -> None:
        """Forget cached .gitignore rules (one changed)."""
        self._rules.clear()

    def accept(self, path: str, is_dir: bool) -> bool:
        """True when the walk could index ``path`` (or something under it)."""
        root = self.root_of(path)
        if root is None or path == root or path in self.own:
            return False
        if any(is_under(path, own) for own in self.own):
            return False
        rel = Path(path).relative_to(root).as_posix()
        parts = rel.split("/")
        if not self.cfg.hidden and any(p.startswith(".") for p in parts):
            return False
        if not is_dir and (
            os.path.splitext(parts[-1])[1].lower() in self._unread
            or asset_reason(parts[-1], self._opted_in) is not None
        ):
            return False
        rules = self._rules.get(root)
        if rules is None:
            rules = PathRules(
                Path(root), self.cfg.exclude, use_gitignore=self.cfg.use_gitignore
            )
            self._rules[root] = rules
        if rules.matched(rel, is_dir):
            # An excluded folder may still hold a file an --exclude negation
            # re-includes; the walk of its scope decides.
            return is_dir and rules.may_reinclude
        return True


def own_files(db: Path) -> list[str]:
    """The index's own paths: the database, its side files, a ``.docindex`` folder."""
    base = str(db)
    out = [base + s for s in ("", "-wal", "-shm", "-journal")]
    out += [base + ".rebuild" + s for s in ("", "-wal", "-shm", "-journal")]
    out.append(base + ".sock")  # the watcher's server (docindex.server)
    out.append(base + ".watch")  # the watch lock (store.lock)
    if db.parent.name == ".docindex":
        out.append(str(db.parent))
    return out


# -- the adapter ----------------------------------------------------------------

_STOP = object()
_KINDS = {"created", "modified", "deleted", "moved", "closed", "attrib"}


class _Sink:
    """watchdog handler: turn events into RawEvents on our queue (observer thread)."""

    def __init__(
        self, q: queue.SimpleQueue[object], clock: Callable[[], float]
    ) -> None:
        self.q = q
        self.clock = clock

    def dispatch(self, event: FileSystemEvent) -> None:
        if event.event_type not in _KINDS:
            return
        self.q.put(RawEvent(event.event_type, os.fsdecode(event.src_path),
                            os.fsdecode(event.dest_path or ""), event.is_directory,
                            self.clock()))  # fmt: skip


class _LogTap(logging.Handler):
    """watchdog reports a kernel queue overflow and its own errors only by logging."""

    def __init__(self, q: queue.SimpleQueue[object]) -> None:
        super().__init__(logging.WARNING)
        self.q = q

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "overflow" in msg.lower():
            self.q.put(("fallback", None, "event queue overflow"))
        elif record.levelno >= logging.ERROR:
            self.q.put(("fallback", None, f"observer error: {msg}"))


def _identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of a directory, or None if it is not one now."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


class _Observer:
    """One watchdog observer over the roots, re-armed when a root comes back."""

    def __init__(self, roots: Sequence[str], sink: _Sink) -> None:
        self.roots = list(roots)
        self.sink = sink
        self.observer: BaseObserver | None = None
        self.watches: dict[str, ObservedWatch] = {}
        self.lost: set[str] = set()
        self.idents: dict[str, tuple[int, int]] = {}
        self.rearm: set[str] = set()
        self.polling = False

    def start(self) -> list[tuple[str, str]]:
        from watchdog.observers import Observer

        self.observer = Observer()
        try:
            for root in self.roots:
                self._schedule(root)
            self.observer.start()
        except OSError as exc:  # e.g. the inotify watch limit
            with contextlib.suppress(Exception):
                self.observer.stop()
            from watchdog.observers.polling import PollingObserver

            self.polling = True
            self.observer = PollingObserver(timeout=2.0)
            for root in self.roots:
                self._schedule(root)
            self.observer.start()
            return [
                (r, f"native events unavailable ({exc}); polling") for r in self.roots
            ]
        return []

    def _schedule(self, root: str) -> None:
        ident = _identity(root)
        if ident is None or root_problem(Path(root)) is not None:
            self.lost.add(root)
            return
        assert self.observer is not None  # set by start()
        # _Sink is duck-typed: watchdog calls only its dispatch().
        handler = cast("FileSystemEventHandler", self.sink)
        self.watches[root] = self.observer.schedule(handler, root, recursive=True)
        self.idents[root] = ident
        self.lost.discard(root)

    def check(self) -> list[tuple[str, str]]:
        """(root, reason) pairs to rescan: the observer died, or a root came back."""
        if self.observer is None:
            return []
        if not self.observer.is_alive():
            self.stop()
            restarted = [(r, "observer stopped; restarted") for r in self.roots]
            return restarted + self.start()
        alive = {e.watch.path for e in self.observer.emitters if e.is_alive()}
        out = []
        for root in self.roots:
            problem = root_problem(Path(root))
            if problem is not None:  # a symlink in its place: never followed (#33)
                if root not in self.lost:
                    out.append((root, problem))
                self.lost.add(root)
                watch = self.watches.pop(root, None)
                if watch is not None:
                    with contextlib.suppress(Exception):
                        self.observer.unschedule(watch)
                continue
            ident = _identity(root)
            if ident is None:
                self.lost.add(root)
                continue
            # A root moved away and recreated is another directory: the old
            # watch follows the old inode, so compare identities too.
            replaced = self.idents.get(root) not in (None, ident)
            if root in alive and root not in self.lost and not replaced:
                continue
            was_lost = root in self.lost or replaced
            watch = self.watches.pop(root, None)
            if watch is not None:
                with contextlib.suppress(Exception):
                    self.observer.unschedule(watch)
            try:
                self._schedule(root)
            except OSError as exc:
                out.append((root, f"cannot watch root: {exc}"))
                continue
            out.append((root, "root was deleted and recreated" if was_lost
                        else "watch on the root stopped; re-armed"))  # fmt: skip
        return out

    def rebuild(self, root: str) -> None:
        """Drop and re-add the watches on ``root`` (fresh path bookkeeping)."""
        self.rearm.discard(root)
        if self.observer is None:
            return
        watch = self.watches.pop(root, None)
        if watch is not None:
            with contextlib.suppress(Exception):
                self.observer.unschedule(watch)
        with contextlib.suppress(OSError):
            self._schedule(root)

    def stop(self) -> None:
        if self.observer is not None:
            with contextlib.suppress(Exception):
                self.observer.stop()
                self.observer.join(timeout=5)
        self.observer = None
        self.watches = {}


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
    obs = _Observer(roots, _Sink(q, clock))
    tap = _LogTap(q)
    wd_log = logging.getLogger("watchdog")
    link = Link(open_store, notice=notice, stop_event=stop_event,
                limit_s=cfg.reconnect_timeout_s)  # fmt: skip
    store = link.store
    wd_log.addHandler(tap)

    def _wake_on_stop() -> None:
        stop_event.wait()
        q.put(_STOP)

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
        done = _apply_retrying(link, cfg, Batch(()), "catch-up", stop_event, notice,
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
    filt: PathFilter, obs: _Observer, clock: Callable[[], float],
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
        items = []
        try:
            items.append(q.get(timeout=max(0.0, wake - clock())))
            while True:
                items.append(q.get_nowait())
        except queue.Empty:
            pass
        for item in items:
            if item is _STOP:
                stopping = True
            else:
                _feed(item, co, filt, obs, clock(), notice)
        now = clock()
        if now >= next_health:
            for root, reason in obs.check():
                co.add_fallback(root, reason, now)
            next_health = now + HEALTH_INTERVAL_S
            if now >= next_ping and not stopping:
                # An idle watch learns that its server went away, not only
                # the next time a file changes (issue #44).
                next_ping = now + PING_INTERVAL_S
                renewed = link.ping()
                if renewed is None:
                    return
                if renewed:
                    co.add_fallback(None, "reconnected to the index", clock())
        batches = co.flush() if stopping else []
        batch = None if stopping else co.due(now)
        while batch is not None or batches:
            todo: Batch = batch if batch is not None else batches.pop(0)
            batch = None
            kind = "fallback" if todo.fallback else "changes"
            try:
                if todo.maybe:
                    todo = Batch(todo.paths + _known(link.store, filt, todo.maybe))
                if not todo.paths:
                    batch = None if stopping else co.due(clock())
                    continue
                if todo.fallback and todo.paths[0] in obs.rearm:
                    obs.rebuild(todo.paths[0])  # before the scan: nothing slips by
                # A deferred embedder's vectors wait while changes are queued:
                # the lexical rows are committed first (issue #47).
                report, raced = _apply(link.store, cfg, todo, kind,
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
                report, raced = BatchReport(kind, len(todo.paths), 0, 0, 0,
                                            [{"path": "", "reason": "error",
                                              "message": str(exc)}]), False  # fmt: skip
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
    obs: _Observer,
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


def _known(store: Store, filt: PathFilter, paths: Sequence[str]) -> tuple[str, ...]:
    """The paths the index holds a document at (or under, for a folder)."""
    with store.atomic(immediate=False):  # its errors come translated (#44)
        return _known_in(store, filt, paths)


def _known_in(store: Store, filt: PathFilter, paths: Sequence[str]) -> tuple[str, ...]:
    by_root: dict[str, list[str]] = {}
    for path in paths:
        root = filt.root_of(path)
        if root is not None:
            by_root.setdefault(root, []).append(path)
    ids = {path: rid for rid, path in store.roots().items()}
    out: list[str] = []
    for root, group in by_root.items():
        if root not in ids:
            continue
        known = set(store.fingerprints(ids[root]))
        folders = {
            rel.rsplit("/", i)[0] for rel in known for i in range(1, rel.count("/") + 1)
        }
        for path in group:
            rel = Path(path).relative_to(root).as_posix()
            if rel in known or rel in folders:
                out.append(path)
    return tuple(out)


def _apply_retrying(
    link: Link, cfg: Config, batch: Batch, kind: str, stop_event: threading.Event,
    notice: Callable[[str], None], keep_present: bool,
) -> tuple[BatchReport, bool] | None:  # fmt: skip
    # A catch-up scan can be long: a signal stops it between files (#17).
    stop = stop_event.is_set if kind == "catch-up" else None
    while True:
        try:
            return _apply(link.store, cfg, batch, kind, stop, keep_present)
        except IndexUnreachableError as exc:
            if not link.renew(exc):
                return None
        except IndexBusyError:
            notice("index is busy (another docindex is writing); retrying")
            if stop_event.wait(BUSY_RETRY_S):
                return None


def _apply(
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
