"""Issue #38: one path rule for --path, list, MCP and navigation.

Absolute, cwd-relative and root-relative paths, folders, files and globs find
the same documents; a path outside every root is an error, never "no hits".
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import run, run_json, write_tree

from docindex.search.navigate import path_scope

DOCS = {
    "en/react/learn/effects.md": "# Effects\n\nuseEffect runs after render.\n",
    "en/react/learn/state.md": "# State\n\nuseEffect and state.\n",
    "en/react/blog/post.md": "# Post\n\nuseEffect in a blog post.\n",
    "en/vue/guide.md": "# Guide\n\nuseEffect is not a Vue thing.\n",
}
LEARN = {"en/react/learn/effects.md", "en/react/learn/state.md"}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "docs", DOCS)
    run("scan", str(root), "-q")
    return root


def hits(*args: str) -> set[str]:
    data = run_json("query", "useEffect", "--per-doc", "0", *args)
    return {h["rel_path"] for h in data["hits"]}


def listed(*args: str) -> set[str]:
    return {d["rel_path"] for d in run_json("list", *args)["documents"]}


def test_query_path_as_people_type_it(
    docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert hits("--path", "en/react/learn") == LEARN  # root-relative
    assert hits("--path", str(docs / "en/react/learn")) == LEARN  # absolute
    assert hits("--path", str(docs / "en/react/learn") + "/") == LEARN
    assert hits("--path", str(docs / "en/react/learn/*.md")) == LEARN  # abs glob
    assert hits("--path", str(docs)) == set(DOCS)  # the root itself
    monkeypatch.chdir(docs / "en/react")
    assert hits("--path", "learn") == LEARN  # cwd-relative
    assert hits("--path", "learn/") == LEARN
    assert hits("--path", "learn/*.md") == LEARN
    assert hits("--path", ".") == {*LEARN, "en/react/blog/post.md"}
    assert hits("--path", "learn/effects.md") == {"en/react/learn/effects.md"}
    monkeypatch.chdir(docs.parent)
    assert hits("--path", "docs/en/react/learn") == LEARN  # from above the root


def test_list_path_follows_the_same_rule(
    docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert listed("--path", "en/react/learn") == LEARN
    assert listed("--path", str(docs / "en/react/learn")) == LEARN
    assert listed("--path", "en/react/learn/*.md") == LEARN
    monkeypatch.chdir(docs / "en/react/learn")
    assert listed("--path", ".") == LEARN


def test_a_path_outside_every_root_is_an_error(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for args in (
        ["query", "useEffect", "--path", str(elsewhere)],
        ["query", "useEffect", "--path", "../../x"],
        ["list", "--path", str(elsewhere)],
    ):
        result = run(*args, ok=False)
        assert result.exit_code == 2, result.output
        assert "outside the index's roots" in result.stderr
    monkeypatch.chdir(elsewhere)
    result = run("query", "useEffect", "--path", ".", ok=False)
    assert result.exit_code == 2 and "outside" in result.stderr


def test_query_root_limits_a_search_to_roots(tmp_path: Path) -> None:
    one = write_tree(tmp_path / "one", {"a.md": "# A\n\nshared word alpha\n"})
    two = write_tree(tmp_path / "two", {"b.md": "# B\n\nshared word beta\n"})
    db = tmp_path / "i.db"
    run("scan", str(one), "--db", str(db), "-q")
    run("scan", "--root", str(two), "--db", str(db), "-q")

    def roots_hit(*args: str) -> set[str]:
        data = run_json("query", "shared", "--db", str(db), *args)
        return {h["root"] for h in data["hits"]}

    assert roots_hit() == {str(one.resolve()), str(two.resolve())}
    assert roots_hit("--root", str(two)) == {str(two.resolve())}
    assert roots_hit("--root", str(one), "--root", str(two)) == {
        str(one.resolve()),
        str(two.resolve()),
    }
    bad = run("query", "shared", "--db", str(db), "--root", str(tmp_path), ok=False)
    assert bad.exit_code == 2 and "not a root" in bad.stderr


def test_mcp_takes_back_the_absolute_path_a_hit_gave(docs: Path) -> None:
    from docindex.serve.mcp import Tools

    tools = Tools(None, [])
    first = tools.call("doc_query", {"query": "useEffect"}, threading.Event())
    folder = str(Path(first.hits[0].path).parent)
    again = tools.call("doc_query", {"query": "useEffect", "path": folder},
                       threading.Event())  # fmt: skip
    assert again.hits
    assert {str(Path(h.path).parent) for h in again.hits} == {folder}
    listed_docs = tools.call("list_documents", {"path": folder}, threading.Event())
    assert {str(Path(d.path).parent) for d in listed_docs.documents} == {folder}


def test_the_rule_itself() -> None:
    roots = ["/r/one", "/r/two"]
    assert path_scope(roots, "/r/two/a/*.md") == ("/r/two", "a/*.md")
    assert path_scope(roots, "a/b") == (None, "a/b")
    assert path_scope(roots, "./a/b") == (None, "a/b")  # no cwd (MCP): root-relative
    assert path_scope(roots, "*.md", Path("/r/one/sub")) == ("/r/one", "sub/*.md")
    with pytest.raises(Exception, match="outside"):
        path_scope(roots, "/r/three")
