"""Issue #38: read-only indexes answer, writing refuses in one line, remedies work.

Read-only cases are real: a read-only bind mount, a full tmpfs and another
user (``os.setuid`` in a forked child) need root, and skip with the reason
otherwise. Every remedy an error prints is run as printed and must succeed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile  # imported here: a child running as nobody cannot import it
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import mounted, run, write_tree

from docindex.cli.main import cli

DOCS = {
    "guide.md": "# Install\n\nRun the installer and rotate the keys.\n\n"
    "## On Linux\n\nUse the package manager.\n",
    "notes/usage.md": "# Usage\n\nQuery the index with plain words.\n",
}
READING = [
    ["query", "installer"],
    ["query", "installer", "--json"],
    ["stats"],
    ["list"],
    ["skipped"],
    ["outline", "guide.md"],
    ["show", "guide.md#install"],
    ["section", "guide.md", "Install"],
    ["related", "guide.md"],
    ["roots"],
]
WRITING = [["scan"], ["reindex"], ["vacuum"], ["roots", "remove", "ROOT"]]
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NOBODY = 65534


def _can_mount() -> bool:
    return IS_ROOT and shutil.which("mount") is not None


needs_root = pytest.mark.skipif(
    not _can_mount(), reason="read-only mounts, tmpfs and other users need root"
)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` bind-mounted read-only over itself (root is refused writes too)."""
    with mounted(folder, "--bind", str(folder)):
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True)
        yield


def one_line_error(result: object) -> str:
    err = result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in err, err
    assert err.startswith("Error: "), err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


def remedies(message: str) -> list[list[str]]:
    """Each `docindex ...` command in ``message``, as CLI arguments."""
    return [shlex.split(cmd)[1:] for cmd in re.findall(r"`(docindex [^`]*)`", message)]


def _args(args: list[str], root: Path) -> list[str]:
    return [str(root) if a == "ROOT" else a for a in args]


def _index(tmp_path: Path) -> tuple[Path, Path]:
    root = write_tree(tmp_path / "docs", DOCS)
    db = tmp_path / "idx" / "index.db"
    run("scan", str(root), "--db", str(db), "-q")
    return root, db


def as_user(uid: int, args: list[str], cwd: Path | None = None) -> dict[str, object]:
    """Run the CLI in a forked child as ``uid``; returns exit code, stdout, stderr.

    The parent has run the same command (so every lazy import is loaded: the
    interpreter's own files may be closed to that user).
    """
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        out: dict[str, object] = {"code": -1, "stdout": "", "stderr": "child failed"}
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            if cwd is not None:
                os.chdir(cwd)
            got = CliRunner().invoke(cli, args)
            out = {"code": got.exit_code, "stdout": got.stdout, "stderr": got.stderr}
            if got.exception and not isinstance(got.exception, SystemExit):
                out["stderr"] = f"Traceback: {got.exception!r}"
        except BaseException as exc:
            out["stderr"] = f"Traceback: {exc!r}"
        finally:
            os.write(write, json.dumps(out).encode())
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read, "rb") as fh:
        return dict(json.loads(fh.read()))


@pytest.fixture
def opened() -> Iterator[list[tuple[Path, int]]]:
    """Folders ``_open_up`` opened above the test's own; closed again after it."""
    changed: list[tuple[Path, int]] = []
    yield changed
    for folder, mode in reversed(changed):
        folder.chmod(mode)


def _open_up(path: Path, changed: list[tuple[Path, int]]) -> None:
    """Let every user read ``path`` and walk to it (the test's own tmp folders)."""
    for folder in (path, *path.parents):
        mode = folder.stat().st_mode
        if not mode & 0o005:
            changed.append((folder, mode & 0o7777))
            folder.chmod(mode | 0o005)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames:
            Path(dirpath, name).chmod(0o755)
        for name in filenames:
            Path(dirpath, name).chmod(0o644)


# -- reading an index one may only read ---------------------------------------------


@needs_root
def test_every_reading_command_answers_on_a_read_only_mount(tmp_path: Path) -> None:
    root, db = _index(tmp_path)
    before = db.read_bytes()
    with read_only(db.parent):
        for args in READING:
            result = run(*args, "--db", str(db), ok=False)
            assert result.exit_code == 0, (args, result.output)
        for args in WRITING:
            result = run(*_args(args, root), "--db", str(db), ok=False)
            assert result.exit_code == 1, (args, result.output)
            assert "read-only" in one_line_error(result)
    assert db.read_bytes() == before
    assert not Path(f"{db}-wal").exists()


