"""The watchdog side of ``watch`` (issue #5): one observer over the roots, re-armed
when a root comes back, whose events and log warnings land on ``watch``'s queue.

Split from ``watch`` (#49); watchdog itself is imported only when it starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from docindex.ingest._debounce import RawEvent
from docindex.ingest.walker import root_problem

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers.api import BaseObserver, ObservedWatch

STOP = object()

_KINDS = {"created", "modified", "deleted", "moved", "closed", "attrib"}


class Sink:
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


class LogTap(logging.Handler):
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


class RootObserver:
    """One watchdog observer over the roots, re-armed when a root comes back."""

    def __init__(self, roots: Sequence[str], sink: Sink) -> None:
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
        # Sink is duck-typed: watchdog calls only its dispatch().
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
