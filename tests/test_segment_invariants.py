"""Segmenter invariants over tricky Markdown and text, drawn by hypothesis (#7, #18).

These inputs used to be compared with a frozen copy of the segmenter as of
commit 1842bde (the line-by-line one that issue #7 rewrote); the copy is gone
and the same inputs now check what must hold for any segmenter: offsets that
give back each segment's text, 1-based lines in order, unique chunk ids,
and headings that come from Markdown headings outside code fences.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from docindex.ingest.segment import segment_document
from docindex.models import Extracted, Segment, Unit
from docindex.text.headings import markdown_headings

_TRICKY = [
    "", " ", "  ", "\t", "\u3000", "\r", " \r", "\x0b\x0c", "\u2028", "\x1c", "\xa0",
    "# Title", "## Sub ##", "### Deep #", "#### x", "##### five", "###### six",
    "####### seven", "#", "#  ", "# A", "# A-2", "# a", "#no space", " # one",
    "# a # #", "# x\t#  ", "#\t#", "# #", "## a ##b", "# \u3000x\u3000 #", "# a \\#",
    "   ### three", "    # four (code)", "\t# tab", "# trailing #  ", "## ##",
    "```", "```python", "````", "~~~", "~~~~", "~~~ tilde", " ```", "   ~~~",
    "    ```", "\t```", "\u3000```", "``", "`code`", "~~", "~x", "``` | x",
    "| a | b |", "|---|---|", "  | c | d |", "\u3000| e |", "\r|", "|",
    "a | b", "text with | pipe", "x|", "plain words here", "short",
    "检索与排序的混合方法。", "全文检索 向量检索", "テキスト",
    "word " * 30, "w" * 130, "alpha beta " * 60, "x" * 900, ("長" * 300),
    "# " + "long heading " * 20, "| " + "cell | " * 40,
]  # fmt: skip
LINE = st.one_of(
    st.sampled_from(_TRICKY),
    st.sampled_from(["```", "~~~", "| a |", "", "# H", "ab", "a b c"]),
    st.text(alphabet=st.sampled_from(list(" #`~|\tab\u3000検-")), max_size=12),
    st.text(alphabet="ab ", max_size=10),
)
SHORT = st.text(alphabet="ab ", max_size=8)
FENCE = st.builds(
    lambda opener, body, closer: [opener, *body, *closer],
    st.sampled_from(["```", "~~~", "````x", " ~~~~", "   ```"]),
    st.lists(st.one_of(SHORT, st.sampled_from(["", "# in code", "| x |"])), max_size=6),
    st.sampled_from([[], ["```"], ["~~~"], ["\t```"], ["\u3000~~~"], ["    ```"]]),
)
TABLE = st.lists(st.sampled_from(["| a |", "|-|", " | bb | c |", "\t|"]), max_size=5)
TEXT = st.lists(
    st.one_of(LINE.map(lambda line: [line]), FENCE, TABLE), max_size=25
).map(lambda parts: "\n".join(line for part in parts for line in part))
SIZE = st.one_of(
    st.sampled_from([1, 7, 40, 120, 400]),
    st.integers(min_value=1, max_value=60),
    st.integers(min_value=1, max_value=600),
)
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def units(draw: st.DrawFn) -> Unit:
    text = draw(TEXT)
    where = draw(st.sampled_from(["none", "page", "slide", "sheet"]))
    cells = None
    if draw(st.booleans()):
        cells = tuple(f"A{i}" for i in range(1, text.count("\n") + 2))
    return Unit(
        text=text,
        page=draw(st.integers(1, 3)) if where == "page" else None,
        slide=draw(st.integers(1, 3)) if where == "slide" else None,
        sheet=draw(st.sampled_from(["S 1", "s-1", "Σ"])) if where == "sheet" else None,
        line_cells=cells,
        markdown=draw(st.booleans()),
    )


def _check(body: str, segments: list[Segment], units: tuple[Unit, ...]) -> None:
    assert all(type(s) is Segment for s in segments)
    assert [s.ordinal for s in segments] == list(range(len(segments)))
    assert len({s.chunk_id for s in segments}) == len(segments)
    end = 0
    for s in segments:
        assert body[s.char_start : s.char_end] == s.text
        assert s.char_start >= end  # in order, never overlapping
        end = s.char_end
        assert 1 <= s.start_line <= s.end_line
        assert s.end_line - s.start_line + 1 == len(s.text.split("\n"))
    headings = {
        text
        for unit in units
        if unit.markdown
        for _, _, text in markdown_headings(unit.text.split("\n"))
    }
    for s in segments:
        assert set(s.heading_path) <= headings


@SETTINGS
@given(text=TEXT, size=SIZE, markdown=st.booleans())
def test_one_unit(text: str, size: int, markdown: bool) -> None:
    units = (Unit(text=text, markdown=markdown),)
    body, segments = segment_document(Extracted(units=units), "d/a.md", size)
    _check(body, segments, units)
    if text.strip() and not markdown:
        assert segments


@SETTINGS
@given(units=st.lists(units(), min_size=1, max_size=4), size=SIZE)
def test_many_units(units: list[Unit], size: int) -> None:
    body, segments = segment_document(
        Extracted(units=tuple(units), kind="pdf"), "b.pdf", size
    )
    _check(body, segments, tuple(units))
    for s in segments:  # a segment keeps its unit's location
        assert any(
            (s.page, s.slide, s.sheet) == (u.page, u.slide, u.sheet) for u in units
        )


@SETTINGS
@given(lines=st.lists(LINE | st.text(max_size=5), max_size=40))
@example(lines=["\u3000", "    # four (code)", "-"])  # a setext paragraph of 2 lines
def test_markdown_headings_are_heading_lines_in_order(lines: list[str]) -> None:
    """ATX (``# x``) or setext (a line underlined with ``=``/``-``, #19) headings."""
    found = list(markdown_headings(lines))
    assert [i for i, _, _ in found] == sorted({i for i, _, _ in found})
    for i, level, _ in found:
        assert 1 <= level <= 6
        atx = lines[i].lstrip(" ").startswith("#" * level)
        # A setext heading's paragraph may span lines: the underline is the
        # first line after i that is all "=" or "-", with no blank line between.
        after = [line.strip(" \t") for line in lines[i + 1 :]]
        underline = next(
            (k for k, line in enumerate(after) if line and set(line) <= set("=-")),
            None,
        )
        setext = (
            level <= 2
            and underline is not None
            and all(line for line in after[:underline])
        )
        assert atx or setext, (lines[i], level)


def test_every_small_document() -> None:
    """All documents of up to 3 lines from a small alphabet, at sizes 1-14."""
    from itertools import product

    alphabet = ["", " ", "a", "ab c", "# H", "```", "~~~", "| a |", "\t|", "\t```"]
    for n in range(1, 4):
        for lines in product(alphabet, repeat=n):
            text = "\n".join(lines)
            for markdown in (False, True):
                units = (Unit(text=text, markdown=markdown),)
                for size in range(1, 15):
                    body, segments = segment_document(
                        Extracted(units=units), "a.md", size
                    )
                    _check(body, segments, units)
