"""Issue #33 item 2: the index is as private as its sources.

``.docindex/`` is 0700 and the index files 0600 whatever the umask; an index
left looser by an older docindex is tightened on the next scan, which says
so in one warning. Another local user can then read none of it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

SIDE = ("", "-wal", "-shm", "-journal")


def _scan(root: Path, *extra: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "docindex", "scan", str(root), "--json", *extra],
        capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k != "DOCINDEX_DB"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    result["stderr"] = done.stderr
    return result


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "secret.md").write_text("# Diary\n\nTOPSECRET plans for friday\n")
    os.chmod(root / "secret.md", 0o600)
    (root / "open.md").write_text("# Open\n\nnothing to hide\n")
    return root


def _index_files(folder: Path) -> list[Path]:
    return [p for s in SIDE if (p := folder / f"index.db{s}").exists()]


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX modes only")
def test_new_index_is_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    root = _notes(tmp_path)
    old = os.umask(0o022)
    try:
        result = _scan(root)
    finally:
        os.umask(old)
    folder = root / ".docindex"
    assert _mode(folder) == 0o700
    files = _index_files(folder)
    assert files and {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}
    assert not any("private" in w for w in result["warnings"])  # type: ignore[union-attr]


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX modes only")
def test_looser_index_is_tightened_on_the_next_write_with_one_line(
    tmp_path: Path,
) -> None:
    root = _notes(tmp_path)
    _scan(root)
    folder = root / ".docindex"
    os.chmod(folder, 0o755)
    for path in _index_files(folder):
        os.chmod(path, 0o644)
    (root / "new.md").write_text("# New\n\nanother note\n")
    result = _scan(root)
    said = [*result["warnings"], *str(result["stderr"]).splitlines()]  # type: ignore[misc]
    warnings = [w for w in said if "private" in w]
    assert len(warnings) == 1 and "readable by other users" in warnings[0], result
    assert _mode(folder) == 0o700
    assert all(_mode(p) == 0o600 for p in _index_files(folder))
    again = _scan(root)  # already private: nothing more to say
    assert "private" not in str(again["stderr"])
    assert not any("private" in w for w in again["warnings"])  # type: ignore[union-attr]


@pytest.fixture
def other_user() -> Iterator[str]:
    """A second real local user, made for the test (root only)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root to create a second local user (useradd)")
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        pytest.skip("useradd/runuser missing: cannot test as a second user")
    name = f"dx{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "-M", "-s", "/bin/sh", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False)


@pytest.fixture
def walkable() -> Iterator[Path]:
    """A folder every user may walk into (pytest's own base folder is 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="docindex-private-"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_another_user_cannot_read_the_index(walkable: Path, other_user: str) -> None:
    assert subprocess.run(["runuser", "-u", other_user, "--", "ls", str(walkable)],
                          capture_output=True).returncode == 0  # fmt: skip
    root = _notes(walkable)
    os.chmod(root, 0o755)
    _scan(root)
    db = root / ".docindex" / "index.db"
    as_other = ["runuser", "-u", other_user, "--"]
    attempts = [[*as_other, "cat", str(db)]]
    if shutil.which("sqlite3"):
        attempts.append([*as_other, "sqlite3", str(db), "select * from meta"])
    usable = subprocess.run([*as_other, "test", "-x", sys.executable]).returncode == 0
    if usable:  # docindex itself, when the other user can run this interpreter
        attempts.append([*as_other, sys.executable, "-m", "docindex", "query",
                         "TOPSECRET", "--db", str(db)])  # fmt: skip
    for cmd in attempts:
        done = subprocess.run(cmd, capture_output=True, timeout=60, cwd="/")
        out, err = (done.stdout.decode(errors="replace"),
                    done.stderr.decode(errors="replace"))  # fmt: skip
        assert done.returncode != 0, cmd
        assert "TOPSECRET" not in out + err, cmd
        assert out == "", cmd
    if usable:
        assert "permission denied" in err.lower(), err


def test_query_on_an_index_the_user_may_not_read_is_one_clear_line(
    tmp_path: Path, other_user: str
) -> None:
    """docindex's own message, as the owner of nothing: a root without DAC bypass."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv missing")
    root = _notes(tmp_path)
    _scan(root)
    folder = root / ".docindex"
    shutil.chown(folder, other_user)
    for path in _index_files(folder):
        shutil.chown(path, other_user)
    done = subprocess.run(
        [setpriv, "--bounding-set", "-dac_override,-dac_read_search", sys.executable,
         "-m", "docindex", "query", "TOPSECRET", "--db", str(folder / "index.db")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"Error: permission denied: {folder / 'index.db'}"), line
    # how the owner shares it (#45): the setting, the group modes, the README
    assert f"(it is {other_user}'s)" in line
    assert "private_index = false" in line and "chmod -R g+rX" in line, line
    assert "Another user on this machine" in line
