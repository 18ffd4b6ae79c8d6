"""Split extracted units into line-numbered Segments with stable chunk ids.

Rules (issues #2 and #6): segments of about ``size`` characters break on line
boundaries; a line longer than ``size`` is cut at a word boundary when it has
one; Markdown segments never cross headings and carry the heading path; a
segment never starts on a blank line; a fenced code block or a table stays in
one segment unless it alone exceeds the size.

Speed (issue #7): no Python loop runs over every line. One regex pass finds the
few lines that matter (headings, fences, table rows); packing the plain lines
between them is a binary search over the line start offsets.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate

from .anchors import chunk_id, slugify
from .models import Extracted, Segment, Unit

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
# A line that may start a heading or a fence (``#``, ``` or ~~~ within the first
# 4 columns) or a table (``|`` after leading whitespace): group 1 is "#", "```"
# or "~~~", None for a table row. A fence opener is what _FENCE used to match:
# ``^ {0,3}(`{3,}|~{3,})``.
_SPECIAL = re.compile(r"^(?: {0,3}(#|```|~~~)|[^\S\n]*\|)")
# The same after a newline: a search for a literal first character runs in C
# far faster than trying ``^`` at every position.
_SPECIAL_AFTER_NL = re.compile(r"\n(?: {0,3}(#|```|~~~)|[^\S\n]*\|)")
# A fence closer for _blocks: any leading whitespace (str.lstrip), then the marker.
_CLOSER = {
    "```": re.compile(r"^[^\S\n]*```", re.MULTILINE),
    "~~~": re.compile(r"^[^\S\n]*~~~", re.MULTILINE),
}
_NON_BLANK = re.compile(r"\S")
_PLUS_ONE = (1).__add__
UNIT_SEPARATOR = "\n"

# (line index, "#" | "```" | "~~~" | "|") for each special line, in order.
_Specials = list[tuple[int, str]]


@dataclass(slots=True)
class _Section:
    heading_path: tuple[str, ...]
    anchor: str  # chunk-id fragment, "" for a file without headings
    first: int  # index of first line (0-based) in the unit
    last: int  # exclusive


def markdown_headings(lines: list[str]) -> Iterator[tuple[int, int, str]]:
    """Yield (0-based line, level, text) of ATX headings outside code fences."""
    text = "\n".join(lines)
    if text.count("\n") == len(lines) - 1:
        specials = _special_lines(text, list(_line_starts(lines)))
    else:  # a "line" holding a newline: test each line on its own
        specials = []
        for i, line in enumerate(lines):
            match = _SPECIAL.match(line)
            if match:
                specials.append((i, match.group(1) or "|"))
    return iter(_headings(lines, specials))


def _line_starts(lines: list[str]) -> Iterator[int]:
    """Offset of each line in the joined text, and one past the last: a sum in C."""
    return accumulate(map(_PLUS_ONE, map(len, lines)), initial=0)


def _special_lines(text: str, starts: list[int]) -> _Specials:
    """(line, tag) of each line _SPECIAL matches; ``starts`` from _line_starts."""
    found = [(m.start() + 1, m.group(1)) for m in _SPECIAL_AFTER_NL.finditer(text)]
    head = _SPECIAL.match(text)
    if head:
        found.insert(0, (0, head.group(1)))
    return [(bisect_right(starts, pos) - 1, tag or "|") for pos, tag in found]


def _headings(lines: list[str], specials: _Specials) -> list[tuple[int, int, str]]:
    """(line, level, text) of the headings among ``specials``, skipping fences.

    A fence opened by ``` closes at the next fence line of backticks (any
    length >= 3), likewise for ~~~.
    """
    out: list[tuple[int, int, str]] = []
    in_fence = ""
    for i, tag in specials:
        if tag == "#":
            if not in_fence:
                match = _HEADING.match(lines[i])
                if match:
                    out.append((i, len(match.group(1)), match.group(2).strip()))
        elif tag == "|":
            continue
        elif not in_fence:
            in_fence = tag
        elif tag == in_fence:
            in_fence = ""
    return out


def _markdown_sections(
    lines: list[str], text: str, starts: list[int], specials: _Specials
) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, str, str]] = []  # (level, text, slug-path)
    counts: dict[tuple[str, str], int] = {}
    used: set[str] = set()
    current = _Section((), "_preamble", 0, 0)
    for i, level, heading in _headings(lines, specials):
        current.last = i
        sections.append(current)
        while stack and stack[-1][0] >= level:
            stack.pop()
        parent = stack[-1][2] if stack else ""
        base = slugify(heading)
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
        stack.append((level, heading, path))
        current = _Section(tuple(t for _, t, _ in stack), path, i, i)
    current.last = len(lines)
    sections.append(current)
    if len(sections) == 1:
        # No headings: plain-text ids (``a.md``, ``a.md~2``) as for a .txt file;
        # ``#_preamble`` names only text before a first heading (issue #6).
        current.anchor = ""
    # A heading directly followed by a sub-heading has no text of its own: it
    # lives on in its children's heading paths rather than as an empty chunk.
    return [s for s in sections if _has_body(text, starts, s)]


def _has_body(text: str, starts: list[int], section: _Section) -> bool:
    start = section.first + (1 if section.heading_path else 0)
    # Lines [start, last) are text[starts[start] : starts[last] - 1].
    return _NON_BLANK.search(text, starts[start], starts[section.last] - 1) is not None


def _blocks(
    lines: list[str],
    text: str,
    starts: list[int],
    specials: _Specials,
    first: int,
    last: int,
) -> list[tuple[int, int]]:
    """[start, end) ranges of 2+ lines in [first, last) that stay together.

    A fence runs to the next line that starts, after any whitespace, with its
    marker (or to ``last``); a table is a run of lines starting with ``|``. Every
    other line is a block of its own, which packing treats as a plain line.
    """
    out: list[tuple[int, int]] = []
    k = bisect_right(specials, (first, ""))
    n = len(specials)
    nxt = first  # lines before nxt belong to a block already found
    while k < n:
        i, tag = specials[k]
        k += 1
        if i >= last:
            break
        if i < nxt or tag == "#":
            continue
        if tag == "|":
            j = i + 1
            while k < n and specials[k] == (j, "|") and j < last:
                j += 1
                k += 1
        else:
            j = last
            if i + 1 < last:
                close = _CLOSER[tag].search(text, starts[i + 1], starts[last] - 1)
                if close is not None:
                    j = bisect_right(starts, close.start())
        if j - i > 1:
            out.append((i, j))
        nxt = j
    return out


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
    lines: list[str],
    starts: list[int],
    first: int,
    last: int,
    size: int,
    blocks: list[tuple[int, int]],
) -> list[tuple[int, int]]:
    """[start, end) line ranges of about ``size`` characters, never starting blank.

    Greedy: a segment takes lines (or whole blocks) while it stays within
    ``size`` characters (each line counting its newline) and always takes its
    first one. Between blocks, the line that would overflow the segment that
    starts at ``s`` is the first ``k > s`` with ``starts[k + 1] > starts[s] +
    size``: a binary search. A segment ends trimmed of blank lines; a block
    that alone exceeds the size is cut on lines, keeping blank ones.
    """
    out: list[tuple[int, int]] = []
    start = -1  # first line of the open segment, -1 when none is open
    pos = first  # next line to pack
    for b_start, b_end in (*blocks, (last, last)):
        while pos < b_start:  # plain lines [pos, b_start)
            if start < 0:
                while pos < b_start and not lines[pos].strip():
                    pos += 1
                if pos == b_start:
                    break
                start = pos
                pos += 1
                continue
            k = bisect_right(starts, starts[start] + size, pos + 1, b_start + 1) - 1
            if k >= b_start:
                pos = b_start
                break
            out.append((start, _trim_end(lines, start, k)))
            start = k if lines[k].strip() else -1
            pos = k + 1
        if b_start == last:
            break
        if start < 0:
            start = b_start
        elif starts[b_end] - starts[start] > size:
            out.append((start, _trim_end(lines, start, b_start)))
            start = b_start
        if starts[b_end] - starts[b_start] > size:
            # A block that alone exceeds the size: split inside it on lines.
            while True:
                k = bisect_right(starts, starts[start] + size, start + 2, b_end + 1) - 1
                if k >= b_end:
                    break
                out.append((start, k))
                start = k
        pos = b_end
    if start >= 0:
        out.append((start, _trim_end(lines, start, last)))
    return out


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
        text = unit.text
        lines = text.split("\n")
        # Offset of each line (and one past the last): a running sum in C.
        starts = list(_line_starts(lines))
        specials = _special_lines(text, starts)
        anchor = _unit_anchor(unit)
        if anchor is not None:
            # Two sheets whose names slugify alike get -2, -3 (ids stay unique).
            k = 1
            while (anchor if k == 1 else f"{anchor}-{k}") in used_anchors:
                k += 1
            anchor = anchor if k == 1 else f"{anchor}-{k}"
            used_anchors.add(anchor)
        if unit.markdown:
            sections = _markdown_sections(lines, text, starts, specials)
        else:
            sections = [_Section((), "", 0, len(lines))]
        page, slide, sheet, cells = unit.page, unit.slide, unit.sheet, unit.line_cells
        for section in sections:
            base = section.anchor if anchor is None else _join(anchor, section.anchor)
            path = section.heading_path
            blocks = _blocks(lines, text, starts, specials, section.first, section.last)
            ranges = _pack(lines, starts, section.first, section.last, size, blocks)
            part = 0
            for a, b in ranges:
                if b - a == 1 and len(lines[a]) > size * 2:
                    pieces = _split_long_line(lines[a], size)
                else:
                    pieces = None
                lo = starts[a]
                hi = starts[b] - 1  # end of line b - 1
                for piece in pieces or (None,):
                    part += 1
                    if piece is not None:
                        hi = lo + len(piece)
                    segments.append(
                        Segment(
                            len(segments),
                            text[lo:hi],
                            a + 1,
                            b,
                            path,
                            chunk_id(rel_path, base, part),
                            page,
                            slide,
                            sheet,
                            cells[a:b] if cells is not None else None,
                            offset + lo,
                            offset + hi,
                            base,
                            part,
                        )
                    )
                    lo = hi
        texts.append(text)
        offset += len(text) + len(UNIT_SEPARATOR)
    return UNIT_SEPARATOR.join(texts), _finish_ids(segments, rel_path)


def _join(anchor: str, section_anchor: str) -> str:
    if not section_anchor or section_anchor == "_preamble":
        return anchor
    return f"{anchor}/{section_anchor}"


def _finish_ids(segments: list[Segment], rel_path: str) -> list[Segment]:
    """A file that is one chunk is just ``rel_path``; ids are made unique."""
    import dataclasses

    if len(segments) == 1 and segments[0].chunk_id in (
        f"{rel_path}#_preamble",
        rel_path,
    ):
        return [dataclasses.replace(segments[0], chunk_id=rel_path)]
    used = {seg.chunk_id for seg in segments}
    if len(used) == len(segments):
        return segments  # already unique: the usual case
    seen: dict[str, int] = {}
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
