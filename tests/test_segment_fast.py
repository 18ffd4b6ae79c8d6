"""Issue #7: the fast segmenter gives exactly what the line-by-line one gave.

The reference below is ``docindex/segment.py`` as of commit 1842bde, copied
verbatim (public names prefixed ``reference_``), except three helpers the
rewrite left unchanged (``_split_long_line``, ``_unit_anchor``, ``_join``),
which it imports. Hypothesis draws documents
from lines that exercise every rule: blank and whitespace-only lines (Unicode
whitespace, CR), headings of every level with closing #s and indents, fences
of both kinds and several lengths (closed, unclosed, indented, in tables),
tables, pipes mid-line, over-long lines with and without spaces, CJK.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docindex.anchors import chunk_id, slugify
from docindex.models import Extracted, Segment, Unit
from docindex.segment import (  # unchanged helpers, shared with the reference
    _join,
    _split_long_line,
    _unit_anchor,
    markdown_headings,
    segment_document,
)

# -- reference implementation (commit 1842bde) ----------------------------------

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MARKS = frozenset("#`~")  # what a heading or fence line starts with
_PLUS_ONE = (1).__add__
_UNIT_SEPARATOR = "\n"


@dataclass(slots=True)
class _Section:
    heading_path: tuple[str, ...]
    anchor: str  # chunk-id fragment, "" for a file without headings
    first: int  # index of first line (0-based) in the unit
    last: int  # exclusive


def reference_markdown_headings(lines: list[str]) -> Iterator[tuple[int, int, str]]:
    """Yield (0-based line, level, text) of ATX headings outside code fences."""
    in_fence: str | None = None
    marks = _MARKS
    for i, line in enumerate(lines):
        # Both patterns start within 4 characters with #, ` or ~: skip the
        # rest without running a regex (issue #7: most lines are plain text).
        if line[:4].lstrip(" ")[:1] not in marks:
            continue
        fence = _FENCE.match(line)
        if fence:
            marker = fence.group(1)
            if in_fence is None:
                in_fence = marker[0] * 3
            elif marker.startswith(in_fence):
                in_fence = None
            continue
        if in_fence is None:
            match = _HEADING.match(line)
            if match:
                yield i, len(match.group(1)), match.group(2).strip()


def _markdown_sections(lines: list[str]) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, str, str]] = []  # (level, text, slug-path)
    counts: dict[tuple[str, str], int] = {}
    used: set[str] = set()
    current = _Section((), "_preamble", 0, 0)
    for i, level, text in reference_markdown_headings(lines):
        current.last = i
        sections.append(current)
        while stack and stack[-1][0] >= level:
            stack.pop()
        parent = stack[-1][2] if stack else ""
        base = slugify(text)
        n = counts.get((parent, base), 0) + 1
        slug = base if n == 1 else f"{base}-{n}"
        path = f"{parent}/{slug}" if parent else slug
        # A literal "A-2" heading must not collide with the second "A" (issue #6):
        # keep counting until the path is unused.
        while path in used:
            n += 1
            slug = f"{base}-{n}"
            path = f"{parent}/{slug}" if parent else slug
        counts[(parent, base)] = n
        used.add(path)
        stack.append((level, text, path))
        current = _Section(tuple(t for _, t, _ in stack), path, i, i)
    current.last = len(lines)
    sections.append(current)
    if len(sections) == 1:
        # No headings: plain-text ids (``a.md``, ``a.md~2``) as for a .txt file;
        # ``#_preamble`` names only text before a first heading (issue #6).
        current.anchor = ""
    # A heading directly followed by a sub-heading has no text of its own: it
    # lives on in its children's heading paths rather than as an empty chunk.
    return [s for s in sections if _has_body(lines, s)]


def _has_body(lines: list[str], section: _Section) -> bool:
    start = section.first + (1 if section.heading_path else 0)
    return any(ln.strip() for ln in lines[start : section.last])


def _blocks(lines: list[str], first: int, last: int) -> Iterator[tuple[int, int]]:
    """Yield [start, end) line ranges that should stay together (fences, tables)."""
    i = first
    marks = _MARKS
    while i < last:
        line = lines[i]
        if "|" not in line and line[:4].lstrip(" ")[:1] not in marks:
            yield i, i + 1  # the common case: a plain line is its own block
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            marker = fence.group(1)[0] * 3
            j = i + 1
            while j < last and not lines[j].lstrip().startswith(marker):
                j += 1
            end = min(j + 1, last)
            yield i, end
            i = end
            continue
        if lines[i].lstrip().startswith("|"):
            j = i + 1
            while j < last and lines[j].lstrip().startswith("|"):
                j += 1
            yield i, j
            i = j
            continue
        yield i, i + 1
        i += 1


def _pack(
    lines: list[str], first: int, last: int, size: int
) -> Iterator[tuple[int, int]]:
    """Yield [start, end) line ranges of about ``size`` characters, never starting blank."""
    start: int | None = None
    length = 0
    for b_start, b_end in _blocks(lines, first, last):
        if b_end - b_start == 1:
            block_len = len(lines[b_start]) + 1
        else:
            block_len = sum(len(lines[k]) + 1 for k in range(b_start, b_end))
        if start is None:
            if b_end - b_start == 1 and not lines[b_start].strip():
                continue
            start, length = b_start, 0
        if length and length + block_len > size:
            yield start, _trim_end(lines, start, b_start)
            start, length = b_start, 0
            if b_end - b_start == 1 and not lines[b_start].strip():
                start = None
                continue
        if block_len > size and b_end - b_start > 1:
            # A block that alone exceeds the size: split inside it on lines.
            if length:
                yield start, _trim_end(lines, start, b_start)
            sub_start, sub_len = b_start, 0
            for k in range(b_start, b_end):
                if sub_len and sub_len + len(lines[k]) + 1 > size:
                    yield sub_start, k
                    sub_start, sub_len = k, 0
                sub_len += len(lines[k]) + 1
            start, length = sub_start, sub_len
            continue
        length += block_len
    if start is not None:
        end = _trim_end(lines, start, last)
        if end > start:
            yield start, end


def _trim_end(lines: list[str], start: int, end: int) -> int:
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def reference_segment_document(
    extracted: Extracted, rel_path: str, size: int = 400
) -> tuple[str, list[Segment]]:
    """Segment every unit of a document.

    Args:
        extracted: the extractor's output.
        rel_path: path relative to its root, the stem of every chunk id.
        size: target segment length in characters.

    Returns:
        The document text (units joined by newlines, the text that is stored)
        and its segments in order, with character offsets into that text.
    """
    segments: list[Segment] = []
    offset = 0
    texts: list[str] = []
    used_anchors: set[str] = set()
    for unit in extracted.units:
        raw = unit.text.split("\n")
        # Over-long lines are cut into several lines for segmentation only when
        # the unit has no line structure to cite (rare: minified files).
        lines = raw
        # Offset of each line (and one past the last): a running sum in C.
        starts = list(accumulate(map(_PLUS_ONE, map(len, lines)), initial=0))
        anchor = _unit_anchor(unit)
        if anchor is not None:
            # Two sheets whose names slugify alike get -2, -3 (ids stay unique).
            k = 1
            while (anchor if k == 1 else f"{anchor}-{k}") in used_anchors:
                k += 1
            anchor = anchor if k == 1 else f"{anchor}-{k}"
            used_anchors.add(anchor)
        if unit.markdown:
            sections = _markdown_sections(lines)
        else:
            sections = [_Section((), "", 0, len(lines))]
        for section in sections:
            base = section.anchor if anchor is None else _join(anchor, section.anchor)
            ranges = list(_ranges(lines, section, size))
            for part, (a, b, piece_start, piece_end) in enumerate(ranges, start=1):
                cid = chunk_id(rel_path, base, part)
                text = unit.text[starts[a] + piece_start : starts[b - 1] + piece_end]
                cells = unit.line_cells[a:b] if unit.line_cells is not None else None
                segments.append(
                    Segment(
                        ordinal=len(segments),
                        text=text,
                        start_line=a + 1,
                        end_line=b,
                        heading_path=section.heading_path,
                        chunk_id=cid,
                        page=unit.page,
                        slide=unit.slide,
                        sheet=unit.sheet,
                        line_cells=cells,
                        char_start=offset + starts[a] + piece_start,
                        char_end=offset + starts[b - 1] + piece_end,
                        anchor=base,
                        part=part,
                    )
                )
        texts.append(unit.text)
        offset += len(unit.text) + len(_UNIT_SEPARATOR)
    return _UNIT_SEPARATOR.join(texts), _finish_ids(segments, rel_path)


def _ranges(
    lines: list[str], section: _Section, size: int
) -> Iterator[tuple[int, int, int, int]]:
    """Yield (first_line, end_line, start_col, end_col_in_last_line) pieces."""
    for a, b in _pack(lines, section.first, section.last, size):
        if b - a == 1 and len(lines[a]) > size * 2:
            col = 0
            for piece in _split_long_line(lines[a], size):
                yield a, b, col, col + len(piece)
                col += len(piece)
            continue
        yield a, b, 0, len(lines[b - 1])


def _finish_ids(segments: list[Segment], rel_path: str) -> list[Segment]:
    """A file that is one chunk is just ``rel_path``; ids are made unique."""
    import dataclasses

    if len(segments) == 1 and segments[0].chunk_id in (
        f"{rel_path}#_preamble",
        rel_path,
    ):
        return [dataclasses.replace(segments[0], chunk_id=rel_path)]
    seen: dict[str, int] = {}
    used = {seg.chunk_id for seg in segments}
    out: list[Segment] = []
    for seg in segments:
        cid = seg.chunk_id
        if cid in seen:
            # Safety net only (headings and unit anchors are already unique):
            # never hand out an id another segment already has.
            n = seen[cid] + 1
            while f"{cid}~{n}" in used:
                n += 1
            seen[cid] = n
            cid = f"{cid}~{n}"
            used.add(cid)
            seg = dataclasses.replace(seg, chunk_id=cid)
        seen.setdefault(cid, 1)
        out.append(seg)
    return out


# -- differential tests ------------------------------------------------------------

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


@SETTINGS
@given(text=TEXT, size=SIZE, markdown=st.booleans())
def test_one_unit_matches_reference(text: str, size: int, markdown: bool) -> None:
    doc = Extracted(units=(Unit(text=text, markdown=markdown),))
    assert segment_document(doc, "d/a.md", size) == reference_segment_document(
        doc, "d/a.md", size
    )


@SETTINGS
@given(units=st.lists(units(), min_size=1, max_size=4), size=SIZE)
def test_many_units_match_reference(units: list[Unit], size: int) -> None:
    doc = Extracted(units=tuple(units), kind="pdf")
    assert segment_document(doc, "b.pdf", size) == reference_segment_document(
        doc, "b.pdf", size
    )


@SETTINGS
@given(lines=st.lists(LINE | st.text(max_size=5), max_size=40))
def test_markdown_headings_match_reference(lines: list[str]) -> None:
    assert list(markdown_headings(lines)) == list(reference_markdown_headings(lines))


def test_segments_are_segment_objects() -> None:
    doc = Extracted(units=(Unit(text="# A\nx\n\n# B\ny", markdown=True),))
    body, segments = segment_document(doc, "a.md", 400)
    assert body == "# A\nx\n\n# B\ny"
    assert all(type(s) is Segment for s in segments)
    assert segments == reference_segment_document(doc, "a.md", 400)[1]


def test_every_small_document_matches_reference() -> None:
    """All documents of up to 3 lines from a small alphabet, at sizes 1-14."""
    from itertools import product

    alphabet = ["", " ", "a", "ab c", "# H", "```", "~~~", "| a |", "\t|", "\t```"]
    for n in range(1, 4):
        for lines in product(alphabet, repeat=n):
            text = "\n".join(lines)
            for markdown in (False, True):
                doc = Extracted(units=(Unit(text=text, markdown=markdown),))
                for size in range(1, 15):
                    got = segment_document(doc, "a.md", size)
                    assert got == reference_segment_document(doc, "a.md", size), (
                        text,
                        size,
                    )
