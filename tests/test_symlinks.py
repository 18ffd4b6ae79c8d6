"""Issue #17: one symlink rule for the walk, watch events and scoped scans.

Nothing a symlink points at outside the roots may be indexed, whether the link
exists before a scan, appears while ``watch`` runs, is named by ``scan PATH`` or
MCP ``doc_scan``, or replaces a file between the walk and the read.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run, run_json
from test_watch import indexed, wait_for, watching  # noqa: F401  (fixture)

from docindex.config import Config
from docindex.errors import DocindexError
from docindex.ingest.indexer import Progress, scan
from docindex.ingest.walker import escape_reason
from docindex.store import Store

SECRETS = ("topsecret", "oddsecret")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    (out / "odir").mkdir(parents=True)
    (out / "secret.md").write_text("# Secret\n\ntopsecret words\n")
    (out / "odir" / "x.md").write_text("# Odir\n\noddsecret words\n")
    return out


def _links(root: Path, out: Path) -> None:
    """The red team's three links (relative file, relative dir, absolute), and more."""
    os.symlink("../out/secret.md", root / "late.md")
    os.symlink("../out/odir", root / "latedir")
    os.symlink(out / "secret.md", root / "abs.md")
    (root / "sub").mkdir(exist_ok=True)
    os.symlink("../../out/secret.md", root / "sub" / "deep.md")


def _texts(db: Path) -> str:
    with Store.open(db) as store:
        return " ".join(
            store.body(row.id) for rid in store.roots()
            for row in store.fingerprints(rid).values()
        )  # fmt: skip


def test_escape_reason(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "docs"
    (root / "real").mkdir(parents=True)
    (root / "in.md").write_text("in\n")
    _links(root, outside)
    os.symlink("in.md", root / "alias.md")
    os.symlink("real", root / "dirlink")
    assert escape_reason(root / "in.md", root, follow_symlinks=False) is None
    assert escape_reason(root / "gone.md", root, follow_symlinks=False) is None
    assert (
        escape_reason(root / "real" / "new" / "x.md", root, follow_symlinks=False)
        is None
    )
    assert "outside" in str(escape_reason(outside, root, follow_symlinks=False))
    assert "outside" in str(
        escape_reason(root / ".." / "out", root, follow_symlinks=True)
    )
    for name in ("late.md", "latedir", "abs.md", "alias.md", "sub/deep.md"):
        assert "symlink" in str(escape_reason(root / name, root, follow_symlinks=False))
    inside = escape_reason(root / "latedir" / "x.md", root, follow_symlinks=False)
    assert inside == f"inside symlink {root / 'latedir'}"
    assert "inside symlink" in str(
        escape_reason(root / "dirlink" / "x.md", root, follow_symlinks=False)
    )
    # Followed, a link may be indexed only if it resolves inside the root.
    for name in ("late.md", "latedir", "latedir/x.md", "abs.md", "sub/deep.md"):
        why = escape_reason(root / name, root, follow_symlinks=True)
        assert why == "symlink pointing outside the roots", name
    for name in ("alias.md", "dirlink", "dirlink/x.md"):
        assert escape_reason(root / name, root, follow_symlinks=True) is None


def test_watch_never_indexes_symlinks_created_while_it_runs(
    watching,  # noqa: F811  (the fixture imported from test_watch)
    outside: Path,
) -> None:
    w = watching({"in.md": "# In\n\ninside words\n"})
    _links(w.root, outside)
    os.symlink("/etc/passwd", w.root / "pw.txt")
    os.symlink(outside / "odir" / "x.md", w.root / "sub" / "abs2.md")
    (w.root / "fresh.md").write_text("# Fresh\n\nfresh words\n")  # the sentinel
    wait_for(lambda: "fresh.md" in indexed(w.db))
    # A file replaced by a symlink to outside is removed, not re-read.
    (w.root / "in.md").unlink()
    os.symlink("../out/secret.md", w.root / "in.md")
    wait_for(lambda: "in.md" not in indexed(w.db))
    assert set(indexed(w.db)) == {"fresh.md"}
    text = _texts(w.db)
    assert not any(s in text for s in SECRETS) and "root:" not in text
    skipped = {Path(e["path"]).name for r in w.reports for e in r.errors}
    assert {"late.md", "latedir", "abs.md", "pw.txt"} <= skipped


def test_scan_path_and_full_scan_skip_symlinks(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "in.md").write_text("# In\n\ninside words\n")
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db))
    _links(root, outside)
    os.symlink("in.md", root / "alias.md")
    full = run_json("scan", str(root), "--db", str(db))
    assert full["skipped"]["symlink"] == 5
    for rel in ("late.md", "latedir/x.md", "abs.md", "sub/deep.md"):
        result = run("scan", str(root / rel), "--db", str(db), ok=False)
        assert result.exit_code == 2 and "outside" in result.stderr, rel
    # A link inside the roots, named directly, is still a symlink: not followed.
    alias = run_json("scan", str(root / "alias.md"), "--db", str(db))
    assert alias["indexed"] == 0  # (its skip was recorded by the full scan, #23)
    sub = run_json("scan", str(root / "sub"), "--db", str(db))
    assert sub["indexed"] == 0
    assert set(indexed(db)) == {"in.md"}
    assert not any(s in _texts(db) for s in SECRETS)


