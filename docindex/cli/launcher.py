"""The ``docindex`` entry point: hand a command to a watcher's server, else run it here.

While ``docindex watch`` runs for an index, it keeps a warm server process
(``docindex.server``). This module is all a CLI process imports before it
knows whether one answers, so it stays light: ``os`` and ``sys`` up front,
``_socket`` and ``_signal`` only when a socket file is there, ``click`` and the
rest only when the command runs here.

``DOCINDEX_WATCHER``: ``auto`` (default) asks a server when one listens;
``off`` never asks (and ``watch`` serves nothing); ``require`` fails (exit 1)
when no server answers a command it could have served.
"""

from __future__ import annotations

import os
import sys

from docindex.serve.rendezvous import WATCHER_ENV, servable, socket_path, watcher_mode

TYPE_CHECKING = False  # typing costs a client 2 ms; mypy reads the name alone
if TYPE_CHECKING:
    import _socket

# Connect, send and the server's first answer, all within one deadline
# (issue #33): a stuck server (a stopped watcher) costs a command 0.2 s at
# most, then it runs here. `require` waits longer: it wants the server.
CONNECT_TIMEOUT_S = 0.2
REQUIRE_TIMEOUT_S = 5.0
# config.DEFAULT_DB_DIR / DEFAULT_DB_NAME, not imported: config costs start-up.
_INDEX_DIR, _INDEX_NAME = ".docindex", "index.db"


def main(prog_name: str | None = None) -> None:
    """Run ``docindex`` with ``sys.argv``: through a watcher's server when one answers."""
    _until_the_command_runs()
    code = forward(sys.argv, prog_name)
    if code is not None:
        sys.exit(code)
    from docindex.cli.main import cli

    cli(prog_name=prog_name)


def _early_stop(signum: int, frame: object) -> None:
    """A signal before the command's own handlers: nothing has been done yet."""
    os.write(2, b"interrupted; the index keeps its last committed state\n")
    os._exit(128 + signum)


def _until_the_command_runs() -> None:
    """End quietly on Ctrl-C, SIGTERM or SIGHUP while Python imports the command.

    Until the command installs its own handlers (``cli.signals``), Ctrl-C was a
    KeyboardInterrupt traceback from whatever import it hit, or click's
    "Aborted!" and exit 1 (#45: ``watch`` signalled one second in). ``_signal``,
    not ``signal``: the wrapper imports ``enum``.
    """
    import _signal

    for num in (_signal.SIGINT, _signal.SIGTERM, getattr(_signal, "SIGHUP", 0)):
        if num and _signal.getsignal(num) in (
            _signal.SIG_DFL,
            _signal.default_int_handler,
        ):
            _signal.signal(num, _early_stop)


def forward(argv: list[str], prog_name: str | None = None) -> int | None:
    """The exit status of ``argv`` run by a watcher's server, or None to run it here."""
    how = watcher_mode()
    if how == "off" or not servable(argv):
        return None
    if not sys.platform.startswith("linux"):  # no server there (SO_PEERCRED)
        path = None
    else:
        path = find_socket(argv[2:])
    wait = REQUIRE_TIMEOUT_S if how == "require" else CONNECT_TIMEOUT_S
    code = _ask(path, argv, prog_name, wait) if path else None
    if code is None and how == "require":
        sys.stderr.write(
            f"Error: no watcher answers for this index ({WATCHER_ENV}=require)\n"
        )
        return 1
    return code


