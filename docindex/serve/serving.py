"""The side of ``docindex watch`` that keeps a warm server (issue #24, #33).

``start`` binds the socket beside the index (mode 0600) and starts the
server process (``server.serve``, through ``serve_command``) under the lock
file ``index.db.sock.lock``: one watcher's server per index; another watcher
takes over once both the first watcher and its server are gone. Split from
``server`` (the server process itself), #49.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

from docindex.serve.rendezvous import address, socket_path

STOP_GRACE_S = 10.0  # a stopped command's time to finish before it is killed
LOCK_SUFFIX = ".lock"
TAKEOVER_POLL_S = 0.5


def supported() -> bool:
    """Whether this platform can serve (Linux: ``SO_PEERCRED``, fork, fd passing)."""
    return sys.platform.startswith("linux")


class Serving:
    """The server of one ``watch``; ``stop()`` ends it and removes the socket.

    One watcher serves an index at a time: the one holding the lock file
    (``index.db.sock.lock``, ``flock``). Another watcher of the same index
    tries the lock every ``TAKEOVER_POLL_S`` and serves once the first one
    has exited, however it exited (#33).
    """

    def __init__(self, path: str, command: list[str] | None = None) -> None:
        self.path = path
        self.proc: subprocess.Popen[bytes] | None = None
        self._command = command
        self._ident = (-1, -1)
        self._lock_fd: int | None = None
        self._stopped = threading.Event()
        self._mutex = threading.Lock()
        self._waiter: threading.Thread | None = None

    def _try(self) -> bool:
        """Serve if the lock is free; whether this watcher serves now."""
        fd = _take_lock(self.path + LOCK_SUFFIX)
        if fd is None:
            return False
        with self._mutex:
            if self._stopped.is_set():
                release_lock(self.path + LOCK_SUFFIX, fd)
                return True
            self._lock_fd = fd
            try:
                self.proc, self._ident = _spawn(self.path, self._command, fd)
            except BaseException:
                self._lock_fd = None
                release_lock(self.path + LOCK_SUFFIX, fd)
                raise
        return True

    def _wait_for_turn(self) -> None:
        while not self._stopped.wait(TAKEOVER_POLL_S):
            try:
                if self._try():
                    return
            except OSError:
                continue  # a socket that cannot be made yet: try again later

    def stop(self) -> None:
        """Close the server's pipe (it stops its children and exits), then wait."""
        with self._mutex:
            self._stopped.set()
        if self._waiter is not None:
            self._waiter.join()
        proc = self.proc
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            try:
                proc.wait(timeout=STOP_GRACE_S + 2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            remove_socket(self.path, self._ident)
        if self._lock_fd is not None:
            release_lock(self.path + LOCK_SUFFIX, self._lock_fd)
            self._lock_fd = None


def _take_lock(path: str) -> int | None:
    """The lock file's descriptor, locked; None while another watcher holds it.

    Raises:
        OSError: the lock file cannot be made, or is another user's.
    """
    import fcntl  # POSIX only, as serving is

    while True:
        old = os.umask(0o177)
        try:
            fd = os.open(
                path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
        finally:
            os.umask(old)
        try:
            st = os.fstat(fd)
            if st.st_uid != os.getuid() or not stat.S_ISREG(st.st_mode):
                raise PermissionError(f"{path} belongs to another user")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            # The holder removes the file on its way out: a lock taken on a
            # removed file is no lock, take the one at the path now.
            try:
                now = os.lstat(path)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def release_lock(path: str, fd: int) -> None:
    """Remove the lock file (still holding it), then let it go."""
    with contextlib.suppress(OSError):
        st, now = os.fstat(fd), os.lstat(path)
        if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            os.unlink(path)
    os.close(fd)


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
    """Serve ``db`` with ``command`` (``serve_command()``) now, or once it is our turn.

    The command gets the listening socket's descriptor as ``--fd N`` and its
    path as ``--socket PATH``, a pipe for stdin whose end is this process's
    end, and a session of its own (a Ctrl-C in the terminal of ``watch`` is
    for ``watch``, which then stops the server). While another watcher serves
    the index, a thread takes over when it exits.

    Raises:
        OSError: the socket or its lock file cannot be made (read-only
            folder, a file in the way, another user's).
    """
    serving = Serving(socket_path(db), command)
    if not serving._try():
        serving._waiter = threading.Thread(
            target=serving._wait_for_turn, name="docindex-serve-wait", daemon=True
        )
        serving._waiter.start()
    return serving


def _spawn(
    path: str, command: list[str] | None, lock_fd: int
) -> tuple[subprocess.Popen[bytes], tuple[int, int]]:
    """Bind the socket and start the server; it shares our hold on the lock.

    Shared, so that the lock is free only once both the watcher and its
    server are gone: a watcher killed with -9 hands over only when its server
    has stopped its commands and exited.
    """
    listener = _bind(path, replace=True)
    try:
        ident = socket_ident(path)
        proc = subprocess.Popen(
            [
                *(command or serve_command()),
                "--fd",
                str(listener.fileno()),
                "--socket",
                path,
                "--lock-fd",
                str(lock_fd),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            pass_fds=(listener.fileno(), lock_fd),
            start_new_session=True,
        )
    except BaseException:
        listener.close()
        remove_socket(path, socket_ident(path))
        raise
    listener.close()
    return proc, ident


def _bind(path: str, *, replace: bool = False) -> socket.socket:
    """A listening socket at ``path``, mode 0600; a stale socket file is replaced.

    ``replace``: we hold the lock, so a socket that still answers is a
    server on its way out (its watcher is gone) or a server of an older
    version, which holds no lock: ours takes its place.
    """
    if os.path.lexists(path):
        st = os.lstat(path)
        if not stat.S_ISSOCK(st.st_mode):
            raise FileExistsError(f"{path} exists and is not a socket")
        if st.st_uid != os.getuid():
            raise FileExistsError(f"{path} belongs to another user")
        if not replace and _answers(path):
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


def socket_ident(path: str) -> tuple[int, int]:
    try:
        st = os.lstat(path)
    except OSError:
        return (-1, -1)
    return (st.st_dev, st.st_ino)


def remove_socket(path: str, ident: tuple[int, int]) -> None:
    """Remove the socket file if it is still the one we made."""
    if ident != (-1, -1) and socket_ident(path) == ident:
        with contextlib.suppress(OSError):
            os.unlink(path)
