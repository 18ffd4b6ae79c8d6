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

Safety:
- The socket is created 0600 (umask at bind, then chmod), and every
  connection's peer uid (``SO_PEERCRED``) must be this process's uid.
- A request is one bounded message (``MAX_REQUEST_BYTES``: a length line,
  then NUL-separated fields) with exactly three descriptors, read with a
  timeout; anything else is dropped.
- At most ``MAX_CHILDREN`` commands run at once; past that a client is
  turned away and runs the command itself.
- The client must confirm (``go``) after the child accepted, so a client that
  gave up waiting never gets its command run twice.
- When the client goes away (killed), its child is stopped like a Ctrl-C;
  when ``watch`` goes away (even ``kill -9``), the server sees its pipe close,
  stops its children, removes the socket and exits.

Linux only (``SO_PEERCRED``); elsewhere ``serving`` does nothing and the CLI
runs every command itself.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from docindex.serve.rendezvous import MAX_REQUEST_BYTES, PROTOCOL, address, socket_path

MAX_ARGS = 4096
MAX_CHILDREN = 16
REQUEST_TIMEOUT_S = 2.0  # to send the request, and to confirm
STOP_GRACE_S = 10.0  # a stopped command's time to finish before it is killed
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid

Runner = Callable[[list[str], str | None], int]


def supported() -> bool:
    """Whether this platform can serve (Linux: ``SO_PEERCRED``, fork, fd passing)."""
    return sys.platform.startswith("linux")


# -- the side of `watch` ---------------------------------------------------------


