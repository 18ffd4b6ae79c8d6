"""The CLI contract: commands, JSON keys, exit codes, index discovery, scope."""

import json
import os
import time
from pathlib import Path

import pytest
from conftest import run, run_json

HIT_KEYS = {"path", "rel_path", "root", "line", "start_line", "end_line", "title",
            "snippet", "score", "from", "chunk_id", "heading_path"}  # fmt: skip


@pytest.fixture
def docs(tree):
    return tree({
        "guide.md": "# Guide\n\nIntro text.\n\n## Install\n\nRun pip install docindex.\n"
                    "Then configure the index location in config.toml.\n",
        "zh.md": "# 中文\n\n全文检索需要分词。数据库索引很重要。\n",
        "ja.md": "# 日本語\n\n検索エンジンの仕組みを説明します。東京\n",
        "ko.md": "# 한국어\n\n검색 색인을 만드는 방법입니다.\n",
        "notes.txt": "meeting notes\nthe fox jumped\n",
    })  # fmt: skip


def test_scan_json_counts(docs) -> None:
    out = run_json("scan", str(docs))
    assert set(out) >= {"scanned", "indexed", "updated", "removed", "unchanged",
                        "skipped", "errors"}  # fmt: skip
    assert out["indexed"] == 5 and out["errors"] == []
    again = run_json("scan", str(docs))
    assert again["unchanged"] == 5 and again["indexed"] == 0


def test_query_json_schema_and_line(docs) -> None:
    run_json("scan", str(docs))
    out = run_json("query", "configure index location")
    assert set(out) >= {"query", "mode", "used", "degraded", "took_ms", "total", "hits"}
    hit = out["hits"][0]
    assert HIT_KEYS <= set(hit)
    assert hit["rel_path"] == "guide.md" and hit["line"] == 8
    assert hit["start_line"] <= hit["line"] <= hit["end_line"]
    assert os.path.isabs(hit["path"]) and 0 < hit["score"] <= 1
    assert hit["heading_path"] == ["Guide", "Install"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [("全文", "zh.md"), ("索", "zh.md"), ("検索", "ja.md"), ("東", "ja.md"),
     ("색인", "ko.md"), ("검", "ko.md"), ("数据库索引", "zh.md")],
)  # fmt: skip
def test_cjk_one_and_two_character_queries(docs, query: str, expected: str) -> None:
    run_json("scan", str(docs))
    hits = run_json("query", query)["hits"]
    assert hits and hits[0]["rel_path"] == expected


def test_natural_question_does_not_require_every_word(docs) -> None:
    run_json("scan", str(docs))
    hits = run_json("query", "how would I install the docindex package on my laptop")
    assert hits["hits"][0]["rel_path"] == "guide.md"


@pytest.mark.parametrize(
    "hostile", ['"', "*", "NEAR(", "AND", ")(", "-x", "a OR", "title:x", "^", "'", "\\"]
)
def test_fts_hostile_queries_are_text(docs, hostile: str) -> None:
    run_json("scan", str(docs))
    out = json.loads(run("query", "--json", "--", hostile).stdout)
    assert isinstance(out["hits"], list)


def test_zero_hits_is_success_and_empty_query_not_degraded(docs) -> None:
    run_json("scan", str(docs))
    out = run_json("query", "zzzqqqxxx")
    assert out["hits"] == [] and out["total"] == 0
    empty = run_json("query", "   ")
    assert empty["hits"] == [] and empty["degraded"] is False


def test_query_from_stdin_and_batch_jsonl(docs) -> None:
    run_json("scan", str(docs))
    out = run("query", "--json", input="fox\n")
    assert json.loads(out.stdout)["hits"][0]["rel_path"] == "notes.txt"
    batch = run("query", "--queries", "-", input="fox\n全文\n\nmeeting\n")
    lines = [json.loads(x) for x in batch.stdout.splitlines()]
    assert [x["query"] for x in lines] == ["fox", "全文", "", "meeting"]


