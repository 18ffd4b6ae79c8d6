"""The walk: excludes with gitignore semantics, hidden files, symlinks, limits."""

import os
from pathlib import Path

import pytest

from docindex.ingest.walker import FileEntry, SkipEntry, WalkOptions, walk


def listing(root: Path, **kw):
    entries = list(walk([root.resolve()], WalkOptions(**kw)))
    files = [e.rel_path for e in entries if isinstance(e, FileEntry)]
    skips = {(e.path.name, e.reason) for e in entries if isinstance(e, SkipEntry)}
    return files, skips


def test_sorted_and_default_excludes(tree) -> None:
    root = tree({
        "b.md": "b", "a.md": "a", "sub/c.txt": "c",
        "node_modules/x/readme.md": "x", "build/out.md": "o", "x.pyc": "p",
        ".git/config": "g",
    })  # fmt: skip
    files, skips = listing(root)
    assert files == ["a.md", "b.md", "sub/c.txt"]
    assert ("node_modules", "ignored") in skips
    assert ("build", "ignored") in skips
    assert ("x.pyc", "ignored") in skips
    assert (".git", "hidden") in skips


def test_user_negation_reincludes(tree) -> None:
    root = tree({"build/keep.md": "k", "build/drop.md": "d", "notes.log": "l"})
    files, _ = listing(root, exclude=("!build/keep.md",))
    assert files == ["build/keep.md", "notes.log"]
    files, _ = listing(root, exclude=("*.log",))
    assert files == []


def test_nested_gitignore_and_switch(tree) -> None:
    root = tree({
        ".gitignore": "*.tmp\n", "a.tmp": "1", "sub/.gitignore": "secret.md\n!b.tmp\n",
        "sub/secret.md": "s", "sub/b.tmp": "b", "sub/ok.md": "o",
    })  # fmt: skip
    files, _ = listing(root)
    assert files == ["sub/b.tmp", "sub/ok.md"]
    files, _ = listing(root, use_gitignore=False)
    assert files == ["a.tmp", "sub/b.tmp", "sub/ok.md", "sub/secret.md"]


def test_hidden_files_opt_in(tree) -> None:
    root = tree({".notes.md": "n", "v.md": "v"})
    assert listing(root)[0] == ["v.md"]
    assert listing(root, hidden=True)[0] == [".notes.md", "v.md"]


def test_symlinks_skipped_by_default_and_cycles_broken(tree) -> None:
    root = tree({"real/a.md": "a"})
    os.symlink(root / "real", root / "link")
    os.symlink(root, root / "real" / "loop")
    files, skips = listing(root)
    assert files == ["real/a.md"]
    assert ("link", "symlink") in skips
    files, skips = listing(root, follow_symlinks=True)
    assert len([f for f in files if f.endswith("a.md")]) == 1
    assert any(reason == "symlink" for _, reason in skips)


def test_too_large_depth_and_walk_limit(tree) -> None:
    root = tree(
        {"big.txt": "x" * 2000, "a/b/c/deep.md": "d", "s1.md": "1", "s2.md": "2"}
    )
    files, skips = listing(root, max_file_bytes=1000)
    assert ("big.txt", "too-large") in skips
    files, skips = listing(root, max_depth=1)
    assert ("b", "walk-limit") in skips
    files, skips = listing(root, max_walked_files=2)
    assert len(files) == 2
    assert any(reason == "walk-limit" for _, reason in skips)


def test_fifo_is_not_opened(tree) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    root = tree({"a.md": "a"})
    os.mkfifo(root / "pipe.md")
    files, skips = listing(root)
    assert files == ["a.md"] and ("pipe.md", "unsupported") in skips


def test_missing_root(tmp_path: Path) -> None:
    entries = list(walk([tmp_path / "nope"], WalkOptions()))
    assert isinstance(entries[0], SkipEntry) and entries[0].reason == "missing-root"


def test_scope_walks_only_inside(tree) -> None:
    root = tree({"a/x.md": "x", "b/y.md": "y"}).resolve()
    entries = list(walk([root], WalkOptions(), scope=root / "a"))
    assert [e.rel_path for e in entries if isinstance(e, FileEntry)] == ["a/x.md"]


def test_a_walk_left_early_closes_its_folders(tree) -> None:
    # The walk holds the folders on its path open (stat relative to them, #24);
    # an interrupted scan stops iterating and must not leak them.
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    root = tree({"a/b/c/d.md": "d", "a/b/e.md": "e", "f.md": "f"}).resolve()
    before = len(os.listdir("/proc/self/fd"))
    entries = walk([root], WalkOptions())
    first = next(entries)
    assert isinstance(first, FileEntry) and first.rel_path == "a/b/c/d.md"
    entries.close()
    assert len(os.listdir("/proc/self/fd")) == before
    assert [e.rel_path for e in walk([root], WalkOptions())] == [
        "a/b/c/d.md", "a/b/e.md", "f.md"
    ]  # fmt: skip
    assert len(os.listdir("/proc/self/fd")) == before
