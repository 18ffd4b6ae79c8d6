"""Roots are pinned (issue #33): a root turned into a symlink, or replaced by another
owner's folder, is not scanned or watched; opening an index never re-resolves it."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import docindex

ATTACKER = "dxattacker"


def _private(tmp_path: Path) -> Path:
    private = tmp_path / "victim" / "private"
    private.mkdir(parents=True)
    (private / "diary.md").write_text("# Diary\n\nTOPSECRET plans for the weekend.\n")
    private.chmod(0o700)
    return private


def _team(tmp_path: Path) -> Path:
    docs = tmp_path / "shared" / "team" / "docs"
    docs.mkdir(parents=True)
    (docs / "guide.md").write_text("# Guide\n\nHow the team ships releases.\n")
    return docs


def test_a_root_swapped_for_a_symlink_is_not_scanned(tmp_path: Path) -> None:
    private, docs = _private(tmp_path), _team(tmp_path)
    index = docindex.open(tmp_path / "idx" / "index.db", roots=[docs])
    assert index.scan().indexed == 1
    docs.rename(docs.with_name("docs.old"))
    docs.symlink_to(private)

    again = docindex.open(tmp_path / "idx" / "index.db")
    result = again.scan()
    assert result.indexed == 0
    assert any("symbolic link" in w and "roots move" in w for w in result.warnings)
    assert again.query("TOPSECRET").hits == []
    assert [r.path for r in again.list_roots().roots] == [str(docs)]
    # its documents are kept, as for a root that went missing
    assert again.query("releases").hits


def test_a_folder_above_the_root_swapped_for_a_symlink(tmp_path: Path) -> None:
    private = _private(tmp_path)
    (private / "docs").mkdir()
    (private / "docs" / "plan.md").write_text("# Plan\n\nTOPSECRET launch.\n")
    docs = _team(tmp_path)
    index = docindex.open(tmp_path / "idx" / "index.db", roots=[docs])
    index.scan()
    team = docs.parent
    team.rename(team.with_name("team.old"))
    team.symlink_to(private)  # team/docs now leads into the private folder
    result = docindex.open(tmp_path / "idx" / "index.db").scan()
    assert result.indexed == 0
    assert docindex.open(tmp_path / "idx" / "index.db").query("TOPSECRET").hits == []


def test_roots_move_accepts_the_new_place(tmp_path: Path) -> None:
    docs = _team(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(docs, elsewhere)
    (elsewhere / "more.md").write_text("# More\n\nExtra zeppelin notes.\n")
    db = tmp_path / "idx" / "index.db"
    docindex.open(db, roots=[docs]).scan()
    docs.rename(docs.with_name("docs.old"))
    docs.symlink_to(elsewhere)
    assert docindex.open(db).scan().indexed == 0
    docindex.open(db).move_root(docs, docs)  # the user says: follow it
    assert docindex.open(db).scan().indexed == 1
    assert docindex.open(db).query("zeppelin").hits


def test_watch_does_not_follow_a_root_swapped_for_a_symlink(tmp_path: Path) -> None:
    """Swapped while no watcher ran, then watched: the catch-up and the changes
    after it never read the private folder."""
    private, docs = _private(tmp_path), _team(tmp_path)
    db = tmp_path / "idx" / "index.db"
    docindex.open(db, roots=[docs]).scan()
    docs.rename(docs.with_name("docs.old"))
    docs.symlink_to(private)
    with docindex.open(db).watch(debounce_ms=50) as changes:
        batches = iter(changes)
        first = next(batches)  # the catch-up
        assert first.added == 0, first
        (private / "later.md").write_text("# Later\n\nTOPSECRET again.\n")
        time.sleep(3)  # past a health check (2 s) and the debounce
    assert docindex.open(db).query("TOPSECRET").hits == []
    assert [r.path for r in docindex.open(db).list_roots().roots] == [str(docs)]


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A folder other users can reach (pytest's own is 0700)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="docindex-pin-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _attacker() -> str:
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second local user (CI runs as root)")
    try:
        pwd.getpwnam(ATTACKER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", ATTACKER], check=True)
    return ATTACKER


def test_another_user_swaps_a_shared_root_for_a_link_to_private_files(
    open_tmp: Path,
) -> None:
    """The issue's attack as written: the other user owns the shared folder."""
    user = _attacker()
    private, docs = _private(open_tmp), _team(open_tmp)
    team = docs.parent
    shutil.chown(team, user)
    team.parent.chmod(0o755)
    db = open_tmp / "victim" / "idx" / "index.db"
    docindex.open(db, roots=[docs]).scan()
    subprocess.run(
        ["runuser", "-u", user, "--", "sh", "-c",
         f"mv '{docs}' '{docs}.old' && ln -s '{private}' '{docs}'"],
        check=True,
    )  # fmt: skip
    result = docindex.open(db).scan()
    assert result.indexed == 0 and result.warnings
    assert docindex.open(db).query("TOPSECRET").hits == []


def test_another_user_replaces_a_shared_root_with_their_own_folder(
    open_tmp: Path,
) -> None:
    user = _attacker()
    docs = _team(open_tmp)
    shutil.chown(docs.parent, user)
    db = open_tmp / "idx" / "index.db"
    docindex.open(db, roots=[docs]).scan()
    subprocess.run(
        ["runuser", "-u", user, "--", "sh", "-c",
         f"mv '{docs}' '{docs}.old' && mkdir '{docs}' && "
         f"echo '# Planted' > '{docs}/planted.md'"],
        check=True,
    )  # fmt: skip
    result = docindex.open(db).scan()
    assert result.indexed == 0
    assert any("another owner" in w for w in result.warnings), result.warnings
    # recreated by its own owner, the same root: rescanned as usual
    uid = pwd.getpwnam(user).pw_uid
    assert os.stat(docs).st_uid == uid
