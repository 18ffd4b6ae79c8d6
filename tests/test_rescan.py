"""Rescans on a real index: a no-op changes nothing, an edit equals a fresh build (#24).

The walk and the scan's per-file loop were rebuilt for speed (one loop over an
explicit stack, a name-only filter per folder, a covering index for the
fingerprints); these tests hold them to the index a scan built before.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from conftest import run

SLICES = (
    "en/apisix/docs/en/latest/tutorials",
    "zh/apisix/docs/zh/latest/tutorials",
)


def _corpus(shared: Path, dest: Path) -> Path:
    """Two real folders of the shared corpus, plus rules the walk must honour."""
    docs = shared / "corpus" / "docs"
    for rel in SLICES:
        shutil.copytree(docs / rel, dest / rel)
    (dest / ".gitignore").write_text("drafts/\n*.bak\n/en/apisix/docs/en/latest/x.md\n")
    (dest / "drafts").mkdir()
    (dest / "drafts" / "wip.md").write_text("# Draft\n\nnot indexed\n")
    (dest / "notes.bak").write_text("not indexed either\n")
    return dest


def _scan(root: Path, db: Path) -> dict[str, Any]:
    out = run("scan", str(root), "--db", str(db), "--json").stdout
    data: dict[str, Any] = json.loads(out)
    return data


def _rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row as stored, ids and times included (a no-op must not touch one)."""
    conn = sqlite3.connect(db)
    try:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("documents", "segments", "facets", "skipped", "roots", "meta")
        } | {"vocab": conn.execute("SELECT * FROM fts_vocab ORDER BY 1").fetchall()}
    finally:
        conn.close()


def _content(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """What the index holds, keyed by path instead of row ids and scan times."""
    conn = sqlite3.connect(db)
    try:
        return {
            "docs": conn.execute(
                "SELECT rel_path, kind, title, size, mtime_ns, hash, body, meta, "
                "n_segments, sections FROM documents ORDER BY rel_path"
            ).fetchall(),
            "segments": conn.execute(
                "SELECT d.rel_path, s.section, s.part, s.frag, s.start_line, s.lines, "
                "s.char_start, s.chars, s.vec FROM segments s "
                "JOIN documents d ON d.id = s.doc_id ORDER BY d.rel_path, s.char_start, "
                "s.part, s.frag"
            ).fetchall(),
            "vocab": conn.execute("SELECT * FROM fts_vocab ORDER BY 1").fetchall(),
        }
    finally:
        conn.close()


def _hits(db: Path, text: str) -> list[tuple[str, str]]:
    out = run("query", text, "--db", str(db), "--json", "-n", "20").stdout
    return [(h["path"], h["chunk_id"]) for h in json.loads(out)["hits"]]


def test_noop_rescan_changes_no_row(shared: Path, tmp_path: Path) -> None:
    root = _corpus(shared, tmp_path / "docs")
    db = tmp_path / "index.db"
    first = _scan(root, db)
    assert first["indexed"] == 19 and first["errors"] == []
    before = _rows(db)
    again = _scan(root, db)
    assert (again["scanned"], again["unchanged"], again["indexed"]) == (19, 19, 0)
    assert _rows(db) == before


def test_one_edit_rescan_equals_a_fresh_index(shared: Path, tmp_path: Path) -> None:
    root = _corpus(shared, tmp_path / "docs")
    db = tmp_path / "index.db"
    _scan(root, db)
    before = _rows(db)
    target = root / SLICES[0] / "health-check.md"
    edited = target.read_text("utf-8") + "\n\n## Rescans\n\nA zebra-striped rescan.\n"
    tmp = target.with_name("health-check.md.tmp")
    tmp.write_text(edited, "utf-8")
    os.replace(tmp, target)
    result = _scan(root, db)
    assert (result["scanned"], result["unchanged"], result["updated"]) == (19, 18, 1)
    fresh = tmp_path / "fresh.db"
    _scan(root, fresh)
    assert _content(db) == _content(fresh)
    # Same hits in the same order; scores may differ in the 4th decimal, as
    # the semantic idf counts segments by the largest id (semantic.semantic_ranking).
    for text in ("zebra-striped rescan", "health check upstream", "健康检查"):
        assert _hits(db, text) == _hits(fresh, text)
    # The other documents' rows are the ones the first scan wrote.
    after = _rows(db)
    rel = target.relative_to(root).as_posix()
    kept = [r for r in before["documents"] if r[2] != rel]
    assert [r for r in after["documents"] if r[2] != rel] == kept
