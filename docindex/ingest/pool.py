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

No code from the current folder runs in a worker (issue #33): multiprocessing
starts the forkserver, the resource tracker and spawned workers with
``python -c``, which puts the current folder first on ``sys.path`` before
anything is imported. They start with ``PYTHONSAFEPATH`` (``-P``) and without
``PYTHONPATH``; the forkserver then takes the parent's own ``sys.path``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import subprocess
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess
    from types import FrameType

POOL_THRESHOLD = 48  # items to prepare before a process pool pays for itself
CHUNK_BYTES = 256 * 1024  # a worker's unit of work: ~this many bytes of files
CHUNK_FILES = 32
IN_FLIGHT = 3  # chunks submitted ahead, per worker (bounds memory, issue #7)

T = TypeVar("T")
R = TypeVar("R")
A = TypeVar("A")


_ENV_LOCK = threading.Lock()


@contextlib.contextmanager
def _safe_path_env() -> Iterator[None]:
    """Start Python children with no current folder and no ``PYTHONPATH`` (#33).

    multiprocessing passes no environment of its own to the interpreters it
    starts, so they take ours: set ``PYTHONSAFEPATH`` (``-P``, Python 3.11+)
    and drop ``PYTHONPATH`` while they start, then put both back.
    """
    with _ENV_LOCK:
        saved = {k: os.environ.get(k) for k in ("PYTHONSAFEPATH", "PYTHONPATH")}
        os.environ["PYTHONSAFEPATH"] = "1"
        os.environ.pop("PYTHONPATH", None)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


class ExtractTimeout(BaseException):
    """Raised by the alarm; a BaseException so no library's ``except Exception`` eats it."""


_limit = [0.0]  # the running deadline's seconds, for its message
_installed = [0]  # the process that installed ``_fire`` (a fork inherits it)
BUDGET_BYTES = 1 << 20  # a file gets its budget once per MiB of it (issue #46)


_fired = [False]  # the running deadline passed (its exception may have been lost)
REFIRE_S = 0.01  # CPU seconds between raises once a deadline has passed


def _timeout() -> ExtractTimeout:
    return ExtractTimeout(f"took over {_limit[0]:.3g} CPU-s")


def _fire(signum: int, frame: object) -> None:
    _fired[0] = True
    raise _timeout()


def cpu_budget(seconds: float, size: int) -> float:
    """A file's CPU budget: ``seconds`` for each MiB of it, at least ``seconds``.

    Issue #46: a legitimate big file takes time in proportion to its size (a
    1 MB Markdown file of 40,000 sections, a 5 MB text file), and hostile
    input is what takes more than that.
    """
    return seconds * max(1.0, size / BUDGET_BYTES)


class deadline:
    """Bound a call's CPU time with SIGPROF (POSIX main thread only; else unbounded).

    CPU time, not wall time (issue #46): on a machine busy with other work
    (load 6 on two cores) a worker gets a fraction of a core, and a wall-time
    budget dropped legitimate big files as ``timeout``; the CPU a file takes
    is the same whatever the load. ``ITIMER_PROF`` counts this process's user
    and system time. The handler stays installed after the first use:
    ``signal.signal`` and even ``getsignal`` cost more than the two
    ``setitimer`` calls, and every file of a scan passes two deadlines
    (extraction, then indexing its text: issue #33). Not nested.

    A signal's exception raised where Python swallows exceptions (a ``gc``
    callback, a ``__del__``) is lost; so the timer fires again every
    ``REFIRE_S`` until the block ends, and a block that ends after its
    deadline passed raises then.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = False

    def __enter__(self) -> None:
        import signal
        import threading

        if not hasattr(signal, "setitimer") or not hasattr(signal, "SIGPROF"):
            return
        if threading.current_thread() is not threading.main_thread():
            return
        if _installed[0] != os.getpid():
            signal.signal(signal.SIGPROF, _fire)
            _installed[0] = os.getpid()
        _limit[0], _fired[0] = self.seconds, False
        signal.setitimer(signal.ITIMER_PROF, self.seconds, REFIRE_S)
        self.armed = True

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if self.armed:
            import signal

            signal.setitimer(signal.ITIMER_PROF, 0)
            if _fired[0] and kind is None:
                raise _timeout()


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


class _Cut(BaseException):
    """Raised by a signal inside a file read in this process: a BaseException,
    so no ``except Exception`` of the extractors turns it into a skip."""


@contextlib.contextmanager
def _cut_on_signal(stop: Callable[[], bool]) -> Iterator[None]:
    """Run one file in this process so that SIGINT/SIGTERM end it at once.

    The caller's handlers run first (the CLI's first signal only sets the
    event ``stop`` reads); once ``stop()`` is true the file is abandoned and
    ``Stopped`` raised, as a worker would be killed (issue #33: a signal
    waited for a slow Markdown file read in the scan's own process). Reading
    a file writes nothing, so nothing is left half done.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Callable[[int, FrameType | None], object]] = {}

    def handle(signum: int, frame: FrameType | None) -> None:
        previous[signum](signum, frame)
        if stop():
            raise _Cut

    for sig in (signal.SIGINT, signal.SIGTERM):
        before = signal.getsignal(sig)
        if callable(before):  # a default or ignored signal keeps its meaning
            previous[sig] = before
            signal.signal(sig, handle)
    try:
        yield
    except _Cut:
        raise Stopped from None
    finally:
        for num, handler in previous.items():
            signal.signal(num, handler)