@pytest.mark.parametrize(
    "args",
    [["query", "x", "--top", "foo"], ["query", "x", "--mode", "bogus"],
     ["query", "x", "--top", "1001"], ["query", "x", "--min-score", "2"],
     ["scan", "--bogus"]],
)  # fmt: skip
def test_usage_errors_exit_2(docs, args) -> None:
    result = run(*args, ok=False)
    assert result.exit_code == 2


def test_runtime_failure_exit_1_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DOCINDEX_DB", str(tmp_path / "missing" / "index.db"))
    result = run("query", "x", ok=False)
    assert result.exit_code == 1
    assert "no index" in result.stderr and "Traceback" not in result.stderr


def test_help_flags() -> None:
    assert run("-h").exit_code == 0
    assert "scan" in run("--help").stdout
    for cmd in ("scan", "query", "reindex", "stats"):
        assert run(cmd, "-h").stdout.strip()


def test_scope_outside_roots_refused(docs, tmp_path: Path) -> None:
    run_json("scan", str(docs))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.md").write_text("secret")
    result = run("scan", str(outside), ok=False)
    assert result.exit_code == 2 and "outside" in result.stderr
    result = run("scan", str(docs / ".." / "elsewhere"), ok=False)
    assert result.exit_code == 2


def test_scope_inside_root_limits_scan(docs) -> None:
    run_json("scan", str(docs))
    (docs / "guide.md").write_text("# Guide\n\nreplaced text about penguins\n")
    (docs / "notes.txt").write_text("changed notes about walruses\n")
    out = run_json("scan", str(docs / "guide.md"))
    assert out["updated"] == 1
    assert run_json("query", "penguins")["hits"]
    assert not run_json("query", "walruses")["hits"]


def test_edit_delete_rename_picked_up(docs) -> None:
    run_json("scan", str(docs))
    (docs / "notes.txt").write_text("meeting notes\nthe cat slept\n")
    (docs / "ko.md").unlink()
    (docs / "ja.md").rename(docs / "japanese.md")
    out = run_json("scan", str(docs))
    assert out["updated"] == 1 and out["removed"] == 2 and out["indexed"] == 1
    assert run_json("query", "cat")["hits"][0]["rel_path"] == "notes.txt"
    assert not run_json("query", "fox")["hits"]
    assert run_json("query", "検索")["hits"][0]["rel_path"] == "japanese.md"
    assert not run_json("query", "색인")["hits"]


def test_touched_identical_file_not_reindexed(docs) -> None:
    run_json("scan", str(docs))
    later = time.time() + 10
    os.utime(docs / "guide.md", (later, later))
    out = run_json("scan", str(docs))
    assert out["unchanged"] == 5 and out["updated"] == 0


def test_form_feed_utf16_bom_crlf(tree) -> None:
    root = tree({
        "ff.txt": "page one words\f\npage two apples\n",
        "u16.txt": "utf sixteen bananas\r\n".encode("utf-16"),
        "bom.md": b"\xef\xbb\xbf# T\r\nbom cherries\r\n",
        "cr.txt": b"old mac\rline two dates\r",
        "bad.txt": b"invalid \xff\xfe utf8 elderberry\n",
    })  # fmt: skip
    out = run_json("scan", str(root))
    assert out["indexed"] == 5, out
    for word, name, line in [("apples", "ff.txt", 2), ("bananas", "u16.txt", 1),
                             ("cherries", "bom.md", 2), ("dates", "cr.txt", 2),
                             ("elderberry", "bad.txt", 1)]:  # fmt: skip
        hit = run_json("query", word)["hits"][0]
        assert (hit["rel_path"], hit["line"]) == (name, line)


def test_binary_empty_unsupported_reasons(tree) -> None:
    root = tree({"a.bin2": b"\x00\x01\x02" * 100, "e.md": "", "p.mp3": b"ID3\x03",
                 "ok.weird": "plain text in an unknown suffix"})  # fmt: skip
    out = run_json("scan", str(root))
    assert out["skipped"] == {"binary": 1, "empty": 1, "unsupported": 1}
    assert out["indexed"] == 1


