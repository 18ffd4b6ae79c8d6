"""Segmentation: sizes, headings, blocks, line numbers, chunk ids."""

import pytest

from docindex.ingest.segment import segment_document
from docindex.models import Extracted, Unit
from docindex.text.anchors import slugify


def seg(text: str, size: int = 400, markdown: bool = True, rel: str = "a.md"):
    body, segments = segment_document(
        Extracted(units=(Unit(text=text, markdown=markdown),)), rel, size
    )
    return body, segments


def test_lines_are_one_based_and_text_matches_offsets() -> None:
    text = "\n".join(f"line {i} " + "word " * 10 for i in range(1, 41))
    body, segments = seg(text, size=200, markdown=False)
    assert segments[0].start_line == 1
    lines = text.split("\n")
    for s in segments:
        assert body[s.char_start : s.char_end] == s.text
        assert s.text.split("\n")[0] == lines[s.start_line - 1]
        assert s.end_line - s.start_line + 1 == len(s.text.split("\n"))
        assert len(s.text) <= 260


def test_never_starts_on_blank_line() -> None:
    text = "para one\n\n\n\npara two\n\n" * 30
    _, segments = seg(text, size=60, markdown=False)
    for s in segments:
        assert s.text.split("\n")[0].strip()


def test_markdown_segments_do_not_cross_headings_and_carry_path() -> None:
    text = "# Guide\nintro\n## Install\nrun pip\n### On Windows\nuse py\n## Use\ngo\n"
    _, segments = seg(text)
    paths = [s.heading_path for s in segments]
    assert paths == [
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "On Windows"),
        ("Guide", "Use"),
    ]
    assert [s.chunk_id for s in segments] == [
        "a.md#guide",
        "a.md#guide/install",
        "a.md#guide/install/on-windows",
        "a.md#guide/use",
    ]


def test_fenced_code_block_stays_whole() -> None:
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(15)) + "\n```"
    text = "# T\n" + "words here. " * 25 + "\n" + code + "\nafter\n"
    _, segments = seg(text, size=200)
    holder = [s for s in segments if "```python" in s.text]
    assert len(holder) == 1 and holder[0].text.count("```") == 2


def test_heading_in_code_fence_is_not_a_heading() -> None:
    _, segments = seg("# A\n```\n# not a heading\n```\ntext\n")
    assert [s.heading_path for s in segments] == [("A",)]


def test_oversized_block_is_split_on_lines() -> None:
    code = "```\n" + "\n".join("y = 1 + 2 + 3 + 4" for _ in range(100)) + "\n```"
    _, segments = seg(code, size=200)
    assert len(segments) > 5
    assert all(len(s.text) <= 220 for s in segments)


def test_long_line_is_cut_at_word_boundary() -> None:
    text = ("alpha beta gamma delta " * 200).strip()
    body, segments = seg(text, size=100, markdown=False)
    assert len(segments) > 10
    for s in segments:
        assert s.start_line == 1
        assert body[s.char_start : s.char_end] == s.text
        assert not s.text.startswith(("lpha", "eta", "amma", "elta"))


def test_chunk_ids_preamble_duplicates_cjk_and_single_file() -> None:
    text = "preface\n# 安装\nx\n## Step\na\n## Step\nb\n"
    _, segments = seg(text)
    assert [s.chunk_id for s in segments] == [
        "a.md#_preamble",
        "a.md#安装",
        "a.md#安装/step",
        "a.md#安装/step-2",
    ]
    _, single = seg("just text\n", rel="n.txt", markdown=False)
    assert [s.chunk_id for s in single] == ["n.txt"]


def test_chunk_ids_stable_under_unrelated_edit() -> None:
    before = seg("# A\nfoo\n# B\nbar\n")[1]
    after = seg("# A\nfoo changed and longer\n# B\nbar\n")[1]
    assert [s.chunk_id for s in before] == [s.chunk_id for s in after]


def test_slugify() -> None:
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("  a -- b  ") == "a----b"  # GitHub: each space a hyphen
    assert slugify("snake_case: 2.0") == "snake_case-20"
    assert slugify("全文 检索") == "全文-检索"


def test_markdown_title_is_the_first_h1_outside_fences_in_400_lines() -> None:
    from docindex.ingest.extract import ExtractLimits, get_extractor

    def _first_h1(text: str) -> str | None:
        """The title the Markdown extractor gives a file without front matter."""
        return get_extractor("md")(text.encode(), "a.md", ExtractLimits()).title

    assert _first_h1("# Title\n\ntext") == "Title"
    assert _first_h1("```sh\n# not a title\n```\n# Real ##") == "Real"
    assert _first_h1("  ~~~\n# fenced\n\t~~~\n#\tTabbed") == "Tabbed"
    assert _first_h1("## h2\n#no-space\n # indented\n") is None
    assert _first_h1("\n".join(["x"] * 399 + ["# Last"])) == "Last"
    assert _first_h1("\n".join(["x"] * 400 + ["# Late"])) is None
    assert _first_h1("```\n# open fence never closed") is None


@pytest.mark.slow
def test_a_file_of_200k_headings_segments_in_linear_time() -> None:
    """Issue #33: 200k headings in 3.5 MB took over 11 minutes (each join of a
    heading-only chunk copied the text joined so far); now a few seconds."""
    import time

    from docindex.ingest.extract import ExtractLimits, get_extractor

    doc = "".join(f"## Heading {i}\n" for i in range(200_000)).encode()
    started = time.perf_counter()
    extracted = get_extractor("md")(doc, "h.md", ExtractLimits())
    _, segments = segment_document(extracted, "h.md", 1000)
    assert len(segments) == 1 and segments[0].end_line == 200_000
    assert time.perf_counter() - started < 60  # 4.7 s here; before: > 11 min
