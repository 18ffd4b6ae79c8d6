"""Pure debounce and coalescing of file-system events for ``docindex watch`` (issue #5).

No clock, no disk, no threads: events carry their time and ``due(now)`` is
asked with the caller's clock, so the rules are tested with a fake clock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

MODIFY_KINDS = frozenset({"modified", "closed", "attrib"})


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One file-system event: kind is created, modified, deleted, moved or rescan."""

    kind: str
    src: str
    dest: str = ""
    is_directory: bool = False
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class Batch:
    """Paths to bring up to date together; ``fallback`` says why a root is rescanned.

    ``maybe`` holds paths created and gone again inside the window (temp
    files): they need a scan only if the index already knows them, which
    happens when a scan saw the file before its creation event was read.
    """

    paths: tuple[str, ...]
    fallback: str | None = None
    maybe: tuple[str, ...] = ()


@dataclass(slots=True)
class _Entry:
    born: bool  # first seen being created in this window
    exists: bool
    reason: str | None = None  # a whole-root rescan, and why


def is_under(path: str, prefix: str) -> bool:
    """True when ``path`` lies strictly below the directory ``prefix``."""
    return path.startswith(prefix + os.sep)


class Coalescer:
    """Debounce and coalesce raw events into batches of paths (pure, clock injected).

    Every event resets the debounce window; when ``debounce_s`` has passed
    without events (or ``max_wait_s`` since the first pending one, so a steady
    stream still lands) the pending paths become ready batches. A path created
    and gone inside one window (an editor's temp file) is not a change: it goes
    to ``Batch.maybe``, applied only if the index knows it; a temp file
    renamed over the original leaves one change of the original; a directory
    move is a removal of the old prefix and a scan of the new one; a path under
    another pending path is dropped (the ancestor's scan covers it).

    Args:
        debounce_s: quiet time before pending paths are released.
        max_wait_s: longest a path waits under a steady stream of events.
        max_batch: most paths per batch (one transaction each).
        max_pending: beyond this many pending paths, whole roots are rescanned.
        accept: ``(path, is_dir) -> bool``; False drops the path (excluded).
        roots: root directories, to map paths to roots.
    """

    def __init__(
        self, debounce_s: float, *, max_wait_s: float | None = None,
        max_batch: int = 256, max_pending: int = 20_000,
        accept: Callable[[str, bool], bool] | None = None, roots: Sequence[str] = (),
    ) -> None:  # fmt: skip
        self.debounce_s = debounce_s
        self.max_wait_s = (
            max_wait_s if max_wait_s is not None else max(2.0, 10 * debounce_s)
        )
        self.max_batch = max_batch
        self.max_pending = max_pending
        self.accept = accept or (lambda path, is_dir: True)
        self.roots = tuple(roots)
        self._pending: dict[str, _Entry] = {}
        self._first = 0.0
        self._last = 0.0
        self._not_before = 0.0
        self._ready: list[Batch] = []

    @property
    def pending(self) -> int:
        """Paths waiting (not yet released)."""
        return len(self._pending) + sum(len(b.paths) for b in self._ready)

    def add(self, event: RawEvent) -> None:
        """Record one event (filtered by ``accept``)."""
        kind, src, dest, is_dir = event.kind, event.src, event.dest, event.is_directory
        if kind == "moved":
            src_ok, dest_ok = (
                self.accept(src, is_dir),
                bool(dest) and self.accept(dest, is_dir),
            )
            if src_ok:
                self._gone(src, event.time, is_dir)
            if dest_ok:
                self._touch(dest, event.time, born=False)
            return
        if not self.accept(src, is_dir):
            return
        if kind == "created":
            self._touch(src, event.time, born=True)
        elif kind == "deleted":
            self._gone(src, event.time, is_dir)
        elif kind == "rescan" or (kind in MODIFY_KINDS and not is_dir):
            self._touch(src, event.time, born=False)

    def add_fallback(self, root: str | None, reason: str, now: float) -> None:
        """Rescan ``root`` (None: every root) instead of trusting its events."""
        for r in self.roots if root is None else (root,):
            self._stamp(now)
            self._pending[r] = _Entry(born=False, exists=True, reason=reason)

    def defer(self, batch: Batch, until: float) -> None:
        """Put a batch that could not be applied back, due again at ``until``."""
        for path in batch.paths:
            entry = self._pending.setdefault(
                path, _Entry(born=False, exists=True, reason=batch.fallback)
            )
            entry.born = False  # it may be in the index: never drop it
        if batch.paths:
            self._stamp(until)
            self._not_before = max(self._not_before, until)

    def next_deadline(self) -> float | None:
        """When ``due`` may next return a batch (None: nothing pending)."""
        if self._ready:
            return 0.0
        if not self._pending:
            return None
        deadline = min(self._last + self.debounce_s, self._first + self.max_wait_s)
        return max(deadline, self._not_before)

    def due(self, now: float) -> Batch | None:
        """The next batch to apply at ``now``, or None while the window is open."""
        if not self._ready:
            deadline = self.next_deadline()
            if deadline is None or now < deadline:
                return None
            self._ready = self._release()
        return self._ready.pop(0) if self._ready else None

    def flush(self) -> list[Batch]:
        """Everything pending now, ignoring the window (used when stopping)."""
        out = self._ready + self._release()
        self._ready = []
        return out

    # -- internals ---------------------------------------------------------

    def _stamp(self, now: float) -> None:
        if not self._pending:
            self._first = now
        self._last = max(self._last, now)

    def _touch(self, path: str, now: float, *, born: bool) -> None:
        self._stamp(now)
        entry = self._pending.get(path)
        if entry is None:
            self._pending[path] = _Entry(born=born, exists=True)
        else:
            entry.exists = True
        self._check_size()

    def _gone(self, path: str, now: float, is_dir: bool) -> None:
        self._stamp(now)
        entry = self._pending.get(path)
        if entry is None:
            entry = self._pending[path] = _Entry(born=False, exists=False)
        entry.exists = False
        if not is_dir:
            self._check_size()
            return
        # Whatever was pending below a vanished directory is gone with it; if the
        # directory itself was new in this window, so was everything in it.
        for other, sub in self._pending.items():
            if is_under(other, path):
                sub.exists = False
                sub.born = sub.born or entry.born
        self._check_size()

    def _check_size(self) -> None:
        if len(self._pending) <= self.max_pending:
            return
        count = len(self._pending)
        hit = {
            r
            for r in self.roots
            if any(p == r or is_under(p, r) for p in self._pending)
        }
        self._pending = {
            r: _Entry(
                born=False, exists=True, reason=f"too many changes ({count} paths)"
            )
            for r in hit
        }

    def _release(self) -> list[Batch]:
        pending, self._pending = self._pending, {}
        self._not_before = 0.0
        live = {p: e for p, e in pending.items() if e.exists or not e.born}
        kept = sorted(p for p in live if not _has_ancestor(p, live))
        batches = [Batch((p,), live[p].reason) for p in kept if live[p].reason]
        plain = [p for p in kept if not live[p].reason]
        temp = sorted(
            p for p in pending if p not in live and not _has_ancestor(p, live)
        )
        temp = [p for p in temp if not _has_ancestor(p, dict.fromkeys(temp))]
        for i in range(0, max(len(plain), len(temp)), self.max_batch):
            chunk = slice(i, i + self.max_batch)
            batches.append(Batch(tuple(plain[chunk]), maybe=tuple(temp[chunk])))
        return batches


def _has_ancestor(path: str, paths: Mapping[str, object]) -> bool:
    parent = os.path.dirname(path)
    while parent and parent != path:
        if parent in paths:
            return True
        path, parent = parent, os.path.dirname(parent)
    return False