class Serving:
    """The server process of one ``watch``; ``stop()`` ends it and removes the socket."""

    def __init__(
        self, path: str, proc: subprocess.Popen[bytes], ident: tuple[int, int]
    ):
        self.path = path
        self.proc = proc
        self._ident = ident

    def stop(self) -> None:
        """Close the server's pipe (it stops its children and exits), then wait."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=STOP_GRACE_S + 2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        remove_socket(self.path, self._ident)


def serve_command() -> list[str]:
    """How ``start`` runs the server: this interpreter and this installation.

    ``-P`` and an explicit path: the current folder (a checkout with its own
    ``docindex/``) must not decide which code serves. The entry point is the
    CLI's (``launcher.serve_main``), named here as text, not imported.
    """
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = (
        f"import sys; sys.path.insert(0, {home!r}); "
        "from docindex.cli.launcher import serve_main; serve_main()"
    )
    return [sys.executable, "-P", "-c", code]


def start(db: Path, command: list[str] | None = None) -> Serving:
    """Bind the socket for ``db`` and start ``command`` (``serve_command()``) to serve it.

    The command gets the listening socket's descriptor as ``--fd N`` and its
    path as ``--socket PATH``, a pipe for stdin whose end is this process's
    end, and a session of its own (a Ctrl-C in the terminal of ``watch`` is
    for ``watch``, which then stops the server).

    Raises:
        OSError: the socket cannot be made (read-only folder, a live server
            already answers there, a file in the way).
    """
    path = socket_path(db)
    listener = _bind(path)
    try:
        ident = _ident(path)
        proc = subprocess.Popen(
            [
                *(command or serve_command()),
                "--fd",
                str(listener.fileno()),
                "--socket",
                path,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            pass_fds=(listener.fileno(),),
            start_new_session=True,
        )
    except BaseException:
        listener.close()
        remove_socket(path, _ident(path))
        raise
    listener.close()
    return Serving(path, proc, ident)


def _bind(path: str) -> socket.socket:
    """A listening socket at ``path``, mode 0600; a stale socket file is replaced."""
    if os.path.lexists(path):
        st = os.lstat(path)
        if not stat.S_ISSOCK(st.st_mode):
            raise FileExistsError(f"{path} exists and is not a socket")
        if st.st_uid != os.getuid():
            raise FileExistsError(f"{path} belongs to another user")
        if _answers(path):
            raise FileExistsError(f"another watcher already serves {path}")
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    addr, fd = address(path)
    old = os.umask(0o177)  # born 0600: no window where others may connect
    try:
        sock.bind(addr)
        os.chmod(path, 0o600)
        sock.listen(64)
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old)
        if fd is not None:
            os.close(fd)
    return sock


def _answers(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    addr, fd = address(path)
    try:
        probe.connect(addr)
    except OSError:
        return False
    finally:
        probe.close()
        if fd is not None:
            os.close(fd)
    return True


def _ident(path: str) -> tuple[int, int]:
    try:
        st = os.lstat(path)
    except OSError:
        return (-1, -1)
    return (st.st_dev, st.st_ino)


def remove_socket(path: str, ident: tuple[int, int]) -> None:
    """Remove the socket file if it is still the one we made."""
    if ident != (-1, -1) and _ident(path) == ident:
        with contextlib.suppress(OSError):
            os.unlink(path)


# -- the server process ----------------------------------------------------------


def serve(
    listener: socket.socket, run: Runner, *, stamp: str, path: str, alive_fd: int = 0
) -> None:
    """Accept requests until ``alive_fd`` reads end-of-file; fork a child per request.

    Runs in the server process, which stays single-threaded so that forking
    is safe. ``run(argv, prog_name)`` runs one command in the child and
    returns its exit status. ``stamp`` names this installation; a client
    with another one runs the command itself. ``path`` (the socket's file)
    is removed on the way out if it is still this socket's.
    """
    ident = _ident(path)
    listener.setblocking(False)
    children: set[int] = set()
    poller = select.poll()
    poller.register(listener.fileno(), select.POLLIN)
    poller.register(alive_fd, select.POLLIN | select.POLLHUP)
    try:
        while True:
            events = poller.poll(1000)
            _reap(children)
            if any(fd == alive_fd for fd, _ in events):
                if not _readable_eof(alive_fd):
                    continue
                return
            if events:
                _accept(listener, run, stamp, alive_fd, children)
    finally:
        _stop_children(children)
        remove_socket(path, ident)
        listener.close()


def _readable_eof(fd: int) -> bool:
    try:
        return os.read(fd, 4096) == b""
    except OSError:
        return True


def _accept(
    listener: socket.socket, run: Runner, stamp: str, alive_fd: int, children: set[int]
) -> None:
    try:
        conn, _ = listener.accept()
    except (BlockingIOError, InterruptedError, ConnectionAbortedError):
        return
    with conn:
        if not _same_user(conn) or len(children) >= MAX_CHILDREN:
            return  # closed unanswered: the client runs the command itself
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                listener.close()
                # Let go of the pipe, keep its number taken: the received
                # descriptors must not land on 0-2 and be closed after use.
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, alive_fd)
                os.close(null)
                code = _child(conn, run, stamp)
            finally:
                os._exit(code)
        children.add(pid)


def _same_user(conn: socket.socket) -> bool:
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    except OSError:
        return False
    _pid, uid, _gid = _PEERCRED.unpack(raw)
    return bool(uid == os.getuid())


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


def _child(conn: socket.socket, run: Runner, stamp: str) -> int:
    """Take the client's descriptors, run its command, send the status; the exit code."""
    for num in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(num, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    conn.settimeout(REQUEST_TIMEOUT_S)
    try:
        request, fds = _read_request(conn)
    except (OSError, ValueError):
        return 1
    try:
        if request.stamp != stamp:
            conn.sendall(b"no stamp\n")
            return 1
        try:
            os.chdir(request.cwd)
        except OSError:
            conn.sendall(b"no cwd\n")
            return 1
        conn.sendall(b"ok\n")
        if conn.recv(1) != b"g":
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


def _read_request(conn: socket.socket) -> tuple[Request, list[int]]:
    """One request (its length line, then the fields) and exactly three descriptors.

    Raises ValueError (its descriptors closed) for anything else.
    """
    data, fds, flags, _ = socket.recv_fds(conn, 65536, 3)
    try:
        if flags & getattr(socket, "MSG_CTRUNC", 0) or len(fds) != 3:
            raise ValueError("expected three descriptors")
        head, newline, body = data.partition(b"\n")
        if not newline or not head.isdigit() or int(head) > MAX_REQUEST_BYTES:
            raise ValueError("no request length")
        size = int(head)
        while len(body) < size:
            more = conn.recv(min(65536, size - len(body)))
            if not more:
                raise ValueError("request cut short")
            body += more
        if len(body) != size:
            raise ValueError("request too long")
        request = decode_request(body)
    except (ValueError, OSError):
        for fd in fds:
            os.close(fd)
        raise
    return request, fds


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
