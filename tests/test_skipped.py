"""`docindex skipped`: why a file is missing, kept until the file changes (issue #23)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import _formats
from click.testing import CliRunner

from docindex.cli.main import cli

OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)


def run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result


def build(root: Path) -> None:
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nfine words\n")
    (root / "report.doc").write_bytes(OLE)
    (root / "blank.md").write_text("   \n")
    (root / "clip.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    (root / "big.pdf").write_bytes(_formats.pdf(30))


def test_skipped_lists_each_file_with_reason_and_message(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    build(root)
    db = str(tmp_path / "i.db")
    first = run("scan", str(root), "--db", db, "--json")
    assert first["skipped"] == {"empty": 1, "unsupported": 2}
    out = run("skipped", "--db", db, "--json")
    assert out["counts"] == {"empty": 1, "unsupported": 2}
    files = {f["rel_path"]: f for f in out["files"]}
    assert set(files) == {"blank.md", "clip.mp4", "report.doc"}
    doc = files["report.doc"]
    assert doc["reason"] == "unsupported" and ".docx" in doc["message"]
    assert doc["path"] == str(root / "report.doc") and doc["root"] == str(root)
    assert files["clip.mp4"]["message"] == ".mp4 files are not indexed"
    only = run("skipped", "--db", db, "--json", "--reason", "empty")
    assert [f["rel_path"] for f in only["files"]] == ["blank.md"]
    human = run("skipped", "--db", db).output
    assert "unsupported (2)" in human and "report.doc" in human and "97-2003" in human


def test_a_skip_is_reported_once_and_kept_until_the_file_changes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "docs"
    build(root)
    db = str(tmp_path / "i.db")
    run("scan", str(root), "--db", db, "--json")
    again = run("scan", str(root), "--db", db, "--json")
    assert again["skipped"] == {} and again["errors"] == []
    assert again["unchanged"] == 4  # good.md, big.pdf, and the two read-and-skipped
    assert len(run("skipped", "--db", db, "--json")["files"]) == 3
    # the file changes: it is read again, and indexed now
    (root / "report.doc").write_text("now plain text about quokkas\n")
    os.utime(root / "report.doc", ns=(1, 1))
    third = run("scan", str(root), "--db", db, "--json")
    assert third["indexed"] == 1
    names = {f["rel_path"] for f in run("skipped", "--db", db, "--json")["files"]}
    assert names == {"blank.md", "clip.mp4"}
    # a deleted file leaves the list
    (root / "blank.md").unlink()
    (root / "clip.mp4").unlink()
    run("scan", str(root), "--db", db, "--json")
    assert run("skipped", "--db", db, "--json")["files"] == []
    assert "no file was left out" in run("skipped", "--db", db).output


def test_truncated_files_are_listed_while_indexed(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "long.pdf").write_bytes(_formats.pdf(12))
    db = str(tmp_path / "i.db")
    env = {"DOCINDEX_MAX_PDF_PAGES": "5"}
    result = CliRunner(env=env).invoke(cli, ["scan", str(root), "--db", db, "--json"])
    assert json.loads(result.stdout)["skipped"] == {"truncated": 1}
    (record,) = run("skipped", "--db", db, "--json")["files"]
    assert record["reason"] == "truncated" and "pages:5/12" in record["message"]
    hits = run("query", "pagemark5", "--db", db, "--json", "--mode", "lexical")
    assert hits["hits"][0]["page"] == 5


def test_stats_shows_skip_counts_and_the_command(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    build(root)
    db = str(tmp_path / "i.db")
    run("scan", str(root), "--db", db, "--json")
    assert run("stats", "--db", db, "--json")["skipped"] == {
        "empty": 1, "unsupported": 2,
    }  # fmt: skip
    human = run("stats", "--db", db).output
    assert "docindex skipped" in human


def test_scan_summary_points_at_the_command(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    build(root)
    result = CliRunner().invoke(
        cli, ["scan", str(root), "--db", str(tmp_path / "i.db")]
    )
    assert "unsupported:" in result.stderr and "docindex skipped" in result.stderr


def test_a_file_refused_by_a_full_index_is_tried_again(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("alpha\n")
    (root / "b.md").write_text("bravo\n")
    db = str(tmp_path / "i.db")
    full = CliRunner(env={"DOCINDEX_MAX_DOCS": "1"})
    out = json.loads(full.invoke(cli, ["scan", str(root), "--db", db, "--json"]).stdout)
    assert out["skipped"] == {"max-docs": 1}
    assert run("skipped", "--db", db, "--json")["counts"] == {"max-docs": 1}
    roomy = CliRunner(env={"DOCINDEX_MAX_DOCS": "5"})  # the index remembers 1
    out = json.loads(
        roomy.invoke(cli, ["scan", str(root), "--db", db, "--json"]).stdout
    )
    assert out["indexed"] == 1
    assert run("skipped", "--db", db, "--json")["files"] == []


def test_removing_a_root_forgets_its_skipped_files(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    build(root)
    db = str(tmp_path / "i.db")
    run("scan", str(root), "--db", db, "--json")
    assert run("skipped", "--db", db, "--json")["files"]
    run("roots", "remove", str(root), "--db", db)
    assert run("skipped", "--db", db, "--json")["files"] == []


def test_what_the_scan_counts_as_hidden_or_ignored_is_listed(tmp_path: Path) -> None:
    """The scan said "skipped: hidden 1", `skipped --reason hidden` listed none (#45)."""
    root = tmp_path / "docs"
    (root / ".drafts").mkdir(parents=True)
    (root / ".drafts" / "plan.md").write_text("# Plan\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "x.md").write_text("# X\n")
    (root / "good.md").write_text("# Good\n")
    db = str(tmp_path / "i.db")
    scan = run("scan", str(root), "--db", db, "--json")
    assert scan["skipped"] == {"hidden": 1, "ignored": 1}
    for reason, rel in (("hidden", ".drafts"), ("ignored", "node_modules")):
        out = run("skipped", "--db", db, "--reason", reason, "--json")
        assert [f["rel_path"] for f in out["files"]] == [rel]
    human = run("skipped", "--db", db, "--reason", "hidden").output
    assert ".drafts" in human and "no file skipped" not in human
    # a reason the index does not keep says so instead of "nothing"
    limit = run("skipped", "--db", db, "--reason", "walk-limit").output
    assert "not kept in the index" in limit
    bad = CliRunner().invoke(cli, ["skipped", "--db", db, "--reason", "hiden"])
    assert (
        bad.exit_code == 2 and "the reasons: " in bad.output and "hidden" in bad.output
    )
