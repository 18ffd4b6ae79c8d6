"""The watcher's server against the attacks of issue #33 (item 3).

It serves exactly what the client forwards, as the caller sees the world;
a request has one deadline for all its bytes; a stuck server is skipped; a
second watcher takes over when the first exits. Real ``docindex watch``
processes, real sockets, a real private mount namespace (``unshare``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write_tree
from test_server import (
    DOCS,
    NEUTRAL,
    Watcher,
    children,
    docindex,
    env,
    raw_request,
    timeless,
    wait_for,
)

from docindex.serve.rendezvous import FORWARDED, encode_request, servable

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="the server is Linux-only (SO_PEERCRED)",
)


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, Path, int]]:
    """A watcher serving a tree whose index lives outside it: (root, db, server pid)."""
    base = tmp_path_factory.mktemp("attacks")
    root = write_tree(base / "docs", DOCS)
    db = base / "index" / "index.db"
    first = docindex("scan", str(root), "--db", str(db), "-q", mode="off")
    assert first.returncode == 0, first.stderr
    watcher = Watcher(root, db)
    try:
        yield root, db, watcher.serving()
    finally:
        watcher.stop()


@functools.cache
def installed_stamp() -> str:
    """The stamp of the installation the watcher's server runs: not this
    checkout's when CI installs a copy (the server answers "no stamp" then)."""
    code = "from docindex.serve.rendezvous import stamp; print(stamp())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env("off"), cwd=NEUTRAL,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.strip()


def request(argv: list[str], cwd: str) -> bytes:
    return encode_request(
        installed_stamp(), argv, None, cwd, {}, 0o22, [("utf-8", "strict")] * 3
    )


def test_the_client_and_the_server_share_one_allow_list() -> None:
    for name in FORWARDED:
        assert servable(["docindex", name, "x"])
    for argv in (
        ["docindex"],
        ["docindex", "config"],
        ["docindex", "roots", "list"],
        ["docindex", "vacuum"],
        ["docindex", "--version"],
        ["docindex", "watch"],
        ["docindex", "scan", "--root", "/elsewhere"],
        ["docindex", "scan", "-q", "--root=/elsewhere"],
    ):
        assert not servable(argv), argv
    assert servable(["docindex", "scan", "-q", "--", "--root"])  # a PATH after --


def test_a_command_the_client_never_forwards_is_refused(served, tmp_path) -> None:
    """Hand-crafted requests get 'not served' (the client would run them
    itself), and nothing of them runs: `scan --root` adds no root."""
    root, db, _pid = served
    here = os.getcwd()
    null = os.open(os.devnull, os.O_RDWR)
    outside = write_tree(tmp_path / "outside", {"secret.md": "# Secret\n\nzebra\n"})
    try:
        for argv in (
            ["docindex", "config", "--json"],
            ["docindex", "roots", "list", "--db", str(db)],
            ["docindex", "vacuum", "--db", str(db)],
            ["docindex", "--version"],
            ["docindex", "scan", "--db", str(db), "--root", str(outside)],
        ):
            assert raw_request(f"{db}.sock", request(argv, here)) == (
                b"not served\n"
            ), argv
        # A forwarded command from the caller's own folder is taken.
        ok = request(["docindex", "stats", "--db", str(db)], here)
        assert raw_request(f"{db}.sock", ok) == b"ok\n"
    finally:
        os.close(null)
    listed = docindex("roots", "list", "--db", str(db), "--json", mode="off")
    assert str(outside) not in listed.stdout
    # The client runs `scan --root` itself, even with `require`.
    plain = docindex("stats", "--db", str(db), "--json", mode="require")
    assert plain.returncode == 0, plain.stderr


def test_a_request_from_another_folder_than_the_callers_is_refused(served) -> None:
    """The request's cwd must be the folder the caller is in (/proc/PID/cwd)."""
    root, db, _pid = served
    assert Path.cwd().resolve() != root.resolve()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        lie = request(["docindex", "stats", "--db", str(db)], str(root))
        assert raw_request(f"{db}.sock", lie) == b"no cwd\n"
    finally:
        os.close(null)


