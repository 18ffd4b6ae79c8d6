"""The watcher's server (issue #24): same answers, warm; private; nothing left behind.

Real ``docindex watch`` processes serve real ``docindex`` processes through
the socket beside the index. ``DOCINDEX_WATCHER=require`` makes a command
fail unless a server ran it, ``off`` makes it run in its own process: the two
outputs must be the same. Raw clients check that malformed, oversized or
foreign requests are dropped and the server goes on serving.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import write_tree
from hypothesis import given
from hypothesis import strategies as st

from docindex.serve.rendezvous import encode_request
from docindex.serve.server import decode_request

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="the server is Linux-only (SO_PEERCRED)",
)

DOCS = {
    "guide/install.md": "# Install\n\nRun the installer, then rotate the keys.\n\n"
    "## Upgrade\n\nUpgrade in place; the keys stay.\n",
    "guide/keys.md": "# Keys\n\nRotate the keys every month. Old keys expire.\n",
    "notes.txt": "A plain note about backups and rotating logs.\n",
}


NEUTRAL = Path("/")


def env(mode: str, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    out.update(DOCINDEX_WATCHER=mode, **extra)
    return out


def docindex(*args: str, mode: str, cwd: Path = NEUTRAL, input: str | None = None,
             timeout: float = 60, **extra: str,
             ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``python -m docindex ARGS`` in ``cwd``.

    Never in the checkout: ``-m`` would import its ``docindex/`` instead of the
    installed one the watcher's server runs (CI installs a copy), and a server
    serves no other installation.
    """
    return subprocess.run(
        [sys.executable, "-m", "docindex", *args], env=env(mode, **extra), cwd=cwd,
        input=input, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def children(pid: int) -> list[int]:
    """Live processes whose parent is ``pid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(cond: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


class Watcher:
    """A ``docindex watch`` process over ``root`` and its server."""

    def __init__(self, root: Path, db: Path, *args: str, **extra: str) -> None:
        self.db, self.sock = db, Path(f"{db}.sock")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "docindex", "watch", "--db", str(db), *args],
            env=env("auto", **extra), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            cwd=root, start_new_session=True,
        )  # fmt: skip

    def serving(self) -> int:
        """Wait until the server answers; its pid."""
        wait_for(lambda: self.sock.exists() and bool(children(self.proc.pid)))
        probe = docindex("stats", "--db", str(self.db), "--json", mode="require")
        assert probe.returncode == 0, probe.stderr
        (pid,) = children(self.proc.pid)
        return pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stderr is not None
        self.proc.stderr.close()


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, Path, int]]:
    """One scanned tree with a watcher serving it: (root, db, server pid)."""
    root = write_tree(tmp_path_factory.mktemp("served") / "docs", DOCS)
    db = root / ".docindex" / "index.db"
    first = docindex("scan", str(root), "-q", mode="off")
    assert first.returncode == 0, first.stderr
    watcher = Watcher(root, db)
    try:
        yield root, db, watcher.serving()
    finally:
        watcher.stop()


def timeless(text: str) -> str:
    """Output without the query's own timing (it differs run to run)."""
    text = re.sub(r'"took_ms": [0-9.e+-]+', '"took_ms": 0', text)
    return re.sub(r" in [0-9.]+ ms", " in 0 ms", text)


@pytest.mark.parametrize(
    "args",
    [
        ("query", "rotate the keys", "--json"),
        ("query", "rotate the keys"),
        ("query", "rotate", "--vimgrep"),
        ("query", "keys", "--files", "--top", "1", "--json"),
        ("outline", "guide/install.md", "--json"),
        ("show", "guide/keys.md"),
        ("list", "--json"),
        ("stats", "--json"),
        ("skipped", "--json"),
        ("scan", "-q", "--json"),
    ],
)
def test_served_commands_answer_as_a_fresh_process(served, args) -> None:
    root, _db, _pid = served
    warm = docindex(*args, mode="require", cwd=root)
    cold = docindex(*args, mode="off", cwd=root)
    assert warm.returncode == cold.returncode == 0, (warm.stderr, cold.stderr)
    if args[0] == "stats":  # sizes move with the WAL; compare the counts
        w, c = json.loads(warm.stdout), json.loads(cold.stdout)
        assert w["documents"] == c["documents"] and w["segments"] == c["segments"]
    else:
        assert timeless(warm.stdout) == timeless(cold.stdout)
    assert timeless(warm.stderr) == timeless(cold.stderr)


def test_errors_exit_status_and_stdin_are_the_callers(served) -> None:
    root, _db, _pid = served
    for args in (
        ("show", "no/such.md"),
        ("query", "--top", "0", "x"),
        ("query", "x", "--nope"),
    ):
        warm = docindex(*args, mode="require", cwd=root)
        cold = docindex(*args, mode="off", cwd=root)
        assert warm.returncode == cold.returncode != 0
        assert warm.stderr == cold.stderr and warm.stdout == cold.stdout
    warm = docindex("query", "--json", mode="require", cwd=root, input="backups\n")
    cold = docindex("query", "--json", mode="off", cwd=root, input="backups\n")
    assert warm.returncode == 0 and timeless(warm.stdout) == timeless(cold.stdout)
    assert json.loads(warm.stdout)["hits"][0]["path"].endswith("notes.txt")


def test_the_callers_folder_and_environment_decide(served, tmp_path: Path) -> None:
    root, db, _pid = served
    # From inside the tree, no --db: the index is found upward from the caller's folder.
    inside = docindex("query", "keys", "--json", mode="require", cwd=root / "guide")
    assert inside.returncode == 0, inside.stderr
    # The caller's DOCINDEX_DB (here: an index that does not exist) wins.
    other = docindex("stats", "--db", str(db), mode="require", cwd=root)
    assert other.returncode == 0
    missing = docindex(
        "query", "keys", "--db", str(db), mode="require", cwd=root,
        DOCINDEX_CONFIG=str(tmp_path / "missing.toml"),
    )  # fmt: skip
    cold = docindex(
        "query", "keys", "--db", str(db), mode="off", cwd=root,
        DOCINDEX_CONFIG=str(tmp_path / "missing.toml"),
    )  # fmt: skip
    assert (missing.returncode, missing.stderr) == (cold.returncode, cold.stderr)


def test_socket_is_private_and_off_means_off(served) -> None:
    root, db, _pid = served
    st = os.stat(f"{db}.sock")
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    # Commands that gain nothing run in the caller's process even with require.
    assert docindex("config", "--json", mode="require", cwd=root).returncode == 0


def raw_request(sock_path: str, payload: bytes, fds: list[int] | None = None) -> bytes:
    """Send ``payload`` (and ``fds``) the way a client would; what the server answers."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(sock_path)
        if fds is None:
            s.sendall(payload)
        else:
            socket.send_fds(s, [payload], fds)
        out = b""
        try:
            s.shutdown(socket.SHUT_WR)
            while chunk := s.recv(4096):
                out += chunk
        except (ConnectionResetError, BrokenPipeError):  # dropped with data unread
            pass
        return out


def test_malformed_oversized_and_foreign_requests_are_dropped(served) -> None:
    root, db, pid = served
    path = f"{db}.sock"
    null = os.open(os.devnull, os.O_RDWR)
    try:
        assert raw_request(path, b"not a request\n", [null] * 3) == b""
        assert raw_request(path, b"5\n1\0a\0b", [null] * 3) == b""  # too few fields
        assert raw_request(path, b"x" * (2 << 20), [null] * 3) == b""
        assert raw_request(path, b"%d\n" % (2 << 20) + b"x" * 99, [null] * 3) == b""
        good = encode_request(
            "another installation", ["docindex", "stats"], None, str(root),
            {}, 0o22, [("utf-8", "strict")] * 3,
        )  # fmt: skip
        # Descriptors before the server took the request (they come with the
        # confirmation), then a request from another installation.
        assert raw_request(path, good, [null] * 3) == b""
        assert raw_request(path, good) == b"no stamp\n"
        # A v1 (JSON) client is turned away too, and would run the command itself.
        v1 = {"v": 1, "stamp": "x", "argv": ["docindex", "stats"], "prog": None,
              "cwd": str(root), "env": {}, "umask": 0o22,
              "stdio": [["utf-8", "strict"]] * 3}  # fmt: skip
        assert raw_request(path, json.dumps(v1).encode() + b"\n", [null] * 3) == b""
    finally:
        os.close(null)
    assert alive(pid)
    wait_for(lambda: not children(pid))  # every request's child has ended
    again = docindex("query", "keys", "--json", mode="require", cwd=root)
    assert again.returncode == 0, again.stderr


def test_no_server_falls_back_and_require_says_so(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "docs", DOCS)
    assert docindex("scan", str(root), "-q", mode="off").returncode == 0
    db = root / ".docindex" / "index.db"
    # A socket file nobody listens on (a watcher that died with kill -9).
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(f"{db}.sock")
    stale.close()
    auto = docindex("query", "keys", "--json", mode="auto", cwd=root)
    assert auto.returncode == 0 and json.loads(auto.stdout)["hits"]
    required = docindex("query", "keys", mode="require", cwd=root)
    assert required.returncode == 1
    assert "no watcher answers" in required.stderr


@pytest.mark.parametrize("deep", [False, True], ids=["short", "past-108-bytes"])
def test_watcher_stop_and_kill_leave_nothing_behind(tmp_path: Path, deep: bool) -> None:
    base = tmp_path / ("a-rather-long-folder-name-" * 4 if deep else "")
    root = write_tree(base / "docs", DOCS)
    db = root / ".docindex" / "index.db"
    assert (len(f"{db}.sock") > 108) == deep  # the socket's address limit
    assert docindex("scan", str(root), "-q", mode="off").returncode == 0
    watcher = Watcher(root, db)
    try:
        pid = watcher.serving()
    finally:
        watcher.stop()  # Ctrl-C
    assert watcher.proc.returncode == 130
    wait_for(lambda: not alive(pid), timeout=5)
    assert not Path(f"{db}.sock").exists()

    watcher = Watcher(root, db)
    try:
        pid = watcher.serving()
        watcher.proc.kill()  # kill -9: the server sees its pipe close
        watcher.proc.wait()
    finally:
        watcher.stop()
    wait_for(lambda: not alive(pid), timeout=5)
    assert not Path(f"{db}.sock").exists()
    assert docindex("query", "keys", mode="auto", cwd=root).returncode == 0


def test_a_killed_client_stops_its_command_and_ctrl_c_is_relayed(served) -> None:
    root, _db, pid = served
    for how in (signal.SIGKILL, signal.SIGINT):
        # `--queries -` with an open, silent stdin: the command waits for input.
        client = subprocess.Popen(
            [sys.executable, "-m", "docindex", "query", "--queries", "-"],
            env=env("require"), cwd=root, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_for(lambda: bool(children(pid)))
        time.sleep(0.3)
        client.send_signal(how)
        client.wait(timeout=20)  # stdin stays open: only the signal can end it
        _out, err = client.communicate(timeout=20)
        if how == signal.SIGINT:
            assert client.returncode == 130
            assert "interrupted" in err and "Traceback" not in err
        wait_for(lambda: not children(pid), timeout=STOP_WAIT)


STOP_WAIT = 5.0


def test_no_serve_makes_no_socket(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "docs", DOCS)
    db = root / ".docindex" / "index.db"
    assert docindex("scan", str(root), "-q", mode="off").returncode == 0
    watcher = Watcher(root, db, "--no-serve")
    try:
        time.sleep(1.5)
        assert not Path(f"{db}.sock").exists() and not children(watcher.proc.pid)
        assert docindex("query", "keys", mode="require", cwd=root).returncode == 1
    finally:
        watcher.stop()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_is_refused(served, tmp_path: Path) -> None:
    root, db, pid = served
    path = f"{db}.sock"
    os.chmod(path, 0o666)  # even if the file's mode let them in, the uid check does not
    opened: list[str] = []
    try:
        for folder in (Path(path).parent, *Path(path).parents):
            if not os.stat(folder).st_mode & 0o001:
                os.chmod(folder, os.stat(folder).st_mode | 0o011)
                opened.append(str(folder))
        from docindex.serve.rendezvous import stamp

        payload = encode_request(
            stamp(), ["docindex", "stats"], None, "/", {}, 0o22,
            [("utf-8", "strict")] * 3,
        )  # fmt: skip
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # another user's client
            answer = b"error"
            try:
                os.setgid(65534)
                os.setuid(65534)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.settimeout(10)
                    s.connect(path)
                    socket.send_fds(s, [payload], [0, 1, 2])
                    s.shutdown(socket.SHUT_WR)
                    answer = s.recv(99) or b"refused"
            except (ConnectionResetError, BrokenPipeError):
                answer = b"refused"
            except OSError as exc:
                answer = repr(exc).encode()
            finally:
                os.write(write, answer)
                os._exit(0)
        os.close(write)
        os.waitpid(child, 0)
        with os.fdopen(read, "rb") as fh:
            assert fh.read() == b"refused"  # connected, then closed unanswered
    finally:
        os.chmod(path, 0o600)
        for folder in opened:
            os.chmod(folder, os.stat(folder).st_mode & ~0o011)
    assert docindex("query", "keys", mode="require", cwd=root).returncode == 0


def test_a_new_index_is_served_once_the_catch_up_made_it(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "docs", DOCS)
    db = tmp_path / "fresh" / "index.db"
    watcher = subprocess.Popen(
        [sys.executable, "-m", "docindex", "watch", "--root", str(root), "--db", str(db)],
        env=env("auto"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        cwd=NEUTRAL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(lambda: Path(f"{db}.sock").exists())
        done = docindex("query", "rotate", "--db", str(db), "--json", mode="require")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["hits"]
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=20)
    assert not Path(f"{db}.sock").exists()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_users_socket_gets_nothing(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    root = write_tree(shared / "docs", DOCS)
    db = shared / "index.db"
    assert (
        docindex("scan", str(root), "--db", str(db), "-q", mode="off").returncode == 0
    )
    opened = [p for p in (shared, *shared.parents) if not os.stat(p).st_mode & 0o002]
    modes = {p: os.stat(p).st_mode for p in opened}
    for p in opened:
        os.chmod(p, modes[p] | 0o333 if p == shared else modes[p] | 0o011)
    ready, report = os.pipe(), os.pipe()
    child = os.fork()
    if child == 0:  # another user's server where ours would be
        got = b"?"
        try:
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.bind(f"{db}.sock")
                s.listen(4)
                os.write(ready[1], b"r")
                s.settimeout(15)
                conn, _ = s.accept()
                conn.settimeout(2)
                got = b"%d" % len(conn.recv(1 << 20))
        except OSError as exc:
            got = repr(exc).encode()
        finally:
            os.write(report[1], got)
            os._exit(0)
    try:
        assert os.read(ready[0], 1) == b"r"
        auto = docindex("query", "keys", "--db", str(db), "--json", mode="auto")
        assert auto.returncode == 0 and json.loads(auto.stdout)["hits"]
        assert os.read(report[0], 99) == b"0"  # connected, and was sent nothing
    finally:
        os.waitpid(child, 0)
        for p in opened:
            os.chmod(p, modes[p])


def test_a_closed_stream_runs_here_without_a_traceback(served) -> None:
    root, _db, _pid = served
    for redirect in (">&-", "<&-", "2>/dev/null >&-"):
        for mode in ("auto", "off"):
            done = subprocess.run(
                ["sh", "-c", f'exec "$@" {redirect}', "sh", sys.executable, "-m",
                 "docindex", "query", "keys"],
                env=env(mode), cwd=root, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert done.returncode == 0, (redirect, mode, done.stderr)
            assert "Traceback" not in done.stderr


_text = st.text(st.characters(blacklist_characters="\0"))  # lone surrogates included


@given(
    argv=st.lists(_text, min_size=1, max_size=6),
    env=st.dictionaries(
        st.text(st.characters(blacklist_characters="\0="), min_size=1), _text,
        max_size=6,
    ),
    cwd=_text.filter(bool), prog=st.none() | _text.filter(bool),
    umask=st.integers(0, 0o777),
)  # fmt: skip
def test_a_request_reads_back_exactly(argv, env, cwd, prog, umask) -> None:
    """Whatever a client's argv, environment and folder hold (an undecodable
    byte as a surrogate, '=' in a value, an empty argument), the server reads
    back the very same strings."""
    stdio = [("utf-8", "strict"), ("utf-8", "surrogateescape"), ("ascii", "replace")]
    data = encode_request("stamp 1", argv, prog, cwd, env, umask, stdio)
    head, _, body = data.partition(b"\n")
    assert int(head) == len(body)
    request = decode_request(body)
    assert (request.argv, request.env, request.cwd, request.prog) == (
        argv,
        env,
        cwd,
        prog,
    )
    assert (request.umask, request.stdio, request.stamp) == (umask, stdio, "stamp 1")


def test_an_edit_to_any_module_changes_the_installation_stamp() -> None:
    """A warm server runs the code it started with: an edit to any module (not
    only the two the stamp once read, split into many by #49) must retire it."""
    import docindex.search.sections as edited
    from docindex.serve.rendezvous import stamp

    path = Path(edited.__file__)
    before, st = stamp(), path.stat()
    try:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**12))
        assert stamp() != before
    finally:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert stamp() == before


def test_a_served_command_imports_nothing_of_its_own(tmp_path: Path) -> None:
    """The warm server imported what served commands use: a command's child
    spends nothing on imports (a module the server lacks is imported anew by
    every request, a few ms each on a busy machine; #46)."""
    root = write_tree(tmp_path / "docs", DOCS)
    db = root / ".docindex" / "index.db"
    assert docindex("scan", str(root), "-q", mode="off").returncode == 0
    watcher = Watcher(root, db, PYTHONPROFILEIMPORTTIME="1")
    try:
        watcher.serving()
        imported: dict[str, list[str]] = {}
        for args in (
            ("query", "rotate the keys"), ("query", "keys", "--json", "--files"),
            ("query", "rotate", "--mode", "lexical"), ("stats",), ("list",),
            ("roots",), ("skipped",), ("outline", "guide/install.md"),
            ("show", "guide/keys.md"),
        ):  # fmt: skip
            done = docindex(*args, "--db", str(db), mode="require")
            assert done.returncode == 0, done.stderr
            names = re.findall(r"^import time:.*\| +(\S+)$", done.stderr, re.M)
            if names:
                imported[" ".join(args)] = names
        assert imported == {}
    finally:
        watcher.stop()