@contextlib.contextmanager
def _children_unsignalled() -> Iterator[None]:
    """Start helper processes with Ctrl-C, SIGTERM and SIGHUP blocked.

    The forkserver and the resource tracker are new interpreters that leave
    the terminal's process group only once they run (``_forkserver``). A
    signal to the group while they started killed them: a KeyboardInterrupt
    traceback on the terminal, or "unexpected EOF" when the next worker was
    asked of a dead server and click's "Aborted!" with exit 1 (#45: ``watch``
    signalled one second into its catch-up). A blocked signal stays blocked
    across fork and exec, so they never see one; they end when the scan
    closes their pipes. Here a signal stays pending and is handled (by
    ``cli.signals``) once unblocked.
    """
    import signal

    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    wanted = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP")}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _worker_main(conn: Connection, lifeline: Connection) -> None:
    """A worker: run ``(fn, chunk, arg)`` requests from ``conn`` until told to stop.

    Each worker has its own pipe (no queue shared between processes, no lock a
    killed worker could leave held, no reader thread to hang in the parent).
    """
    import signal
    import threading

    # Ctrl-C is the parent's to handle (it stops the workers itself); a worker
    # that got it anyway would print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_lifeline, args=(lifeline,), daemon=True).start()
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        fn, chunk, arg = request
        try:
            reply: tuple[bool, object] = (True, [fn(item, arg) for item in chunk])
        except Exception as exc:  # fn's own failure: the parent re-raises it
            reply = (False, RuntimeError(f"{type(exc).__name__}: {exc}"))
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return


#: Commands a worker is running (OCR's tesseract, issue #36): they go with it.
CHILDREN: set[subprocess.Popen[bytes]] = set()


def _watch_lifeline(lifeline: Connection) -> None:
    """Block until the parent closes the lifeline or dies, then exit at once."""
    try:
        lifeline.recv_bytes()
    except (EOFError, OSError):
        pass
    for child in list(CHILDREN):  # a killed scan leaves no process behind
        with contextlib.suppress(OSError):
            child.kill()
    os._exit(1)


class _Proc:
    """One worker process, its pipe, and the chunk numbers it owes, in order."""

    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn
        self.owed: list[int] = []


