"""End-to-end smoke: scan a tree and find things in it."""

from pathlib import Path

from conftest import run_json


def test_scan_then_query(tree, tmp_path: Path) -> None:
    root = tree(
        {"a.md": "# Alpha\n\nThe quick brown fox.\n", "b.txt": "lazy dogs sleep\n"}
    )
    counts = run_json("scan", str(root))
    assert counts["indexed"] == 2
    out = run_json("query", "fox")
    assert out["hits"][0]["rel_path"] == "a.md"
    assert out["hits"][0]["line"] == 3