def test_caps_are_never_silent(tree, monkeypatch) -> None:
    root = tree({f"f{i}.md": f"doc number {i}" for i in range(5)})
    monkeypatch.setenv("DOCINDEX_MAX_DOCS", "3")
    out = run_json("scan", str(root))
    assert out["indexed"] == 3 and out["skipped"] == {"max-docs": 2}


def test_exclude_option_and_negation(tree) -> None:
    root = tree({"build/keep.md": "kept", "build/x.md": "gone", "a.log": "log"})
    out = run_json(
        "scan", str(root), "--exclude", "!build/keep.md", "--exclude", "*.log"
    )
    assert out["indexed"] == 1


def test_index_discovery_walks_up(docs, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DOCINDEX_DB")
    monkeypatch.chdir(tmp_path)
    run_json("scan", str(docs))
    assert (docs / ".docindex" / "index.db").is_file()
    monkeypatch.chdir(docs / ".docindex")
    sub = docs / "deeper"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert run_json("query", "fox")["hits"]


def test_config_file_and_env(docs, tmp_path: Path, monkeypatch) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[segment]\nchars = 120\n[walk]\nexclude = ['*.txt']\n")
    monkeypatch.setenv("DOCINDEX_CONFIG", str(cfg))
    out = run_json("scan", str(docs))
    assert out["indexed"] == 4
    cfg.write_text("bogus_setting = 1\n")
    result = run("scan", str(docs), ok=False)
    assert result.exit_code == 1 and "bogus_setting" in result.stderr


def test_reindex_and_full_rebuild(docs) -> None:
    run_json("scan", str(docs))
    assert run_json("reindex")["updated"] == 5
    full = run_json("reindex", "--full")
    assert full["indexed"] == 5
    assert run_json("query", "fox")["hits"]
    stats = run_json("stats")
    assert stats["documents"] == 5 and stats["segments"] >= 5
    assert stats["embedded"] == stats["segments"]


def test_full_rebuild_resumes_an_interrupted_one(docs, tmp_path) -> None:
    import shutil

    db = Path(os.environ["DOCINDEX_DB"])
    run_json("scan", str(docs))
    leftover = db.with_name(db.name + ".rebuild")
    # A rebuild killed after its scan committed: the same settings are reused.
    shutil.copy(db, leftover)
    resumed = run_json("reindex", "--full")
    assert resumed["unchanged"] == 5 and resumed["indexed"] == 0
    assert not leftover.exists() and run_json("query", "fox")["hits"]
    # Damaged or built for other settings: started afresh, never trusted.
    leftover.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    assert run_json("reindex", "--full")["indexed"] == 5
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("# A\n\nalpha\n")
    run_json("scan", str(other), "--db", str(leftover))
    assert run_json("reindex", "--full")["indexed"] == 5
    assert run_json("stats")["documents"] == 5


def test_python_dash_m(docs) -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "docindex", "--version"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert "docindex" in out.stdout


def test_scan_summary_prints_file_names_as_text(tmp_path) -> None:
    """A bracket in a file name is not console markup (the summary uses click)."""
    from docindex.cli.render_index import scan_text
    from docindex.models import ScanResult

    result = ScanResult(scanned=2, indexed=1)
    result.skip("error", "docs/[/bold]x[red].md", "cannot read: \x1b[31mdenied")
    out = scan_text(result)
    assert "docs/[/bold]x[red].md" in out and "\x1b[31m" not in out
    assert out.startswith("scanned 2, indexed 1,")
    (tmp_path / "[red]note.md").write_text("# Note\n\nbrackets in names\n")
    done = run("scan", str(tmp_path), "--db", str(tmp_path / "i.db"))
    assert "indexed 1" in done.stderr
