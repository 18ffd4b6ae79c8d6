"""A warm process beside ``docindex watch`` that runs commands for the CLI (issue #24).

A cold ``docindex query`` spends most of its time starting Python and
importing; the query itself is a few tens of milliseconds. While ``watch``
runs, it keeps a *server* process with everything imported, listening on a
Unix socket beside the index (``index.db.sock``, mode 0600). A CLI process
that finds the socket sends its argv, working folder, environment and its
three standard file descriptors (``SCM_RIGHTS``); the server forks a child
that takes over those descriptors and runs the very same command. Output,
exit status, colours, pipes and Ctrl-C behave as in a cold run, because the
same code runs on the same descriptors; only the start-up is skipped.

Why a fork per request and not threads: a command owns ``sys.stdout``,
signals and the working folder, all process-wide; a forked child of a
single-threaded parent (the server never starts a thread or opens SQLite)
owns them safely.

Safety (issues #24, #33):
- The socket is created 0600 (umask at bind, then chmod), and every
  connection's peer uid (``SO_PEERCRED``) must be this process's uid.
- The peer must see the world the watcher sees: the same mount and user
  namespaces and root (``/proc/PID/ns/mnt``, ``ns/user``, ``root``), and the
  request's folder must be the peer's own (``/proc/PID/cwd``). Otherwise the
  connection is closed and the client runs the command itself.
- Only ``rendezvous.servable`` commands run: the very list the client
  forwards; anything else is answered ``not served``.
- A request is one bounded message (``MAX_REQUEST_BYTES``: a length line,
  then NUL-separated fields), read by the server without blocking, with one
  deadline for all its bytes; only a whole request gets a child. The
  client's three descriptors come with its confirmation (``go``), after the
  child accepted: a client that gave up never gets its command run twice,
  and a stuck server holds none of the caller's pipes.
- At most ``MAX_CHILDREN`` commands run at once; past that a client is
  turned away and runs the command itself.
- When the client goes away (killed), its child is stopped like a Ctrl-C;
  when ``watch`` goes away (even ``kill -9``), the server sees its pipe close,
  stops its children, removes the socket and exits.
- One watcher's server per index: the lock file ``index.db.sock.lock``
  (``flock``), held by the watcher and its server; the next watcher serves
  once both are gone.

Linux only (``SO_PEERCRED``); elsewhere ``serving`` does nothing and the CLI
runs every command itself. This module is the server process; ``serving``
is the watcher's side that starts it (#49).
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from docindex.serve.rendezvous import MAX_REQUEST_BYTES, PROTOCOL, servable
from docindex.serve.serving import (
    LOCK_SUFFIX,
    STOP_GRACE_S,
    release_lock,
    remove_socket,
    socket_ident,
)

MAX_ARGS = 4096
MAX_CHILDREN = 16
MAX_PENDING = 64  # requests still coming in
REQUEST_TIMEOUT_S = 2.0  # all of a request's bytes; then, to confirm
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid

Runner = Callable[[list[str], str | None], int]


# -- the server process ----------------------------------------------------------


def serve(
    listener: socket.socket,
    run: Runner,
    *,
    stamp: str,
    path: str,
    alive_fd: int = 0,
    lock_fd: int | None = None,
) -> None:
    """Accept requests until ``alive_fd`` reads end-of-file; fork a child per request.

    Runs in the server process, which stays single-threaded so that forking
    is safe. ``run(argv, prog_name)`` runs one command in the child and
    returns its exit status. ``stamp`` names this installation; a client
    with another one runs the command itself. ``path`` (the socket's file)
    is removed on the way out if it is still this socket's, and so is the
    lock file held through ``lock_fd``.

    Requests are read here, in the server, without blocking: a child is
    forked only for a whole request, so connections that trickle bytes hold
    no command slot, and each has one deadline for all its bytes (#33).
    """
    ident = socket_ident(path)
    world = _world(os.getpid())
    listener.setblocking(False)
    children: set[int] = set()
    pending: dict[int, _Pending] = {}
    poller = select.poll()
    poller.register(listener.fileno(), select.POLLIN)
    poller.register(alive_fd, select.POLLIN | select.POLLHUP)
    try:
        while True:
            events = poller.poll(_poll_ms(pending))
            _reap(children)
            _expire(pending, poller)
            for fd, _ in events:
                if fd == alive_fd:
                    if _readable_eof(alive_fd):
                        return
                elif fd == listener.fileno():
                    _accept(listener, world, pending, poller)
                elif fd in pending:
                    _receive(pending[fd], pending, poller, (listener, lock_fd),
                             alive_fd, children, run, stamp)  # fmt: skip
    finally:
        for waiting in list(pending.values()):
            _drop(waiting, pending, poller)
        _stop_children(children)
        remove_socket(path, ident)
        listener.close()
        if lock_fd is not None:
            release_lock(path + LOCK_SUFFIX, lock_fd)


class _Pending:
    """A connection whose request is still coming in."""

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn = conn
        self.pid = pid
        self.data = bytearray()
        self.deadline = time.monotonic() + REQUEST_TIMEOUT_S


def _poll_ms(pending: dict[int, _Pending]) -> int:
    if not pending:
        return 1000
    soonest = min(p.deadline for p in pending.values())
    return max(0, min(1000, int((soonest - time.monotonic()) * 1000) + 1))


def _expire(pending: dict[int, _Pending], poller: select.poll) -> None:
    """Drop every connection whose request did not come whole in time."""
    now = time.monotonic()
    for waiting in [p for p in pending.values() if p.deadline <= now]:
        _drop(waiting, pending, poller)


def _drop(waiting: _Pending, pending: dict[int, _Pending], poller: select.poll) -> None:
    fd = waiting.conn.fileno()
    with contextlib.suppress(KeyError, ValueError):
        poller.unregister(fd)
    pending.pop(fd, None)
    waiting.conn.close()


def _readable_eof(fd: int) -> bool:
    try:
        return os.read(fd, 4096) == b""
    except OSError:
        return True


def _accept(
    listener: socket.socket,
    world: tuple[tuple[int, int], ...] | None,
    pending: dict[int, _Pending],
    poller: select.poll,
) -> None:
    try:
        conn, _ = listener.accept()
    except (BlockingIOError, InterruptedError, ConnectionAbortedError):
        return
    pid = _peer(conn)
    # Another user, or a process that sees another world (a private mount
    # namespace, a chroot): closed unanswered, the client runs the command
    # itself, where it sees what its caller sees (#33).
    if pid is None or world is None or _world(pid) != world:
        conn.close()
        return
    if len(pending) >= MAX_PENDING:  # the oldest unfinished request gives way
        _drop(min(pending.values(), key=lambda p: p.deadline), pending, poller)
    conn.setblocking(False)
    pending[conn.fileno()] = _Pending(conn, pid)
    poller.register(conn.fileno(), select.POLLIN)


def _peer(conn: socket.socket) -> int | None:
    """The pid of the process behind ``conn``, if it runs as our user."""
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    except OSError:
        return None
    pid, uid, _gid = _PEERCRED.unpack(raw)
    return pid if uid == os.getuid() and pid > 0 else None


def _world(pid: int) -> tuple[tuple[int, int], ...] | None:
    """What process ``pid`` sees of the files: its mount and user namespaces, its root.

    None when it cannot be read (a process gone, another user's): never the same.
    """
    out = []
    for name in ("ns/mnt", "ns/user", "root"):
        try:
            st = os.stat(f"/proc/{pid}/{name}")
        except OSError:
            return None
        out.append((st.st_dev, st.st_ino))
    return tuple(out)


def _receive(
    waiting: _Pending,
    pending: dict[int, _Pending],
    poller: select.poll,
    owned: tuple[socket.socket, int | None],
    alive_fd: int,
    children: set[int],
    run: Runner,
    stamp: str,
) -> None:
    """Read what came of a request; fork its child once it is whole."""
    try:
        request = _read_more(waiting)
    except BlockingIOError:
        return
    except (OSError, ValueError):
        _drop(waiting, pending, poller)
        return
    if request is None:
        return
    poller.unregister(waiting.conn.fileno())
    pending.pop(waiting.conn.fileno())
    if len(children) >= MAX_CHILDREN:  # the client runs the command itself
        _drop(waiting, {}, poller)
        return
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            listener, lock_fd = owned
            listener.close()
            if lock_fd is not None:  # a long command must not hold the lock
                os.close(lock_fd)
            for other in pending.values():
                other.conn.close()
            # Let go of the pipe, keep its number taken: the received
            # descriptors must not land on 0-2 and be closed after use.
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, alive_fd)
            os.close(null)
            waiting.conn.setblocking(True)
            code = _child(waiting.conn, run, stamp, request, waiting.pid)
        finally:
            os._exit(code)
    children.add(pid)
    _drop(waiting, {}, poller)


def _read_more(waiting: _Pending) -> Request | None:
    """Take what the socket holds; the request once whole, else None.

    Raises ValueError for anything but one request (its length line, then
    the fields, and no descriptor: they come with the confirmation);
    BlockingIOError when nothing came; OSError when the connection broke.
    """
    data, fds, flags, _ = socket.recv_fds(waiting.conn, 65536, 3)
    for fd in fds:
        os.close(fd)
    if fds or flags & getattr(socket, "MSG_CTRUNC", 0):
        raise ValueError("descriptors before the server took the request")
    if not data:
        raise ValueError("request cut short")
    waiting.data += data
    head, newline, body = bytes(waiting.data).partition(b"\n")
    if not newline:
        if len(head) > len(str(MAX_REQUEST_BYTES)) or not head.isdigit():
            raise ValueError("no request length")
        return None
    if not head.isdigit() or int(head) > MAX_REQUEST_BYTES:
        raise ValueError("no request length")
    if len(body) < int(head):
        return None
    if len(body) != int(head):
        raise ValueError("request too long")
    return decode_request(body)


def _reap(children: set[int]) -> None:
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def _stop_children(children: set[int]) -> None:
    """SIGTERM every running command (a graceful stop), SIGKILL what outlives the grace."""
    for pid in children:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while children and time.monotonic() < deadline:
        _reap(children)
        time.sleep(0.02)
    for pid in children:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    children.clear()


# -- one request, in the forked child -------------------------------------------


def _child(
    conn: socket.socket, run: Runner, stamp: str, request: Request, peer: int
) -> int:
    """Take the client's descriptors, run its command, send the status; the exit code.

    The descriptors come with the client's confirmation (``g``), after our
    ``ok``: a server that never answers (stopped) holds none of them, so the
    caller's pipes still close when the caller runs the command itself.
    """
    for num in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(num, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    conn.settimeout(REQUEST_TIMEOUT_S)
    fds: list[int] = []
    try:
        if request.stamp != stamp:
            conn.sendall(b"no stamp\n")
            return 1
        if not servable(request.argv):
            conn.sendall(b"not served\n")  # the client runs it itself
            return 1
        try:
            os.chdir(request.cwd)
            here, theirs = os.stat("."), os.stat(f"/proc/{peer}/cwd")
        except OSError:
            conn.sendall(b"no cwd\n")
            return 1
        if (here.st_dev, here.st_ino) != (theirs.st_dev, theirs.st_ino):
            conn.sendall(b"no cwd\n")  # not the folder the caller is in
            return 1
        conn.sendall(b"ok\n")
        go, fds, flags, _ = socket.recv_fds(conn, 1, 3)
        if go != b"g" or len(fds) != 3 or flags & getattr(socket, "MSG_CTRUNC", 0):
            return 1
        _take_over(request, fds)
    finally:
        for fd in fds:
            os.close(fd)
    conn.settimeout(None)
    threading.Thread(target=_watch_client, args=(conn,), daemon=True).start()
    code = _run(run, request)
    with contextlib.suppress(OSError):
        conn.sendall(f"{code}\n".encode())
    return code


class Request(NamedTuple):
    """A client's command, read back from ``rendezvous.encode_request``."""

    stamp: str
    cwd: str
    umask: int
    prog: str | None
    stdio: list[tuple[str, str]]
    argv: list[str]
    env: dict[str, str]


def decode_request(body: bytes) -> Request:
    """The fields of ``rendezvous.encode_request``, checked before any is used.

    Raises ValueError for another protocol or a malformed request.
    """
    try:
        fields = body.decode("utf-8", "surrogatepass").split("\0")
    except UnicodeDecodeError as exc:
        raise ValueError("not UTF-8") from exc
    if len(fields) < 12 or fields[0] != str(PROTOCOL):
        raise ValueError("not a request")
    stamp, cwd, umask, prog = fields[1:5]
    stdio = [(fields[i], fields[i + 1]) for i in (5, 7, 9)]
    if not fields[11].isdigit() or not 0 < int(fields[11]) <= MAX_ARGS:
        raise ValueError("bad argv")
    n_args = int(fields[11])
    argv = fields[12 : 12 + n_args]
    pairs = fields[12 + n_args :]
    if len(argv) != n_args:
        raise ValueError("bad argv")
    env: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not key or not eq:
            raise ValueError("bad environment")
        env[key] = value
    if not cwd or not umask or any(c not in "01234567" for c in umask):
        raise ValueError("bad cwd or umask")
    return Request(stamp, cwd, int(umask, 8) & 0o777, prog or None, stdio, argv, env)


def _take_over(request: Request, fds: list[int]) -> None:
    """Become the client: its descriptors 0-2, environment, umask, argv."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.environ.clear()
    os.environ.update(request.env)
    time.tzset()  # TZ is read once per process otherwise
    os.umask(request.umask)
    sys.argv = list(request.argv)
    streams = []
    for fd, (encoding, errors) in enumerate(request.stdio):
        try:
            streams.append(_stream(fd, encoding, errors))
        except LookupError:
            streams.append(_stream(fd, "utf-8", "strict"))
    sys.stdin, sys.stdout, sys.stderr = streams


def _stream(fd: int, encoding: str, errors: str) -> io.TextIOWrapper:
    """A text stream on ``fd`` as Python's start-up makes it."""
    tty = os.isatty(fd)
    if fd == 0:
        return io.TextIOWrapper(
            open(fd, "rb", closefd=False), encoding=encoding, errors=errors
        )
    raw = open(fd, "wb", closefd=False)
    # stdout is line-buffered on a terminal; stderr always (Python 3.9+).
    return io.TextIOWrapper(
        raw, encoding=encoding, errors=errors, line_buffering=tty or fd == 2
    )


def _watch_client(conn: socket.socket) -> None:
    """Relay the client's signals; stop the command when the client is gone."""
    while True:
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        if not data:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(STOP_GRACE_S)
            os._exit(128 + signal.SIGKILL)
        for num in data:
            if num in _SIGNALS:
                os.kill(os.getpid(), num)


def _run(run: Runner, request: Request) -> int:
    """``run`` with Python's own handling of what escapes it: status, message, traceback."""
    try:
        code = run(list(request.argv), request.prog)
    except SystemExit as exc:
        code = _exit_status(exc.code)
    except KeyboardInterrupt:
        code = 128 + signal.SIGINT
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    return code


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1
