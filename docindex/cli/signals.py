"""Ctrl-C, SIGTERM and SIGHUP: a graceful stop first, an immediate one second (#17).

The CLI installs ``Signals`` around every command. A command that can stop
cleanly (scan, reindex, watch) asks for ``graceful()``: the first signal then
only sets an event the core polls between files, so the work already done is
committed; a second signal raises ``Interrupted`` at once. Any other command
(query, eval, mcp, ...) gets ``Interrupted`` on the first signal. Either way
the process exits with 128 + the signal's number (130, 143, 129) and one line,
never a traceback.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    # What signal.signal() returns and takes back (typeshed's private _HANDLER).
    _Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None

# SIGHUP does not exist on Windows.
_NAMES = ("SIGINT", "SIGTERM", "SIGHUP")


class Interrupted(BaseException):
    """A signal asked the process to stop now (a BaseException, like KeyboardInterrupt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """The shell convention: 128 + the signal's number."""
        return 128 + self.signum


class Signals:
    """Signal handlers for one command; use as a context manager (main thread only).

    Attributes:
        event: set by the first signal when the command is graceful.
        signum: the first signal received (0 while none).
    """

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum = 0
        self._graceful = False
        self._previous: dict[int, _Handler] = {}

    def graceful(self) -> threading.Event:
        """Make the first signal set ``event`` instead of raising; return the event."""
        self._graceful = True
        return self.event

    @property
    def exit_code(self) -> int:
        """128 + the first signal's number, or 0 when none came."""
        return 128 + self.signum if self.signum else 0

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self.signum:
            self.signum = signum
        if self._graceful and not self.event.is_set():
            self.event.set()
            return
        raise Interrupted(self.signum)

    def __enter__(self) -> Signals:
        if threading.current_thread() is threading.main_thread():
            for name in _NAMES:
                num = getattr(signal, name, None)
                if num is not None:
                    self._previous[num] = signal.signal(num, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for num, previous in self._previous.items():
            signal.signal(num, previous)
        self._previous.clear()