def _unshare() -> list[str]:
    """How to run a command in a private mount namespace here, or skip."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    how = ["unshare", "-m"] if os.getuid() == 0 else ["unshare", "-r", "-m"]
    probe = subprocess.run([*how, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.strip()}")
    return how


def test_a_caller_in_another_mount_namespace_runs_the_command_itself(served) -> None:
    """`unshare -m` and a tmpfs over the root: the caller cannot see the files.
    The server must not read them for it; the command runs in the caller's
    world, with the same output as with no server at all."""
    root, db, _pid = served
    how = _unshare()

    def inside(mode: str, *args: str) -> subprocess.CompletedProcess[str]:
        script = 'mount -t tmpfs none "$1" && shift && exec "$@"'
        return subprocess.run(
            [*how, "sh", "-c", script, "sh", str(root), sys.executable, "-m",
             "docindex", *args, "--db", str(db)],
            env=env(mode), cwd=NEUTRAL, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    # `require`: the server refuses, nobody else may run it.
    refused = inside("require", "show", "guide/keys.md")
    assert refused.returncode == 1, refused.stdout
    assert "no watcher answers" in refused.stderr
    assert "Rotate the keys" not in refused.stdout
    for args in (("show", "guide/keys.md"), ("query", "rotate", "--json")):
        auto, off = inside("auto", *args), inside("off", *args)
        assert (auto.returncode, timeless(auto.stdout), timeless(auto.stderr)) == (
            off.returncode,
            timeless(off.stdout),
            timeless(off.stderr),
        )
    # Outside the namespace the server still serves.
    warm = docindex("show", "guide/keys.md", "--db", str(db), mode="require")
    assert warm.returncode == 0 and "Rotate the keys" in warm.stdout


@pytest.mark.slow  # a few seconds of real waiting
def test_trickling_clients_hold_no_slot(served) -> None:
    """Sixteen connections sending one byte every 1.5 s: a normal client is
    served meanwhile, and each trickler is dropped once its one deadline for
    the whole request has passed (it was 2 s per read)."""
    root, db, pid = served
    payload = request(["docindex", "stats", "--db", str(db)], os.getcwd())
    null = os.open(os.devnull, os.O_RDWR)
    conns = []
    first = payload.index(b"\n") + 2  # the length line and one byte
    try:
        for _ in range(16):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(f"{db}.sock")
            s.send(payload[:first])
            conns.append(s)
        time.sleep(0.3)
        normal = docindex("query", "keys", "--db", str(db), "--json", mode="require")
        assert normal.returncode == 0, normal.stderr
        assert json.loads(normal.stdout)["hits"]
        dropped: set[int] = set()
        sent = first
        for _ in range(8):  # up to 12 s of trickling; the deadline is 2 s
            time.sleep(1.5)
            for i, s in enumerate(conns):
                if i in dropped:
                    continue
                try:
                    s.send(payload[sent : sent + 1])
                except OSError:
                    dropped.add(i)
            sent += 1
            if len(dropped) == len(conns):
                break
        assert len(dropped) == len(conns), f"{len(dropped)} of 16 dropped"
    finally:
        for s in conns:
            s.close()
        os.close(null)
    assert not children(pid) or wait_for(lambda: not children(pid)) is None


def _stop(pids: list[int], how: signal.Signals) -> None:
    for pid in pids:
        os.kill(pid, how)


@pytest.mark.slow  # a few seconds of real waiting
def test_a_stopped_server_is_skipped(tmp_path: Path) -> None:
    """A SIGSTOPped watcher and server: a command still answers, by itself,
    well inside a ceiling a 5 s wait would pass (the figure is in
    bench/serve_attacks.py)."""
    root = write_tree(tmp_path / "docs", DOCS)
    db = root / ".docindex" / "index.db"
    assert docindex("scan", str(root), "-q", mode="off").returncode == 0
    watcher = Watcher(root, db)
    try:
        server = watcher.serving()
        _stop([watcher.proc.pid, server], signal.SIGSTOP)
        try:
            auto = docindex("query", "keys", "--json", mode="auto", cwd=root,
                            timeout=4.5)  # fmt: skip
            off = docindex("query", "keys", "--json", mode="off", cwd=root)
        finally:
            _stop([server, watcher.proc.pid], signal.SIGCONT)
        assert auto.returncode == 0, auto.stderr
        assert timeless(auto.stdout) == timeless(off.stdout)
    finally:
        watcher.stop()


@pytest.mark.slow  # a few seconds of real waiting
def test_the_next_watcher_serves_once_the_last_server_is_gone(tmp_path: Path) -> None:
    """A watcher killed with -9 leaves its server behind for a while (here:
    stopped, then let go). The next watcher (#38 lets one watch at a time)
    must serve once that server is gone, not give up because it still
    answered when the new watcher started."""
    root = write_tree(tmp_path / "docs", DOCS)
    db = root / ".docindex" / "index.db"
    assert docindex("scan", str(root), "-q", mode="off").returncode == 0
    first = Watcher(root, db)
    second: Watcher | None = None
    try:
        old = first.serving()
        os.kill(old, signal.SIGSTOP)
        first.proc.kill()
        first.proc.wait()
        second = Watcher(root, db)
        assert second.proc.stderr is not None
        assert b"watching" in second.proc.stderr.readline()
        time.sleep(1.5)  # it has tried to serve, and found the old server there
        os.kill(old, signal.SIGCONT)  # the old server sees its watcher gone, exits
        wait_for(lambda: not Path(f"/proc/{old}").exists(), timeout=20)
        taken = second.serving()
        assert taken != old
        done = docindex("query", "keys", "--json", mode="require", cwd=root)
        assert done.returncode == 0 and json.loads(done.stdout)["hits"]
    finally:
        with contextlib.suppress(OSError):
            os.kill(old, signal.SIGCONT)
        first.stop()
        if second is not None:
            second.stop()
    assert not Path(f"{db}.sock").exists()
    assert not Path(f"{db}.sock.lock").exists()