def test_follow_symlinks_stays_inside_the_roots(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "docs"
    (root / "real").mkdir(parents=True)
    (root / "real" / "r.md").write_text("# R\n\nreal words\n")
    _links(root, outside)
    os.symlink("real", root / "dirlink")
    db = tmp_path / "i.db"
    result = run_json("scan", str(root), "--db", str(db), "--follow-symlinks")
    # A link inside the root is followed (its folder is walked once: cycles).
    assert set(indexed(db)) == {"dirlink/r.md"}
    reasons = {Path(e["path"]).name: e["message"] for e in result["errors"]}
    assert reasons.pop("real") == "directory already walked (cycle)"
    assert reasons == dict.fromkeys(
        ("late.md", "latedir", "abs.md", "deep.md"),
        "symlink pointing outside the roots",
    )
    assert not any(s in _texts(db) for s in SECRETS)


def test_mcp_doc_scan_applies_the_rule(tmp_path: Path, outside: Path) -> None:
    mcp_server = pytest.importorskip("docindex.serve.mcp")
    root = tmp_path / "docs"
    root.mkdir()
    (root / "in.md").write_text("# In\n\ninside words\n")
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db))
    _links(root, outside)
    tools = mcp_server.Tools(str(db), [str(root)])
    for path in ("late.md", "latedir", "latedir/x.md", "abs.md", "sub/deep.md"):
        with pytest.raises(DocindexError, match="outside"):
            tools.call("doc_scan", {"path": path})
    result = tools.call("doc_scan", {"path": "sub"})
    assert result.indexed == 0 and result.skipped in ({"symlink": 1}, {})
    tools.call("doc_scan", {})
    assert set(indexed(db)) == {"in.md"}
    with pytest.raises(DocindexError, match="never-existed.md does not exist"):
        tools.call("doc_scan", {"path": "never-existed.md"})


def test_file_swapped_for_a_symlink_after_the_walk_is_not_read(
    tmp_path: Path, outside: Path
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    for name in ("a.md", "swap.md"):
        (root / name).write_text(f"# {name}\n\nplain words\n")

    def hook(event: Progress) -> None:
        if event.phase == "walk" and event.path == "swap.md":
            (root / "swap.md").unlink()
            os.symlink(outside / "secret.md", root / "swap.md")

    cfg = Config(roots=(str(root.resolve()),), workers=1)
    with Store.open(tmp_path / "i.db", create=True) as store:
        result = scan(store, cfg, on_progress=hook)
    assert [(Path(e["path"]).name, e["reason"]) for e in result.errors] == [
        ("swap.md", "symlink")
    ]
    assert set(indexed(tmp_path / "i.db")) == {"a.md"}
    assert "topsecret" not in _texts(tmp_path / "i.db")


def test_folder_swapped_for_a_symlink_after_the_walk_is_not_read(
    tmp_path: Path, outside: Path
) -> None:
    root = tmp_path / "docs"
    (root / "odir").mkdir(parents=True)
    (root / "a.md").write_text("# a\n\nplain words\n")
    (root / "odir" / "x.md").write_text("# x\n\nplain words\n")

    def hook(event: Progress) -> None:
        if event.phase == "walk" and event.path == "odir/x.md":
            (root / "odir" / "x.md").unlink()
            (root / "odir").rmdir()
            os.symlink(outside / "odir", root / "odir")  # holds x.md: oddsecret

    cfg = Config(roots=(str(root.resolve()),), workers=1)
    with Store.open(tmp_path / "i.db", create=True) as store:
        result = scan(store, cfg, on_progress=hook)
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("the opened-file check needs /proc (Linux)")
    assert [(Path(e["path"]).name, e["reason"]) for e in result.errors] == [
        ("x.md", "symlink")
    ]
    assert set(indexed(tmp_path / "i.db")) == {"a.md"}
    assert "oddsecret" not in _texts(tmp_path / "i.db")
