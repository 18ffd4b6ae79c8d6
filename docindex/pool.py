"""The scan's worker processes and the time bound of one extraction.

A scan prepares files (read, extract, segment, tokenise, embed) in a small
process pool when there is enough work. This module knows nothing of files:
it maps a picklable top-level function over items in order, a bounded number
of chunks ahead, and bounds a call in time with SIGALRM.

No process of the pool outlives the process that made it (issue #17):

- every worker holds the read end of a *lifeline* pipe whose only write end
  is in the parent; a thread in the worker waits for EOF and exits the worker
  at once. EOF comes when the parent closes it (``close(kill=True)``, to stop
  at once) or when the parent dies in any way, SIGKILL included. A pipe
  works on every OS (Linux, macOS, Windows), unlike ``PR_SET_PDEATHSIG``,
  which would fire only when the worker's own parent (the forkserver) dies.
- the forkserver (POSIX) starts its own session (``docindex._forkserver``),
  so a terminal's Ctrl-C and a kill of the scan's process group reach the
  parent alone: workers never print ``KeyboardInterrupt`` tracebacks and the
  parent decides when they stop. Once the parent and the workers are gone the
  forkserver sees EOF on multiprocessing's own "alive" pipe, exits, and
  removes multiprocessing's ``pymp-*`` folder; the resource tracker then
  sees EOF too and exits.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

POOL_THRESHOLD = 48  # items to prepare before a process pool pays for itself
CHUNK_BYTES = 256 * 1024  # a worker's unit of work: ~this many bytes of files
CHUNK_FILES = 32
IN_FLIGHT = 3  # chunks submitted ahead, per worker (bounds memory, issue #7)

T = TypeVar("T")
R = TypeVar("R")
A = TypeVar("A")


class ExtractTimeout(BaseException):
    """Raised by the alarm; a BaseException so no library's ``except Exception`` eats it."""


class deadline:
    """Bound a call in time with SIGALRM (POSIX main thread only; else unbounded)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = False

    def __enter__(self) -> None:
        import signal
        import threading

        if not hasattr(signal, "setitimer"):
            return
        if threading.current_thread() is not threading.main_thread():
            return

        def _fire(signum: int, frame: object) -> None:
            raise ExtractTimeout(f"extraction took over {self.seconds:g} s")

        self.previous = signal.signal(signal.SIGALRM, _fire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        self.armed = True

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            import signal

            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


def chunked(items: Sequence[T], size_of: Callable[[T], int]) -> Iterator[list[T]]:
    """Consecutive runs of about CHUNK_BYTES (at most CHUNK_FILES items)."""
    chunk: list[T] = []
    size = 0
    for item in items:
        chunk.append(item)
        size += size_of(item)
        if size >= CHUNK_BYTES or len(chunk) >= CHUNK_FILES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _run_chunk(fn: Callable[[T, A], R], chunk: list[T], arg: A) -> list[R]:
    return [fn(item, arg) for item in chunk]


class Stopped(Exception):
    """``map_ordered`` was asked to stop; results not yet consumed are dropped."""


def _worker_init(lifeline: Any) -> None:
    """Run in each worker: leave signals to the parent; exit when it is gone."""
    import signal
    import threading

    # Ctrl-C is the parent's to handle (it stops the workers itself); a worker
    # that got it anyway would print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_lifeline, args=(lifeline,), daemon=True).start()


def _watch_lifeline(lifeline: Any) -> None:
    """Block until the parent closes the lifeline or dies, then exit at once."""
    try:
        lifeline.recv_bytes()
    except (EOFError, OSError):
        pass
    os._exit(1)


class Workers(Generic[A]):
    """A process pool, booted as soon as the caller knows it will pay.

    Booting early (issue #7) lets the forkserver start and import the worker
    modules (``preload``) while the main process is still walking, instead
    of after the walk, on the critical path.
    """

    def __init__(self, count: int, preload: Sequence[str] = ()) -> None:
        self.count = count or min(2, os.cpu_count() or 1)
        self.preload = list(preload)
        self.pool: Any = None
        self._ctx: Any = None
        self._lifeline: Any = None  # (read end, write end) while the pool lives

    def boot(self) -> None:
        """Start the forkserver (without waiting for its imports); idempotent."""
        if self._ctx is not None or self.count <= 1:
            return
        import multiprocessing

        method = (
            "forkserver"
            if "forkserver" in multiprocessing.get_all_start_methods()
            else "spawn"
        )
        self._ctx = multiprocessing.get_context(method)
        if method == "forkserver":
            from multiprocessing import forkserver

            # Workers fork from a server that imported these once, instead of
            # each importing them itself; the server skips what will not import.
            # docindex._forkserver detaches the server from the terminal.
            self._ctx.set_forkserver_preload(["docindex._forkserver", *self.preload])
            forkserver.ensure_running()  # spawns the server; does not wait

    def executor(self) -> Any:
        """The pool (created on first use)."""
        if self.pool is None:
            from concurrent.futures import ProcessPoolExecutor

            self.boot()
            if self._ctx is None:  # one worker: a pool of one, still supervised
                import multiprocessing

                self._ctx = multiprocessing.get_context()
            self._lifeline = self._ctx.Pipe(duplex=False)
            self.pool = ProcessPoolExecutor(
                max_workers=self.count, mp_context=self._ctx,
                initializer=_worker_init, initargs=(self._lifeline[0],),
            )  # fmt: skip
        return self.pool

    def close(self, kill: bool = False) -> None:
        """Shut the pool down.

        Args:
            kill: stop the workers at once (an interrupt, an error) instead of
                waiting for the chunks they are preparing.
        """
        if self.pool is None:
            return
        if kill:
            self._cut_lifeline()
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None
        self._cut_lifeline()

    def _cut_lifeline(self) -> None:
        if self._lifeline is not None:
            for end in self._lifeline:
                end.close()
            self._lifeline = None

    def map_ordered(
        self, fn: Callable[[T, A], R], items: Sequence[T], arg: A,
        size_of: Callable[[T], int], stop: Callable[[], bool] | None = None,
    ) -> Iterator[R]:  # fmt: skip
        """``fn(item, arg)`` for each item, in order, in worker processes when it pays.

        At most ``IN_FLIGHT`` chunks per worker are submitted ahead of the one
        being consumed (issue #7): ``Executor.map`` would submit everything at
        once and let results pile up in memory whenever the consumer is the
        slower side. Results come back in submission order, so one core or two
        give the same output. ``fn`` must be a picklable top-level function.

        Raises:
            Stopped: ``stop()`` turned true while waiting for a worker (checked
                every 0.1 s); the workers are stopped at once.
        """
        if self.count <= 1 or len(items) < POOL_THRESHOLD:
            for item in items:
                yield fn(item, arg)
            return
        from collections import deque
        from concurrent.futures import Future, wait

        pool = self.executor()
        chunks = chunked(items, size_of)
        pending: deque[Future[list[R]]] = deque()
        for chunk in chunks:
            pending.append(pool.submit(_run_chunk, fn, chunk, arg))
            if len(pending) >= IN_FLIGHT * self.count:
                break
        while pending:
            head = pending[0]
            while stop is not None and not wait([head], timeout=0.1).done:
                if stop():
                    self.close(kill=True)
                    raise Stopped
            done = pending.popleft().result()
            for chunk in chunks:  # refill one slot
                pending.append(pool.submit(_run_chunk, fn, chunk, arg))
                break
            yield from done
