"""A long-lived server's view of its index server: retry, then give up (issue #44).

``docindex mcp`` opens the index for every call, so after a PostgreSQL
restart or failover the next call simply connects again. A call made while
the server is away waits for it with a growing delay (0.5 s doubling to 5 s,
at most ``CALL_WAIT_S``) and says so once on stderr; when the server has been
away for ``limit_s`` with no call getting through, ``gave_up`` is set and the
MCP server exits non-zero, so whatever supervises it can start it again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from docindex.errors import IndexUnreachableError

T = TypeVar("T")
CALL_WAIT_S = 30.0  # the longest one call waits for the server


class Reach:
    """Whether the index server answers, shared by the calls of one server."""

    def __init__(
        self, limit_s: float, log: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.limit_s = limit_s
        self.gave_up = threading.Event()
        self.reason = ""
        self._log = log
        self._clock = clock
        self._lock = threading.Lock()
        self._away_since: float | None = None

    def call(self, fn: Callable[[], T], cancelled: threading.Event) -> T:
        """``fn()``, retried while the index server is away.

        Raises:
            IndexUnreachableError: still away after ``CALL_WAIT_S`` (or the
                call was cancelled, or the server gave up).
        """
        delay = 0.5
        started = self._clock()
        while True:
            try:
                result = fn()
            except IndexUnreachableError as exc:
                waited = self._clock() - started
                if self._away(exc) or waited >= min(CALL_WAIT_S, self.limit_s):
                    raise
                if cancelled.wait(delay):
                    raise
                delay = min(delay * 2, 5.0)
                continue
            self._back()
            return result

    def _away(self, exc: IndexUnreachableError) -> bool:
        """Note a failure; True once the server has been away past the limit."""
        now = self._clock()
        with self._lock:
            if self._away_since is None:
                self._away_since = now
                self._log(f"{exc}; retrying (giving up after {self.limit_s:.0f} s)")
            if now - self._away_since >= self.limit_s and not self.gave_up.is_set():
                self.reason = f"{exc}; gave up after {now - self._away_since:.0f} s"
                self._log(self.reason)
                self.gave_up.set()
            return self.gave_up.is_set()

    def _back(self) -> None:
        with self._lock:
            if self._away_since is not None:
                took = self._clock() - self._away_since
                self._log(f"reconnected to the index after {took:.1f} s")
                self._away_since = None