@needs_root
def test_another_user_reads_an_index_in_a_folder_they_may_not_write(
    tmp_path: Path, opened: list[tuple[Path, int]]
) -> None:
    """`runuser -u nobody -- docindex query ...` on root's index (issue #38)."""
    root, db = _index(tmp_path)
    _open_up(tmp_path, opened)
    for args in READING:
        full = [*args, "--db", str(db)]
        run(*full)  # warm-up as root: loads every module the command imports
        got = as_user(NOBODY, full, cwd=root)
        assert got["code"] == 0, (args, got)
        assert "Traceback" not in str(got["stderr"])
    # cwd-relative navigation as that user, and a file they found by a hit
    got = as_user(NOBODY, ["outline", "notes/usage.md", "--db", str(db)], cwd=root)
    assert got["code"] == 0 and "Usage" in str(got["stdout"]), got
    for args in WRITING:
        full = [*_args(args, root), "--db", str(db)]
        got = as_user(NOBODY, full)
        assert got["code"] == 1, (args, got)
        err = str(got["stderr"])
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert "read-only" in err


@needs_root
def test_an_index_another_user_may_not_read_is_one_line_naming_its_owner(
    tmp_path: Path, opened: list[tuple[Path, int]]
) -> None:
    """`--db FILE` of a private index elsewhere: click's "Invalid value for
    '--db': File ... is not readable" (a usage error) came before the index's
    own message."""
    _, db = _index(tmp_path)
    _open_up(tmp_path, opened)
    os.chmod(db.parent, 0o755)
    os.chmod(db, 0o600)  # private, as every index is made
    run("stats", "--db", str(db))  # warm-up as root
    got = as_user(NOBODY, ["stats", "--db", str(db)])
    err = str(got["stderr"]).strip()
    assert got["code"] == 1, got
    assert err == f"Error: permission denied: {db} (it is root's)", err


@needs_root
def test_a_scan_where_the_user_may_not_write_prints_a_remedy_that_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opened: list[tuple[Path, int]]
) -> None:
    """The traceback of `runuser -u nobody -- docindex scan DIR` (issue #38)."""
    monkeypatch.delenv("DOCINDEX_DB")
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    root = write_tree(tmp_path / "docs", DOCS)
    _open_up(tmp_path, opened)
    data.chmod(0o777)
    got = as_user(NOBODY, ["scan", str(root), "-q"], cwd=tmp_path)
    assert got["code"] == 1, got
    err = str(got["stderr"])
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "cannot create the index" in err
    (fix,) = remedies(err)
    assert fix[:2] == ["scan", str(root)] and "--db" in fix
    done = as_user(NOBODY, fix, cwd=tmp_path)
    assert done["code"] == 0, done
    db = Path(fix[fix.index("--db") + 1])
    assert db.is_file() and db.is_relative_to(data)
    assert not (root / ".docindex").exists()


@needs_root
def test_a_read_only_mount_under_the_folder_is_one_line_with_a_remedy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCINDEX_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    root = write_tree(tmp_path / "docs", DOCS)
    with read_only(root):
        result = run("scan", str(root), "-q", ok=False)
        assert result.exit_code == 1
        err = one_line_error(result)
        assert "read-only file system" in err.lower()
        (fix,) = remedies(err)
        run(*fix)
        assert run("query", "installer", *fix[-2:]).stdout.count("guide.md") >= 1


