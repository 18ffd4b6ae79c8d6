"""Issue #6: chunk ids, outline/show/section/list/related, filters with cursors, hints."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run, run_json

from docindex.ingest.segment import segment_document
from docindex.models import Extracted, Segment, Unit

GUIDE = """---
title: The Guide
language: python
---
Intro text before the first heading.

# Install
Run pip install docindex.

## On Windows
Use py -m pip install docindex.

## On Linux
Use pip3 install docindex.

# Usage
Query the index with docindex query.

## Usage
A nested heading with the same text.
"""

Tree = Callable[[dict[str, str | bytes]], Path]


def ids(text: str, rel: str = "a.md", size: int = 400) -> list[str]:
    _, segments = segment_document(
        Extracted(units=(Unit(text=text, markdown=True),), kind="md"), rel, size
    )
    return [s.chunk_id for s in segments]


@pytest.fixture
def docs(tree: Tree) -> Path:
    root = tree(
        {
            "guide.md": GUIDE,
            "sub/zh.md": "# 安装 指南\n中文 文本 安装 pip\n",
            "notes.txt": "plain text about pip install on every system\n",
            "rust.md": "---\nlanguage: rust\n---\n# Cargo\ncargo install ripgrep\n",
        }
    )
    run("scan", str(root), "-q")
    return root


# -- chunk ids ------------------------------------------------------------------


def test_chunk_ids_nesting_preamble_and_duplicates() -> None:
    text = "pre\n# A\nx\n## B\ny\n## B\nz\n# A\nw\n"
    assert ids(text) == [
        "a.md#_preamble",
        "a.md#a",
        "a.md#a/b",
        "a.md#a/b-2",
        "a.md#a-2",
    ]


def test_literal_suffix_heading_does_not_collide_with_duplicate() -> None:
    assert ids("# A-2\nx\n# A\ny\n# A\nz\n") == ["a.md#a-2", "a.md#a", "a.md#a-3"]
    assert ids("# A\nx\n# A\ny\n# A-2\nz\n") == ["a.md#a", "a.md#a-2", "a.md#a-2-2"]


def test_cjk_heading_gives_readable_id() -> None:
    assert ids("# 安装 指南!\n文本\n## Café & Bar\nq\n") == [
        "a.md#安装-指南",
        "a.md#安装-指南/café--bar",  # GitHub slug: "&" dropped, both spaces kept
    ]


def test_headingless_markdown_uses_plain_ids_with_part_suffix() -> None:
    assert ids("one line\n") == ["a.md"]
    parts = ids("a line of text\n" * 60, size=100)
    assert parts[:3] == ["a.md", "a.md~2", "a.md~3"]
    assert len(parts) == len(set(parts))


def test_long_section_gets_stable_part_suffixes() -> None:
    text = "# Big\n" + "words in a long section\n" * 40 + "# Small\nx\n"
    got = ids(text, size=120)
    assert got[0] == "a.md#big" and got[1] == "a.md#big~2"
    assert got[-1] == "a.md#small"
    assert len(got) == len(set(got))


def test_sheets_whose_names_slugify_alike_stay_unique() -> None:
    units = (Unit("a\n" * 60, sheet="S 1"), Unit("b\n" * 60, sheet="s-1"))
    _, segments = segment_document(Extracted(units=units, kind="xlsx"), "b.xlsx", 60)
    got = [s.chunk_id for s in segments]
    assert len(got) == len(set(got))
    assert got[0] == "b.xlsx#sheet-s-1"
    assert "b.xlsx#sheet-s-1-2" in got


def test_ids_stable_under_unrelated_edit_in_index(docs: Path) -> None:
    before = {
        h["chunk_id"] for h in run_json("query", "pip install", "-n", "50")["hits"]
    }
    path = docs / "guide.md"
    path.write_text(
        GUIDE.replace("Query the index", "Query the whole index, quickly,"), "utf-8"
    )
    run("scan", "-q")
    after = {
        h["chunk_id"] for h in run_json("query", "pip install", "-n", "50")["hits"]
    }
    assert "guide.md#install/on-windows" in before
    assert before == after


def test_chunk_id_in_every_hit(docs: Path) -> None:
    hits = run_json("query", "install")["hits"]
    assert hits and all(h["chunk_id"] for h in hits)


# -- outline, show, section -----------------------------------------------------


def test_outline_json(docs: Path) -> None:
    data = run_json("outline", "guide.md")
    assert data["title"] == "The Guide"
    assert [(e["level"], e["text"], e["line"]) for e in data["outline"]] == [
        (1, "Install", 7), (2, "On Windows", 10), (2, "On Linux", 13),
        (1, "Usage", 16), (2, "Usage", 19),
    ]  # fmt: skip
    assert data["outline"][1]["chunk_id"] == "guide.md#install/on-windows"
    shallow = run_json("outline", "guide.md", "--depth", "1")
    assert [e["text"] for e in shallow["outline"]] == ["Install", "Usage"]
    assert "On Linux" in run("outline", str(docs / "guide.md")).stdout


def test_show_chunk_with_context(docs: Path) -> None:
    data = run_json("show", "guide.md#install/on-windows", "--context", "1")
    assert (data["position"], data["total"]) == (3, 6)
    assert data["chunk"]["chunk_id"] == "guide.md#install/on-windows"
    assert (data["chunk"]["start_line"], data["chunk"]["end_line"]) == (10, 11)
    assert "py -m pip" in data["chunk"]["text"]
    assert [c["chunk_id"] for c in data["before"]] == ["guide.md#install"]
    assert [c["chunk_id"] for c in data["after"]] == ["guide.md#install/on-linux"]
    assert "chunk 3 of 6" in run("show", "guide.md#install/on-windows").stdout


def test_show_file_line_and_absolute_chunk_id(docs: Path) -> None:
    assert (
        run_json("show", "guide.md:14")["chunk"]["chunk_id"]
        == "guide.md#install/on-linux"
    )
    assert run_json("show", "notes.txt")["chunk"]["chunk_id"] == "notes.txt"
    absolute = f"{docs / 'guide.md'}#usage"
    assert run_json("show", absolute)["chunk"]["start_line"] == 16


def test_section_case_insensitive_with_and_without_subsections(docs: Path) -> None:
    full = run_json("section", "guide.md", "INSTALL")
    assert (full["heading"], full["start_line"], full["end_line"]) == ("Install", 7, 14)
    assert "pip3" in full["text"]
    assert full["chunk_ids"] == [
        "guide.md#install", "guide.md#install/on-windows", "guide.md#install/on-linux",
    ]  # fmt: skip
    own = run_json("section", "guide.md", "install", "--no-subsections")
    assert (own["start_line"], own["end_line"]) == (7, 8)
    assert "Windows" not in own["text"]
    missing = run("section", "guide.md", "nope", ok=False)
    assert missing.exit_code == 2 and "no heading" in missing.stderr


# -- list and related -----------------------------------------------------------


def test_list_with_filters_and_paging(docs: Path) -> None:
    data = run_json("list")
    assert data["total"] == 4 and not data["has_more"]
    first = data["documents"][0]
    assert set(first) == {"path", "rel_path", "title", "type", "size", "segments"}
    guide = next(d for d in data["documents"] if d["rel_path"] == "guide.md")
    assert (guide["title"], guide["type"], guide["segments"]) == ("The Guide", "md", 6)
    md = run_json("list", "--type", "md")
    assert {d["rel_path"] for d in md["documents"]} == {
        "guide.md",
        "sub/zh.md",
        "rust.md",
    }
    assert [
        d["rel_path"] for d in run_json("list", "--path", "sub/*")["documents"]
    ] == ["sub/zh.md"]
    page1 = run_json("list", "--limit", "2")
    page2 = run_json("list", "--limit", "2", "--offset", "2")
    assert page1["has_more"] and not page2["has_more"]
    names = [d["rel_path"] for d in page1["documents"] + page2["documents"]]
    assert sorted(names) == sorted(d["rel_path"] for d in data["documents"])


def test_related_excludes_source_file_unless_asked(docs: Path) -> None:
    data = run_json("related", "guide.md", "--top", "5")
    assert data["hits"] and all(h["rel_path"] != "guide.md" for h in data["hits"])
    assert all(0 < h["score"] <= 1 for h in data["hits"])
    same = run_json("related", "guide.md#install", "--same-file")
    ids_ = [h["chunk_id"] for h in same["hits"]]
    assert "guide.md#install" not in ids_
    assert "guide.md#install/on-linux" in ids_


# -- the roots ------------------------------------------------------------------


def test_paths_outside_the_roots_are_refused(docs: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\nkey\n", "utf-8")
    link = docs / "link.md"
    try:
        os.symlink(secret, link)
    except OSError:
        link = None
    cases = ["../secret.md", str(secret), "../secret.md#secret"]
    if link is not None:
        cases.append("link.md")
    for arg in cases:
        for cmd in (["outline", arg], ["show", arg], ["related", arg]):
            result = run(*cmd, ok=False)
            assert result.exit_code == 2, (cmd, result.stdout)
            assert "outside the index's roots" in result.stderr, cmd


def test_an_empty_file_argument_says_no_file_was_given(docs: Path) -> None:
    """``outline "$f"`` with an empty variable named the root folder itself and
    told the user to run `docindex scan ''`."""
    for cmd in (["outline", ""], ["show", ""], ["related", ""], ["show", " "]):
        result = run(*cmd, ok=False)
        assert result.exit_code == 2, (cmd, result.stdout)
        assert "no file given" in result.stderr and "scan ''" not in result.stderr


# -- filters, cursors, hints ----------------------------------------------------


@pytest.fixture
def many(tree: Tree) -> Path:
    files: dict[str, str | bytes] = {}
    for i in range(14):
        lang = "en" if i % 2 else "de"
        files[f"docs/d{i:02}.md"] = (
            f"---\nlang: {lang}\n---\n# Topic {i}\nshared word alpha {i}\n"
        )
        files[f"misc/t{i:02}.txt"] = f"shared word alpha in text {i}\n"
    root = tree(files)
    run("scan", str(root), "-q")
    return root


def _pages(*args: str) -> tuple[list[str], int]:
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        extra = ["--cursor", cursor] if cursor else []
        data = run_json("query", *args, *extra)
        seen.extend(f"{h['rel_path']}|{h['chunk_id']}" for h in data["hits"])
        pages += 1
        cursor = data["next_cursor"]
        if cursor is None:
            return seen, pages


def test_filters_with_cursor_pages_have_no_duplicates_or_gaps(many: Path) -> None:
    args = ("shared alpha", "--type", "md", "--where", "lang=en", "--top", "3")
    paged, pages = _pages(*args)
    whole = run_json("query", "shared alpha", "--type", "md", "--where", "lang=en",
                     "--top", "100")["hits"]  # fmt: skip
    assert pages >= 3
    assert len(paged) == len(set(paged)) == 7
    assert paged == [f"{h['rel_path']}|{h['chunk_id']}" for h in whole]
    assert all(p.startswith("docs/") for p in paged)
    globbed, _ = _pages("shared alpha", "--path", "misc/*", "--top", "5")
    assert len(globbed) == len(set(globbed)) == 14


def test_tampered_or_foreign_cursor_is_refused(many: Path) -> None:
    cursor = run_json("query", "shared alpha", "--top", "2")["next_cursor"]
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    forged = raw.replace('"o":2', '"o":9')
    bad = base64.urlsafe_b64encode(forged.encode()).decode().rstrip("=")
    result = run("query", "shared alpha", "--top", "2", "--cursor", bad, ok=False)
    assert result.exit_code == 2 and "modified" in result.stderr
    other = run("query", "other words", "--top", "2", "--cursor", cursor, ok=False)
    assert other.exit_code == 2 and "different query" in other.stderr


def test_hint_when_a_filter_removed_every_hit(many: Path) -> None:
    data = run_json("query", "shared alpha", "--type", "pdf")
    assert data["hits"] == []
    hint = data["hint"]
    assert hint["filtered_out"] is True
    assert hint["would_match"]["type"] == ["md", "txt"]
    assert "--type" in hint["suggestion"]
    where = run_json("query", "topic", "--where", "lang=fr")["hint"]
    assert where["would_match"]["where"] == {"lang": ["de", "en"]}


def test_hint_names_unmatched_words(many: Path) -> None:
    data = run_json("query", "zzyzx qqxqq")
    assert data["hint"]["unmatched_words"] == ["zzyzx", "qqxqq"]
    assert data["hint"]["filtered_out"] is False
    # Semantic mode may still find neighbours by sub-word n-grams; the hint
    # then says so, otherwise it asks to check the spelling.
    suggestion = data["hint"]["suggestion"]
    assert "spelling" in suggestion or "--mode semantic" in suggestion
    human = run("query", "zzyzx")
    assert "hint:" in human.stdout


def test_hint_min_score_and_no_hint_with_hits(many: Path) -> None:
    assert run_json("query", "shared alpha")["hint"] is None
    data = run_json("query", "shared alpha zzyzx", "--min-score", "1.0")
    if not data["hits"]:
        assert data["hint"]["unmatched_words"] == ["zzyzx"]
        assert data["hint"]["suggestion"]


def test_stored_chunk_ids_and_headings_equal_the_segmenter(tree: Tree) -> None:
    """The index rebuilds ids from sections + part (+ frag): no drift (issue #7)."""
    from docindex.store import Store, encode_segments

    texts = {
        "dup.md": "pre\n# A\nx\n## B\ny\n## B\nz\n# A\nw\n",
        "lit.md": "# A-2\nx\n# A\ny\n# A\nz\n",
        "one.md": "one line\n",
        "long.md": "# Big\n" + "words in a long section\n" * 40 + "# Small\nx\n",
        "plain.txt": "a line of text\n" * 60,
    }
    root = tree(texts)
    run("scan", str(root), "-q")
    with Store.open(Path(os.environ["DOCINDEX_DB"])) as store:
        for rel, text in texts.items():
            unit = Unit(text=text.rstrip("\n"), markdown=rel.endswith(".md"))
            _, expected = segment_document(
                Extracted(units=(unit,), kind="md"), rel, 400
            )
            doc_id = store.conn.execute(
                "SELECT id FROM documents WHERE rel_path = ?", (rel,)
            ).fetchone()[0]
            stored = store.segments_of(doc_id)
            assert [s.chunk_id for s in stored] == [s.chunk_id for s in expected]
            assert [s.heading for s in stored] == [s.heading_path for s in expected]
            for seg in stored:
                assert store.segments_by_chunk_id(seg.chunk_id)[0].id == seg.id
    # A safety-net id (dedup beyond the segmenter's anchors) is kept verbatim.
    seg = Segment(0, "x", 1, 1, ("A",), "f.md#a~9", anchor="a", part=1)
    assert encode_segments([seg], "f.md", "x").column(0, "frag") == "#a~9"


def test_a_query_with_no_hits_costs_what_one_with_hits_does(many: Path) -> None:
    """Issue #33: the zero-result hint re-ran the query in every other mode,
    and ``--mode semantic`` reads every vector of the index (0.3 s and 50 MB
    more on 3,000 documents, bench/zero_hits.py). The SQL it runs says so."""
    import os

    from docindex.config import Config
    from docindex.models import QueryOptions
    from docindex.search.engine import search
    from docindex.store import Store

    statements: list[str] = []
    with Store.open(Path(os.environ["DOCINDEX_DB"])) as store:
        store.conn.set_trace_callback(statements.append)
        cfg = Config(roots=(str(many),))
        assert search(store, "shared alpha", cfg, QueryOptions()).hits
        with_hits = len(statements)
        statements.clear()
        for text in ("zzyzx", "+shared +zzyzx", '"alpha shared word"'):
            result = search(store, text, cfg, QueryOptions())
            assert not result.hits and result.hint and result.hint["suggestion"]
        every_vector = [s for s in statements if "s.vec FROM segments" in s]
        assert every_vector == [], every_vector
        assert len(statements) <= 3 * with_hits, statements


def test_a_bare_file_name_suggests_the_indexed_paths_ending_with_it(
    docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``section useState.md Parameters`` from outside the file's folder (#37)."""
    monkeypatch.chdir(docs.parent)
    for cmd in (["show", "zh.md"], ["outline", "zh.md"], ["section", "zh.md", "x"]):
        result = run(*cmd, ok=False)
        assert result.exit_code != 0
        assert "did you mean sub/zh.md" in result.stderr
    assert "did you mean" not in run("show", "absent.md", ok=False).stderr
