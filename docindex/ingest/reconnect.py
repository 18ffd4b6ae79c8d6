"""The watcher's open index, opened again when its server goes away (issue #44).

A PostgreSQL server restarts (an upgrade, a failover) while ``docindex watch``
runs; its connection is then dead, and every batch would fail with the same
"cannot reach" line forever. ``Link`` holds the open store; when a batch
meets ``IndexUnreachableError`` the watcher calls ``renew``, which waits with
a growing delay (0.5 s doubling to 10 s, no busy loop), opens the index again
and says so; the watcher then catches up with a scan. Past ``limit_s`` of
failed attempts it gives up with the error, so the command exits non-zero and
a supervisor can start it again.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

from docindex.errors import IndexUnreachableError
from docindex.store import Store

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 10.0


class Link:
    """The watcher's store, and how to open it again."""

    def __init__(
        self, open_store: Callable[[], Store], *, notice: Callable[[str], None],
        stop_event: threading.Event, limit_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self._open = open_store
        self._notice = notice
        self._stop = stop_event
        self._limit = limit_s
        self._clock = clock
        self.store = open_store()

    def renew(self, cause: IndexUnreachableError) -> bool:
        """Open the index again after ``cause``; True once it is open, False
        when the watcher was stopped meanwhile.

        Raises:
            IndexUnreachableError: still unreachable after ``limit_s``.
        """
        with contextlib.suppress(Exception):
            self.store.close()
        started = self._clock()
        self._notice(f"{cause}; reconnecting (giving up after {self._limit:.0f} s)")
        delay = FIRST_DELAY_S
        while not self._stop.wait(delay):
            try:
                self.store = self._open()
            except IndexUnreachableError as exc:
                waited = self._clock() - started
                if waited >= self._limit:
                    raise IndexUnreachableError(
                        f"{exc}; gave up after {waited:.0f} s (reconnect_timeout_s)"
                    ) from None
                delay = min(delay * 2, MAX_DELAY_S, max(0.1, self._limit - waited))
                continue
            took = self._clock() - started
            self._notice(
                f"reconnected to the index after {took:.1f} s; catching up with a scan"
            )
            return True
        return False

    def ping(self) -> bool | None:
        """Ask a server index whether it is still there (one small read), so
        an idle watcher learns it went away; False when it is, True when it
        was opened again, None when the watcher was stopped meanwhile."""
        if isinstance(self.store.path, Path):
            return False  # a file: no server to lose
        try:
            with self.store.atomic(immediate=False):
                self.store.get_meta("tokenizer")
        except IndexUnreachableError as exc:
            return True if self.renew(exc) else None
        return False

    def close(self) -> None:
        """Checkpoint and close the store (quietly when its server is gone)."""
        with contextlib.suppress(IndexUnreachableError):
            self.store.checkpoint()
        self.store.close()