def find_socket(args: list[str]) -> str | None:
    """The socket of the index these arguments most likely use, if it exists.

    A guess (``--db``, ``DOCINDEX_DB``, else the nearest ``.docindex/`` upward):
    the server runs the command with the caller's folder, environment and
    arguments, so the command finds its index by the real rule either way.
    """
    db = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--db" and i + 1 < len(args):
            db = args[i + 1]
        elif arg.startswith("--db="):
            db = arg[5:]
    db = db or os.environ.get("DOCINDEX_DB") or None
    if db:
        path = socket_path(os.path.abspath(os.path.expanduser(db)))
        return path if os.path.exists(path) else None
    try:
        folder = os.getcwd()
    except OSError:
        return None
    while True:
        index = os.path.join(folder, _INDEX_DIR, _INDEX_NAME)
        if os.path.exists(index):
            path = socket_path(index)
            return path if os.path.exists(path) else None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _ask(path: str, argv: list[str], prog_name: str | None, wait: float) -> int | None:
    """Send the command and our descriptors; None when the server does not take it.

    ``_socket`` and ``_signal``, not ``socket`` and ``signal``: the wrappers
    import ``enum`` and ``selectors``, 5-8 ms of a 60 ms served query.
    """
    import _socket

    from docindex.serve.rendezvous import (
        MAX_REQUEST_BYTES,
        address,
        encode_request,
        stamp,
    )

    try:
        stdio = [
            (s.encoding, s.errors or "strict")
            for s in (sys.stdin, sys.stdout, sys.stderr)
        ]
        cwd = os.getcwd()
    except (AttributeError, OSError):  # a closed standard stream, a deleted folder
        return None
    umask = os.umask(0o022)
    os.umask(umask)
    env = dict(os.environ)
    if any("\0" in x for x in (*argv, cwd, prog_name or "")):
        return None  # not from exec(); the server could not read it back
    data = encode_request(stamp(), list(argv), prog_name, cwd, env, umask, stdio)
    if len(data) > MAX_REQUEST_BYTES:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    relay = _Relay(sock)
    addr, folder_fd = address(path)
    deadline = _monotonic() + wait
    try:
        sock.settimeout(wait)
        sock.connect(addr)
        if not _ours(sock):
            raise ConnectionRefusedError("the server is another user's")
        sent = 0
        while sent < len(data):
            sock.settimeout(_left(deadline))
            sent += sock.send(data[sent:])
        if _line(sock, deadline) == b"ok":
            # Our descriptors go with the confirmation, to a server that
            # answered: a stopped one never holds our pipes open (#33).
            fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
            sock.sendmsg([b"g"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            # From here the server runs it: no way back.
            return relay.wait()
    except OSError:
        pass
    finally:
        if folder_fd is not None:
            os.close(folder_fd)
    sock.close()
    return relay.give_up()


def _monotonic() -> float:
    import time  # built in: no import cost

    return time.monotonic()


def _left(deadline: float) -> float:
    """The time left before ``deadline``; a timeout once it has passed."""
    left = deadline - _monotonic()
    if left <= 0:
        raise TimeoutError("the watcher's server did not answer in time")
    return left


def _ours(sock: _socket.socket) -> bool:
    """Whether the process behind ``sock`` runs as our user (``SO_PEERCRED``).

    Checked before anything is sent: a socket another user made where ours
    would be (a shared folder, ``--db /tmp/x.db``) must never get our
    arguments, environment or terminal.
    """
    import _socket

    cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # pid, uid, gid
    return int.from_bytes(cred[4:8], sys.byteorder) == os.getuid()


class _Relay:
    """Our Ctrl-C, SIGTERM and SIGHUP, for the command wherever it runs.

    Installed before we connect: a signal that comes before the server took
    the command is kept, then relayed once it runs, or (when we run nothing)
    ends this process as it would have ended a cold one.
    """

    def __init__(self, sock: _socket.socket) -> None:
        import _signal

        self.sock = sock
        self.running = False
        self.pending: list[int] = []
        self.previous = {
            num: _signal.signal(num, self._on_signal)
            for num in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
        }

    def _on_signal(self, signum: int, frame: object) -> None:
        if not self.running:
            self.pending.append(signum)
            return
        try:
            self.sock.send(bytes([signum]))
        except OSError:
            pass

    def wait(self) -> int:
        """Relay signals until the server sends the command's exit status."""
        self.running = True
        for signum in self.pending:
            self._on_signal(signum, None)
        self.sock.settimeout(None)
        try:
            line = _line(self.sock)
        except OSError:
            line = b""
        finally:
            self.sock.close()
        if not line.isdigit():
            sys.stderr.write(
                "Error: the watcher's server stopped before the command ended\n"
            )
            return 1
        return int(line)

    def give_up(self) -> int | None:
        """The server did not take the command: None to run it here, or 128 + N."""
        import _signal

        for num, handler in self.previous.items():
            _signal.signal(num, handler)
        if self.pending:
            sys.stderr.write("interrupted; the index keeps its last committed state\n")
            return 128 + self.pending[0]
        return None


def _line(sock: _socket.socket, deadline: float | None = None) -> bytes:
    """One short line from ``sock`` (without its newline); b'' at end of stream.

    With ``deadline`` (``time.monotonic``), the whole line must come before it.
    """
    data = b""
    while not data.endswith(b"\n"):
        if deadline is not None:
            sock.settimeout(_left(deadline))
        more = sock.recv(64)
        if not more:
            return b""
        data += more
        if len(data) > 64:
            return b""
    return data[:-1]


# -- the server process (started by `watch`) -------------------------------------


def serve_main() -> None:
    """The server process: import what the served commands use, then serve."""
    import socket

    from docindex.serve import server
    from docindex.serve.rendezvous import stamp

    fd = int(sys.argv[sys.argv.index("--fd") + 1])
    path = sys.argv[sys.argv.index("--socket") + 1]
    lock = sys.argv.index("--lock-fd") + 1 if "--lock-fd" in sys.argv else 0
    listener = socket.socket(fileno=fd)
    _warm()
    server.serve(
        listener, _run_cli, stamp=stamp(), path=path, alive_fd=0,
        lock_fd=int(sys.argv[lock]) if lock else None,
    )  # fmt: skip


def _warm() -> None:
    """Import now what a served command would import on its first use."""
    import importlib

    for name in (
        "docindex.cli.main", "docindex.api.commands", "docindex.api.index",
        "docindex.cli.render", "docindex.search.engine", "docindex.ingest.indexer",
        "docindex.search.navigate", "docindex.ingest.walker", "docindex.embed.ngram",
        "docindex.cli.signals", "docindex.search.snippet", "docindex.search.cursor",
        "docindex.text.anchors", "docindex.api.trust", "docindex.cli.remedy",
        "docindex.store.halves", "docindex.cli.render_index", "docindex.cli.render_nav",
        "docindex.api.roots", "docindex.api.records", "docindex.cli.progress",
        "rich.console", "rich.table", "rich._emoji_codes", "numpy", "hashlib", "Stemmer",
    ):  # fmt: skip
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # What a first query builds lazily (the tokeniser's patterns, the stemmer):
    # built here once, every forked child has it (3-5 ms of a 10x query).
    from docindex.config import Config
    from docindex.search.engine import parse

    parse("warm up the server 服务器 서버", Config())


def _run_cli(argv: list[str], prog_name: str | None) -> int:
    """One command in a server's child: the CLI exactly as ``main`` runs it."""
    from docindex.cli.main import cli

    cli.main(args=argv[1:], prog_name=prog_name)
    return 0
