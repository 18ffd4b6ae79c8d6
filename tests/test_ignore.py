"""The ignore rules against git itself: `git ls-files --others --exclude-standard` (#25).

conftest points GIT_CONFIG_GLOBAL and XDG_CONFIG_HOME into tmp_path and sets
GIT_CONFIG_NOSYSTEM, so neither docindex nor the git we compare with reads the
developer's git config.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run, run_json, write_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docindex.ingest.walker import FileEntry, PathRules, WalkOptions, walk

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not found")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def git_init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q")
    return repo


def visible(paths: set[str]) -> set[str]:
    """Hidden paths (docindex skips them by default) left out of a comparison."""
    return {p for p in paths if not any(c.startswith(".") for c in p.split("/"))}


def git_set(repo: Path) -> set[str]:
    out = git(repo, "ls-files", "--others", "--exclude-standard", "-z")
    return visible({p for p in out.split("\0") if p})


def walk_set(root: Path, **kw: object) -> set[str]:
    entries = walk([root.resolve()], WalkOptions(**kw))  # type: ignore[arg-type]
    return {e.rel_path for e in entries if isinstance(e, FileEntry)}


# The tree of issue #25: docindex indexed 39 files where git sees 30.
ISSUE_RULES = {
    ".gitignore": "build/\n*.txt\n!keep.txt\n/todo.md\ndocs/**/draft.md\n"
    "notes/private\n**/logs\nsecret.md\n!docs/secret.md\ntrail.md\\ \n",
    "docs/.gitignore": "*.md\n!guide.md\n!api/\n",
    "docs/api/.gitignore": "!*.md\nv1/\n",
}
ISSUE_FILES = [
    "readme.md", "todo.md", "a.txt", "keep.txt", "secret.md", "trail.md",
    "trail.md ", "build/out.md", "notes/private/p.md", "notes/public.md",
    "logs/l.md", "src/logs/deep.md", "src/todo.md", "src/draft.md", "src/c.txt",
    "docs/guide.md", "docs/intro.md", "docs/secret.md", "docs/keep.txt",
    "docs/draft.md", "docs/sub/guide.md", "docs/sub/draft.md",
    "docs/api/a.md", "docs/api/b.txt", "docs/api/keep.txt", "docs/api/secret.md",
    "docs/api/draft.md", "docs/api/trail.md ", "docs/api/trail.md",
    "docs/api/v1/x.md", "docs/api/v1/y.txt", "docs/api/v1/keep.txt",
    "docs/api/v2/z.md", "docs/api/logs/q.md", "other/api/o.md", "other/v1/v.md",
    "other/secret.md", "other/keep.txt", "other/plain",
]  # fmt: skip


def issue_tree(base: Path) -> Path:
    git_init(base)
    write_tree(base, {**ISSUE_RULES, **{f: f"file {f}\n" for f in ISSUE_FILES}})
    return base


def test_issue_case_matches_git(tmp_path: Path) -> None:
    root = issue_tree(tmp_path / "repo")
    expected = git_set(root)
    assert walk_set(root) == expected
    # The three mistakes the issue reports, by name.
    for wrong in ("docs/api/v1/x.md", "docs/api/b.txt", "docs/api/trail.md "):
        assert wrong not in expected
    assert {"docs/api/a.md", "docs/api/secret.md", "keep.txt"} <= expected


def test_issue_case_indexed_set_through_the_cli(tmp_path: Path) -> None:
    root = issue_tree(tmp_path / "repo")
    db = str(tmp_path / "index.db")
    run("scan", "--root", str(root), "--db", db, "--quiet")
    listed = run_json("list", "--db", db, "--limit", "1000")["documents"]
    assert {d["rel_path"] for d in listed} == git_set(root)


def test_matched_is_public_and_agrees_with_the_walk(tmp_path: Path) -> None:
    root = issue_tree(tmp_path / "repo").resolve()
    rules = PathRules(root)
    assert rules.matched("docs/api/v1", is_dir=True)
    assert rules.matched("docs/api/v1/x.md", is_dir=False)  # under a pruned dir
    assert not rules.matched("docs/api", is_dir=True)  # !api/ re-includes the dir
    assert rules.matched("docs/api/b.txt", is_dir=False)  # ... not what is in it
    assert not rules.matched("docs/api/a.md", is_dir=False)
    assert rules.matched("build", is_dir=True)
    assert not rules.matched("build", is_dir=False)  # "build/" names directories
    kept = {f for f in ISSUE_FILES if not rules.matched(f, is_dir=False)}
    assert kept == git_set(root)


def test_exclude_stays_on_top_of_gitignore(tmp_path: Path) -> None:
    root = issue_tree(tmp_path / "repo")
    # --exclude wins over .gitignore, and its negation re-includes a file
    # inside an excluded directory (git cannot; documented in the README).
    files = walk_set(root, exclude=("*.md", "!docs/api/v1/x.md", "!build/out.md"))
    reincluded = {"docs/api/v1/x.md", "build/out.md"}
    # Nothing else in the pruned folders comes back (docs/api/v1/keep.txt
    # would, by the root's !keep.txt, were docs/api/v1 not excluded).
    assert files == {f for f in git_set(root) if not f.endswith(".md")} | reincluded
    assert walk_set(root, use_gitignore=False) >= {"docs/api/v1/x.md", "a.txt"}


def test_the_gitignore_manual_example(tmp_path: Path) -> None:
    # gitignore(5): "exclude everything except directory foo/bar".
    root = git_init(tmp_path / "repo")
    write_tree(root, {".gitignore": "/*\n!/foo\n/foo/*\n!/foo/bar\n",
                      "foo/bar/a.md": "a", "foo/bar/sub/b.md": "b", "foo/c.md": "c",
                      "foo/baz/d.md": "d", "e.md": "e", "x/foo/bar/f.md": "f"})  # fmt: skip
    assert walk_set(root) == git_set(root) == {"foo/bar/a.md", "foo/bar/sub/b.md"}


def test_gitignore_reincludes_a_default_exclude(tree: Callable[..., Path]) -> None:
    root = tree({".gitignore": "!build/\n", "build/out.md": "o", "dist/d.md": "d"})
    assert walk_set(root) == {"build/out.md"}


def test_info_exclude_and_core_excludes_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git_init(tmp_path / "repo")
    write_tree(root, {"a.md": "a", "b.md": "b", "c.md": "c", "d.md": "d"})
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("a.md\n")
    (tmp_path / "global-ignore").write_text("b.md\n")
    (tmp_path / "gitconfig").write_text(
        '[user]\n\tname = x\n[core]\n\texcludesFile = "' + str(tmp_path)
        + '/global-ignore" ; a comment\n'
    )  # fmt: skip
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "ignore").write_text("c.md\n")  # the default, overridden here
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert walk_set(root) == git_set(root) == {"c.md", "d.md"}
    # Unset, core.excludesFile defaults to $XDG_CONFIG_HOME/git/ignore.
    (tmp_path / "gitconfig").write_text("[core]\n\tautocrlf = false\n")
    assert walk_set(root) == git_set(root) == {"b.md", "d.md"}
    # A .gitignore negation outranks both.
    (root / ".gitignore").write_text("!a.md\n!c.md\n")
    assert walk_set(root) == git_set(root) == {"a.md", "b.md", "c.md", "d.md"}
    # Outside a repository only .gitignore files and our own rules apply.
    plain = write_tree(tmp_path / "plain", {"c.md": "c", "d.md": "d"})
    assert walk_set(plain) == {"c.md", "d.md"}


def test_gitignore_above_the_root_applies_below_it(tmp_path: Path) -> None:
    repo = issue_tree(tmp_path / "repo")
    sub = repo / "docs"
    expected = {p.removeprefix("docs/") for p in git_set(repo) if p.startswith("docs/")}
    assert walk_set(sub) == expected
    # A scoped scan and watch's filter see the same rules.
    scoped = walk([sub.resolve()], WalkOptions(), scope=(sub / "api").resolve())
    files = {e.rel_path for e in scoped if isinstance(e, FileEntry)}
    assert files == {p for p in expected if p.startswith("api/")}
    assert PathRules(sub.resolve()).matched("api/v1/x.md", is_dir=False)


def test_watch_filter_uses_the_same_rules(tmp_path: Path) -> None:
    from docindex.config import Config
    from docindex.ingest.watch import PathFilter

    root = issue_tree(tmp_path / "repo").resolve()
    filt = PathFilter([str(root)], Config(roots=(str(root),)))
    accepted = {f for f in ISSUE_FILES if filt.accept(str(root / f), False)}
    assert accepted == git_set(root)
    assert not filt.accept(str(root / "docs/api/v1"), True)


def test_huge_gitignore_is_read_whole(tree: Callable[..., Path]) -> None:
    lines = [f"gen/file{i}.md" for i in range(100_000)] + ["*.log", "last.md"]
    root = tree({".gitignore": "\n".join(lines) + "\n", "gen/file99999.md": "x",
                 "gen/file5.md": "x", "gen/other.md": "x", "last.md": "x",
                 "a.log": "x"})  # fmt: skip
    assert walk_set(root) == {"gen/other.md"}


# -- the property: random trees and .gitignore files, compared with git ---------

NAMES = ["a", "docs", "v1", "x y", "d.md", "k.md", "keep.txt", "b.txt", "draft.md",
         "trail.md ", "#h.md", "!n.md", "z"]  # fmt: skip
DIR_NAMES = ["a", "docs", "v1", "x y", "d.md"]
# Directory names twice and "*" thrice: patterns that name a tree's folders
# (and re-include them) are where git's per-path rules differ from pathspec's.
SEGMENTS = [*NAMES, *DIR_NAMES, "*", "*", "*", "*.md", "*.txt", "?.md", "[a-k]*",
            "[!a]*", "d*", "**", "**", "*a*", "v[0-9]", "\\#h.md", "\\!n.md",
            "trail.md\\ ", "k.m?", "[[:alpha:]]*", "[z-a]*"]  # fmt: skip


@st.composite
def patterns(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["", "# comment", "#h.md", "!", "/", "**/"]))
    segs = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3))
    text = "/".join(segs)
    if draw(st.booleans()):
        text = "/" + text
    if draw(st.booleans()) and draw(st.booleans()):
        text += "/"
    if draw(st.integers(0, 2)) == 0:
        text = "!" + text
    if draw(st.integers(0, 7)) == 0:
        text += "  "  # trailing spaces are trimmed unless escaped
    return text


@st.composite
def trees(draw: st.DrawFn) -> dict[str, str]:
    dirs = draw(st.lists(st.lists(st.sampled_from(DIR_NAMES), max_size=3),
                         min_size=1, max_size=6))  # fmt: skip
    files: dict[str, str] = {}
    for parts in dirs:
        for name in draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4)):
            files["/".join([*parts, name])] = "x"
    # A path cannot be both a file and a directory.
    files = {f: c for f, c in files.items() if not any(g.startswith(f + "/")
                                                      for g in files)}  # fmt: skip
    folders = sorted({f.rsplit("/", 1)[0] for f in files if "/" in f} | {""})
    for folder in draw(st.lists(st.sampled_from(folders), max_size=4, unique=True)):
        lines = draw(st.lists(patterns(), min_size=1, max_size=6))
        files[f"{folder}/.gitignore" if folder else ".gitignore"] = "\n".join(lines)
    return files


def _compare(files: dict[str, str], repo: Path) -> None:
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    write_tree(repo, files)
    assert walk_set(repo) == git_set(repo), json.dumps(files, indent=1)


@pytest.fixture(scope="module")
def scratch_repo() -> object:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "",
               "XDG_CONFIG_HOME": tmp}  # fmt: skip
        subprocess.run(["git", "init", "-q", tmp], check=True, env=env)
        yield Path(tmp).resolve()


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(files=trees())
def test_random_trees_match_git(files: dict[str, str], scratch_repo: Path) -> None:
    _compare(files, scratch_repo)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(files=trees())
def test_random_trees_match_git_slow(files: dict[str, str], scratch_repo: Path) -> None:
    _compare(files, scratch_repo)


def test_nested_repository_and_linked_worktree_read_their_info_exclude(
    tmp_path: Path,
) -> None:
    outer = git_init(tmp_path / "outer")
    inner = git_init(outer / "inner")
    write_tree(outer, {"a.md": "a", "inner/x.md": "x", "inner/y.md": "y"})
    (inner / ".git" / "info").mkdir(exist_ok=True)
    (inner / ".git" / "info" / "exclude").write_text("x.md\n")
    assert walk_set(outer) == {"a.md", "inner/y.md"}
    assert walk_set(inner) == git_set(inner) == {"y.md"}
    # A linked worktree's .git is a file; info/exclude lives in the common dir.
    git(inner, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
        "--allow-empty", "-m", "start")  # fmt: skip
    linked = tmp_path / "linked"
    git(inner, "worktree", "add", "-q", str(linked))
    write_tree(linked, {"x.md": "x", "z.md": "z"})
    assert walk_set(linked) == git_set(linked) == {"z.md"}


def test_odd_character_classes_never_break_the_walk(tmp_path: Path) -> None:
    # Ranges re rejects ("[z-a]"), POSIX classes, lone brackets and backslashes:
    # git drops or reads them, the walk must neither raise nor warn.
    root = git_init(tmp_path / "repo")
    names = ["a", "b", "[", "]", "z", "-", "a-", "\\", "x]", "ab", "A", "é", "[a]"]
    write_tree(root, {n: "x" for n in names})
    patterns = ["[", "[]", "[!]", "[z-a]", "[a-]", "[[:upper:]]", "\\", "a\\", "[\\]]",
                "[]]", "[!a-y]", "[[:bogus:]]", "é"]  # fmt: skip
    (root / ".gitignore").write_text("\n".join(patterns) + "\n")
    assert walk_set(root) == git_set(root)


@st.composite
def many_glob_trees(draw: st.DrawFn) -> dict[str, str]:
    """A tree whose .gitignore files hold more globs than are tried in turn."""
    files = draw(trees())
    for key in [k for k in files if k.endswith(".gitignore")] or [".gitignore"]:
        lines = draw(st.lists(patterns(), min_size=70, max_size=120))
        # literal pieces of every length around the key's 3..8 characters
        lines += [
            f"*{draw(st.sampled_from(NAMES)).strip()}{'x' * n}*" for n in range(9)
        ]
        files[key] = "\n".join(lines)
    return files


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(files=many_glob_trees())
def test_many_globs_match_git(files: dict[str, str], scratch_repo: Path) -> None:
    """Issue #33: a layer of many globs finds them by a literal piece; same verdicts."""
    _compare(files, scratch_repo)


@pytest.mark.slow
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(files=many_glob_trees())
def test_many_globs_match_git_slow(files: dict[str, str], scratch_repo: Path) -> None:
    _compare(files, scratch_repo)


def test_hundred_thousand_globs_are_decided_like_git(tmp_path: Path) -> None:
    lines = [f"*x{i}*" for i in range(30_000)] + ["!*x17777.md", "docs/**/y*"]
    root = git_init(tmp_path / "r")
    names = ["ax17777.md", "bx5y.md", "keep.md", "x29999z.md", "x1.md", "ax7777.md"]
    write_tree(root, {".gitignore": "\n".join(lines) + "\n",
                      **{n: "x" for n in names}, "docs/a/yes.md": "x",
                      "docs/no.md": "x"})  # fmt: skip
    assert walk_set(root) == git_set(root) == {"ax17777.md", "keep.md", "docs/no.md"}
