"""Split extracted units into line-numbered Segments with stable chunk ids.

Rules (issues #2 and #6): segments of about ``size`` characters break on line
boundaries; a line longer than ``size`` is cut at a word boundary when it has
one; Markdown segments never cross headings and carry the heading path; a
segment never starts on a blank line; a fenced code block or a table stays in
one segment unless it alone exceeds the size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate

from .anchors import chunk_id, slugify
from .models import Extracted, Segment, Unit

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MARKS = frozenset("#`~")  # what a heading or fence line starts with
_PLUS_ONE = (1).__add__
UNIT_SEPARATOR = "\n"


@dataclass(slots=True)
class _Section:
    heading_path: tuple[str, ...]
    anchor: str  # chunk-id fragment, "" for a file without headings
    first: int  # index of first line (0-based) in the unit
    last: int  # exclusive


def markdown_headings(lines: list[str]) -> Iterator[tuple[int, int, str]]:
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
    for i, level, text in markdown_headings(lines):
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


def _split_long_line(line: str, size: int) -> list[str]:
    """Cut an over-long line near ``size`` at a space when there is one."""
    parts: list[str] = []
    while len(line) > size:
        cut = line.rfind(" ", size // 2, size)
        if cut <= 0:
            cut = size
        parts.append(line[:cut])
        line = line[cut:]
    parts.append(line)
    return parts


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


def _unit_anchor(unit: Unit) -> str | None:
    if unit.page is not None:
        return f"p{unit.page}"
    if unit.slide is not None:
        return f"slide-{unit.slide}"
    if unit.sheet is not None:
        return f"sheet-{slugify(unit.sheet)}"
    return None


def segment_document(
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
        offset += len(unit.text) + len(UNIT_SEPARATOR)
    return UNIT_SEPARATOR.join(texts), _finish_ids(segments, rel_path)


def _join(anchor: str, section_anchor: str) -> str:
    if not section_anchor or section_anchor == "_preamble":
        return anchor
    return f"{anchor}/{section_anchor}"


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
