"""The scan's worker processes and the time bound of one extraction.

A scan prepares files (read, extract, segment, tokenise, embed) in a small
process pool when there is enough work. This module knows nothing of files:
it maps a picklable top-level function over items in order, a bounded number
of chunks ahead, and bounds a call in time with SIGALRM.
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
            self._ctx.set_forkserver_preload(self.preload)
            forkserver.ensure_running()  # spawns the server; does not wait

    def executor(self) -> Any:
        """The pool (created on first use)."""
        if self.pool is None:
            from concurrent.futures import ProcessPoolExecutor

            self.boot()
            self.pool = ProcessPoolExecutor(
                max_workers=self.count, mp_context=self._ctx
            )
        return self.pool

    def close(self) -> None:
        """Shut the pool down (waits for the running chunks)."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def map_ordered(
        self, fn: Callable[[T, A], R], items: Sequence[T], arg: A,
        size_of: Callable[[T], int],
    ) -> Iterator[R]:  # fmt: skip
        """``fn(item, arg)`` for each item, in order, in worker processes when it pays.

        At most ``IN_FLIGHT`` chunks per worker are submitted ahead of the one
        being consumed (issue #7): ``Executor.map`` would submit everything at
        once and let results pile up in memory whenever the consumer is the
        slower side. Results come back in submission order, so one core or two
        give the same output. ``fn`` must be a picklable top-level function.
        """
        if self.count <= 1 or len(items) < POOL_THRESHOLD:
            for item in items:
                yield fn(item, arg)
            return
        from collections import deque
        from concurrent.futures import Future

        pool = self.executor()
        chunks = chunked(items, size_of)
        pending: deque[Future[list[R]]] = deque()
        for chunk in chunks:
            pending.append(pool.submit(_run_chunk, fn, chunk, arg))
            if len(pending) >= IN_FLIGHT * self.count:
                break
        while pending:
            done = pending.popleft().result()
            for chunk in chunks:  # refill one slot
                pending.append(pool.submit(_run_chunk, fn, chunk, arg))
                break
            yield from done