@needs_root
@pytest.mark.parametrize("fill", [60_000, 40_000])
def test_a_full_disk_is_one_line_without_a_traceback(tmp_path: Path, fill: int) -> None:
    """40 KB of 64: SQLite makes its -shm, then fails with "disk I/O error"."""
    root = write_tree(tmp_path / "docs", DOCS)
    small = tmp_path / "small"
    with mounted(small, "-t", "tmpfs", "-o", "size=64k", "tmpfs"):
        (small / "fill").write_bytes(b"\0" * fill)
        for db in (small / "index.db", small / "sub" / "index.db"):
            proc = subprocess.run(
                [sys.executable, "-m", "docindex", "scan", str(root), "--db", str(db)],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert proc.returncode == 1, proc.stderr
            assert "Traceback" not in proc.stderr
            assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
            assert "disk full" in proc.stderr


# -- remedies that work as printed ---------------------------------------------------


def _damage(db: Path) -> None:
    """Overwrite the schema on the first page: SQLite can read no table."""
    data = bytearray(db.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["beside", "elsewhere"])
def test_a_damaged_index_prints_a_remedy_that_works_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """It said `docindex reindex --full`, which from here found no index, and
    for an index kept elsewhere `--root DIR`, the word DIR (#45): now the
    printed command is run as it is, then the user's own command works."""
    monkeypatch.delenv("DOCINDEX_DB")
    root = write_tree(tmp_path / "docs", DOCS)
    db = root / ".docindex" / "index.db" if where == "beside" else tmp_path / "i.db"
    run("scan", str(root), "--db", str(db), "-q")
    _damage(db)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    original = ["query", "installer", "--db", str(db)]
    err = one_line_error(run(*original, ok=False))
    assert "DIR" not in err, err
    fixes = [f for f in remedies(err) if f[0] == "reindex"]
    assert fixes and all("--db" in f for f in fixes), err
    run(*fixes[0], "-q")  # as printed
    assert "guide.md" in run(*original).stdout


def test_a_scan_of_the_folder_above_a_root_suggests_commands_that_work(
    tmp_path: Path,
) -> None:
    """Run as printed, then the user's own scan of the folder above works (#45:
    it still found that folder outside the roots)."""
    root = write_tree(tmp_path / "top" / "docs", DOCS)
    (tmp_path / "top" / "more.md").write_text("# More\n\nthe folder above\n")
    db = tmp_path / "idx.db"
    run("scan", str(root), "--db", str(db), "-q")
    original = ["scan", str(tmp_path / "top"), "--db", str(db)]
    result = run(*original, ok=False)
    assert result.exit_code == 2
    fixes = remedies(one_line_error(result))
    assert [f[:2] for f in fixes] == [["roots", "remove"], ["roots", "add"]]
    for fix in fixes:
        run(*fix)
    run(*original)  # the user's own command, again
    assert "more.md" in run("query", "folder above", "--db", str(db)).stdout
    assert "guide.md" in run("query", "installer", "--db", str(db)).stdout


def test_damaged_roots_are_read_from_the_bytes(tmp_path: Path) -> None:
    from docindex.store.sqlitefile import salvaged_roots

    root = write_tree(tmp_path / "docs", DOCS)
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db), "-q")
    _damage(db)
    assert salvaged_roots(db) == [str(root)]
    assert salvaged_roots(tmp_path / "missing.db") == []


def test_the_remedy_helper_repeats_the_db_only_where_the_command_takes_it() -> None:
    from docindex.cli.remedy import with_db

    msg = "run `docindex reindex --full` or `docindex eval X`"
    out = with_db(msg, ["query", "x", "--db", "/a b/i.db"])
    assert out == "run `docindex reindex --full --db '/a b/i.db'` or `docindex eval X`"
    assert with_db(msg, ["query", "x"]) == msg


def test_the_writable_place_is_in_the_data_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docindex.config import writable_db_for

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    assert writable_db_for(Path("/x/notes/.docindex/index.db")) == (
        tmp_path / "d" / "docindex" / "notes.db"
    )
    assert tempfile.gettempdir()


@needs_root
def test_another_user_reads_while_the_owner_watches(
    tmp_path: Path, opened: list[tuple[Path, int]]
) -> None:
    """The owner's watcher holds -wal/-shm and serves only its own user (0600)."""
    root, db = _index(tmp_path)
    _open_up(tmp_path, opened)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    env["DOCINDEX_PRIVATE_INDEX"] = "false"  # shared on purpose: left readable (#33)
    with subprocess.Popen(
        [sys.executable, "-m", "docindex", "watch", "--db", str(db), "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    ) as watcher:  # fmt: skip
        try:
            assert watcher.stdout is not None
            assert json.loads(watcher.stdout.readline())["kind"] == "catch-up"
            for args in (["query", "installer", "--json"], ["stats"], ["list"]):
                full = [*args, "--db", str(db)]
                run(*full)
                got = as_user(NOBODY, full, cwd=root)
                assert got["code"] == 0, (args, got)
            got = as_user(NOBODY, ["scan", "--db", str(db)])
            assert got["code"] == 1 and "read-only" in str(got["stderr"]), got
        finally:
            watcher.terminate()
            watcher.wait(20)