class Workers(Generic[A]):
    """A process pool, booted as soon as the caller knows it will pay.

    Booting early (issue #7) lets the forkserver start and import the worker
    modules (``preload``) while the main process is still walking, instead
    of after the walk, on the critical path.
    """

    def __init__(self, count: int, preload: Sequence[str] = ()) -> None:
        self.count = count or min(2, os.cpu_count() or 1)
        self.preload = list(preload)
        self.procs: list[_Proc] = []
        self._ctx: Any = (
            None  # a multiprocessing context (typeshed's BaseContext has no Process)
        )
        self._lifeline: tuple[Connection, Connection] | None = (
            None  # (read end, write end) while workers live
        )

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
            from multiprocessing import forkserver, resource_tracker

            # Workers fork from a server that imported these once, instead of
            # each importing them itself; the server skips what will not import.
            # docindex._forkserver detaches the server from the terminal.
            self._ctx.set_forkserver_preload(
                ["docindex.ingest._forkserver", *self.preload]
            )
            with _safe_path_env():
                # The tracker blocks the signals around its own start (and
                # unblocks them after): started first, on its own.
                resource_tracker.ensure_running()
                with _children_unsignalled():
                    forkserver.ensure_running()  # spawns the server; no wait

    def _start(self) -> _Proc:
        """Start one worker (the pool's context, booted on first use)."""
        if self._ctx is None:
            import multiprocessing

            self.boot()
            self._ctx = self._ctx or multiprocessing.get_context()
        if self._lifeline is None:
            self._lifeline = self._ctx.Pipe(duplex=False)
        ours, theirs = self._ctx.Pipe()
        process = self._ctx.Process(
            target=_worker_main, args=(theirs, self._lifeline[0]), daemon=True,
            name="docindex-worker",
        )  # fmt: skip
        # "spawn" starts a ``python -c`` per worker; with "forkserver", start()
        # starts the server again if it is gone
        with _safe_path_env(), _children_unsignalled():
            process.start()
        theirs.close()  # the worker holds it now: EOF reaches us if it dies
        return _Proc(process, ours)

    def close(self, kill: bool = False) -> None:
        """Stop the workers.

        Args:
            kill: stop them at once (an interrupt, an error) instead of letting
                them finish the chunks they are preparing.
        """
        if kill and self._lifeline is not None:
            self._lifeline[1].close()  # every worker's watcher exits it now
        for proc in self.procs:
            if not kill:
                with contextlib.suppress(OSError):
                    proc.conn.send(None)
            proc.conn.close()
        for proc in self.procs:
            proc.process.join(timeout=0.5 if kill else 10)
            if proc.process.is_alive():
                proc.process.kill()
                proc.process.join(timeout=5)
        self.procs = []
        if self._lifeline is not None:
            for end in self._lifeline:
                end.close()
            self._lifeline = None

    def map_ordered(
        self, fn: Callable[[T, A], R], items: Sequence[T], arg: A,
        size_of: Callable[[T], int], stop: Callable[[], bool] | None = None,
        failed: Callable[[T, str], R] | None = None, isolate: bool = False,
    ) -> Iterator[R]:  # fmt: skip
        """``fn(item, arg)`` for each item, in order, in worker processes when it pays.

        At most ``IN_FLIGHT`` chunks per worker are sent ahead of the one being
        consumed (issue #7), each to the worker owing the fewest, so results
        never pile up in memory when the consumer is the slower side. Results
        come back in order, so one core or two give the same output. ``fn``
        must be a picklable top-level function.

        Args:
            failed: makes the result of an item whose worker died under it
                (a crash in a C library, the OOM killer); the worker is
                replaced and the other chunks it owed go to the new one.
                Without it a dead worker raises RuntimeError.
            isolate: use the workers even below ``POOL_THRESHOLD`` items, so
                that ``stop()`` can kill a worker stuck in one file instead of
                waiting for it in this process (issue #33: a signal waited
                100 s for one PDF).

        Raises:
            Stopped: ``stop()`` turned true while waiting for a worker (checked
                every 0.1 s); the workers are stopped at once.
        """
        if self.count <= 1 or (len(items) < POOL_THRESHOLD and not isolate):
            yield from _map_here(fn, items, arg, stop)
            return
        from multiprocessing.connection import wait

        while len(self.procs) < self.count:
            self.procs.append(self._start())
        chunks = chunked(items, size_of)
        sent: dict[int, list[T]] = {}  # chunk number -> its items, until consumed
        owner: dict[int, _Proc] = {}
        head = 0

        def send(number: int, chunk: list[T], proc: _Proc | None = None) -> None:
            proc = proc or min(self.procs, key=lambda p: len(p.owed))
            proc.conn.send((fn, chunk, arg))
            proc.owed.append(number)
            sent[number], owner[number] = chunk, proc

        for number, chunk in enumerate(chunks):
            send(number, chunk)
            if len(sent) >= IN_FLIGHT * self.count:
                break
        while head in sent:
            proc = owner[head]
            while not wait([proc.conn], timeout=0.1):
                if stop is not None and stop():
                    self.close(kill=True)
                    raise Stopped
            try:
                ok, payload = proc.conn.recv()
            except (EOFError, OSError):
                why = self._bury(proc)
                if failed is None:
                    raise RuntimeError(why) from None
                fresh = self.procs[-1]
                for later in proc.owed[1:]:  # never started: the new worker's now
                    send(later, sent[later], fresh)
                ok, payload = True, [failed(item, why) for item in sent[head]]
            else:
                proc.owed.pop(0)
            if not ok:
                raise payload
            del sent[head], owner[head]
            head += 1
            for chunk in chunks:  # refill one slot
                send(head + len(sent), chunk)
                break
            yield from payload

    def _bury(self, dead: _Proc) -> str:
        """Replace a worker that died; say how it died."""
        dead.process.join(timeout=5)
        dead.conn.close()
        self.procs.remove(dead)
        self.procs.append(self._start())
        return f"worker process died (exit code {dead.process.exitcode})"


def _map_here(
    fn: Callable[[T, A], R], items: Sequence[T], arg: A,
    stop: Callable[[], bool] | None,
) -> Iterator[R]:  # fmt: skip
    """``Workers.map_ordered`` in this process (one core, or a few items)."""
    for item in items:
        if stop is None:
            yield fn(item, arg)
            continue
        with _cut_on_signal(stop):
            result = fn(item, arg)
        yield result
