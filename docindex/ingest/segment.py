"""Split extracted units into line-numbered Segments with stable chunk ids.

Rules (issues #2 and #6): segments of about ``size`` characters break on line
boundaries; a line longer than ``size`` is cut at a word boundary when it has
one; Markdown segments never cross headings and carry the heading path; a
segment never starts on a blank line; a fenced code block or a table stays in
one segment unless it alone exceeds the size.

Speed (issue #7): nothing loops over every line in Python, and the text is not
split into lines. Positions are character offsets; a line is known by the
offset of its first character (``len(text) + 1`` stands for "past the last
line"), so lines [a, b) are ``text[a : b - 1]``. One regex pass finds the few
lines that matter (headings, fences, table rows); where a segment of plain
lines must end is found with ``str.rfind``; line numbers are counted newlines.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from itertools import islice
from typing import NamedTuple

from docindex.models import Extracted, Segment, Unit
from docindex.text.anchors import chunk_id, slugify
from docindex.text.headings import Specials, find_headings, special_lines

# What closes a fence for packing: any leading whitespace, then the marker.
_CLOSER = {
    "```": re.compile(r"^[^\S\n]*```", re.MULTILINE),
    "~~~": re.compile(r"^[^\S\n]*~~~", re.MULTILINE),
}
_TABLE_RUN = re.compile(r"[^\S\n]*\|[^\n]*(?:\n[^\S\n]*\|[^\n]*)*")
_BLANK_LINES = re.compile(r"(?:[^\S\n]*\n)*")
_HAS_TEXT = re.compile(r"[^\S\n]*\S")  # matched at a line start
_NON_BLANK = re.compile(r"\S")
UNIT_SEPARATOR = "\n"


@dataclass(slots=True)
class _Section:
    heading_path: tuple[str, ...]
    anchor: str  # chunk-id fragment, "" for a file without headings
    first: int  # offset of its first line in the unit text
    last: int  # offset of the line after it (len(text) + 1 past the last line)
    body: int  # offset of the line after its heading (setext: after the underline)


def _markdown_sections(text: str, specials: Specials) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, tuple[str, ...], str]] = []  # (level, path, slug path)
    counts: dict[tuple[str, str], int] = {}
    used: set[str] = set()
    current = _Section((), "_preamble", 0, 0, 0)
    headings = find_headings(text, specials)
    for head in headings:
        current.last = head.where
        sections.append(current)
        level = head.level
        while stack and stack[-1][0] >= level:
            stack.pop()
        parent = stack[-1][2] if stack else ""
        # An explicit anchor ({#id}, {/*id*/}) wins over the heading's slug.
        base = slugify(head.anchor) if head.anchor else slugify(head.text)
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
        heading_path = (*stack[-1][1], head.text) if stack else (head.text,)
        stack.append((level, heading_path, path))
        current = _Section(heading_path, path, head.where, head.where, head.body)
    current.last = len(text) + 1
    sections.append(current)
    if len(sections) == 1:
        # No headings: plain-text ids (``a.md``, ``a.md~2``) as for a .txt file;
        # ``#_preamble`` names only text before a first heading (issue #6).
        current.anchor = ""
    # A heading directly followed by a sub-heading has no text of its own: it
    # lives on in its children's heading paths rather than as an empty chunk.
    kept = [s for s in sections if _has_body(text, s)]
    if not kept and headings:
        # A file of headings only is still a document (issue #19): its last
        # heading's section holds every heading line, so each can be found.
        last = sections[-1]
        return [_Section(last.heading_path, last.anchor, 0, len(text) + 1, 0)]
    return kept


def _has_body(text: str, section: _Section) -> bool:
    start = section.body if section.heading_path else section.first
    return _NON_BLANK.search(text, start, section.last - 1) is not None


def _blocks(
    text: str, specials: Specials, where: list[int], first: int, last: int
) -> list[tuple[int, int]]:
    """[start, end) of the fences and tables in lines [first, last).

    A fence runs to the next line that starts, after any whitespace, with its
    marker (or to ``last``); a table is a run of lines starting with ``|``.
    """
    out: list[tuple[int, int]] = []
    k = bisect_left(where, first)  # where[k] is specials[k][0]
    n = len(specials)
    nxt = first  # lines before nxt belong to a block already found
    while k < n:
        pos, tag = specials[k]
        k += 1
        if pos >= last:
            break
        if pos < nxt or tag == "#":
            continue
        end = last
        if tag != "|":
            body = text.find("\n", pos) + 1
            if 0 < body < last:
                close = _CLOSER[tag].search(text, body, last - 1)
                if close is not None:
                    end = text.find("\n", close.end()) + 1 or len(text) + 1
        else:
            run = _TABLE_RUN.match(text, pos, last - 1)
            if run is not None:
                end = run.end() + 1
        out.append((pos, end))
        nxt = end
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
    text: str, first: int, last: int, size: int, blocks: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """[start, end) line ranges of about ``size`` characters, never starting blank.

    Greedy: a segment takes lines (or whole blocks) while it stays within
    ``size`` characters, each line counting its newline, and always takes its
    first one. The plain line that overflows the segment starting at ``s`` is
    the one holding offset ``s + size`` (the one after ``s`` when that line
    alone is longer). A segment ends trimmed of blank lines; a block that
    alone exceeds the size is cut on lines, keeping blank ones.
    """
    out: list[tuple[int, int]] = []
    past = len(text) + 1
    start = -1  # first line of the open segment, -1 when none is open
    pos = first  # next line to pack
    for b_start, b_end in (*blocks, (last, last)):
        while pos < b_start:  # plain lines [pos, b_start)
            if start < 0:
                blank = _BLANK_LINES.match(text, pos, b_start)
                start = blank.end() if blank else pos  # it always matches
                if start >= b_start or not _HAS_TEXT.match(text, start):
                    start = -1
                    break
                pos = text.find("\n", start) + 1 or past
                continue
            cut = _overflow(text, start, size, past)
            if cut >= b_start:
                break
            out.append((start, _trim_end(text, start, cut, past)))
            start = cut if _HAS_TEXT.match(text, cut) else -1
            pos = text.find("\n", cut) + 1 or past
        if b_start == last:
            break
        if start < 0:
            start = b_start
        elif b_end - start > size:
            out.append((start, _trim_end(text, start, b_start, past)))
            start = b_start
        if b_end - b_start > size:
            # A block that alone exceeds the size: split inside it on lines.
            while (cut := _overflow(text, start, size, past)) < b_end:
                out.append((start, cut))
                start = cut
        pos = b_end
    if start >= 0:
        out.append((start, _trim_end(text, start, last, past)))
    return out


def _overflow(text: str, start: int, size: int, past: int) -> int:
    """The first line after ``start`` that ends past offset ``start + size``."""
    if start + size >= past:
        return past  # every line ends by then
    end = text.rfind("\n", start, start + size)
    if end < 0:
        end = text.find("\n", start)
    return end + 1 or past


def _trim_end(text: str, start: int, end: int, past: int) -> int:
    """``end`` moved back over blank lines, keeping the line at ``start``."""
    kept = len(text[start : end - 1].rstrip())
    return text.find("\n", start + kept) + 1 or past


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
        specials = special_lines(text)
        where = [pos for pos, _ in specials]
        anchor = _unique_anchor(_unit_anchor(unit), used_anchors)
        if unit.markdown:
            sections = _markdown_sections(text, specials)
        else:
            sections = [_Section((), "", 0, len(text) + 1, 0)]
        page, slide, sheet, cells = unit.page, unit.slide, unit.sheet, unit.line_cells
        at = line = 0  # a line start and its 0-based number
        first_of_unit = len(segments)
        for section in sections:
            base = section.anchor if anchor is None else _join(anchor, section.anchor)
            path = section.heading_path
            blocks = _blocks(text, specials, where, section.first, section.last)
            part = 0
            for lo, end in _pack(text, section.first, section.last, size, blocks):
                a = line + text.count("\n", at, lo)
                hi = end - 1  # lines [lo, end) are text[lo:hi]
                b = a + 1 + text.count("\n", lo, hi)
                at, line = end, b
                if b - a == 1 and hi - lo > size * 2:
                    spans = _split_spans(text[lo:hi], lo, size)
                else:
                    spans = [(lo, hi)]
                for p, q in spans:
                    part += 1
                    segments.append(Segment(
                        len(segments), text[p:q], a + 1, b, path,
                        chunk_id(rel_path, base, part), page, slide, sheet,
                        cells[a:b] if cells is not None else None, offset + p,
                        offset + q, base, part,
                    ))  # fmt: skip
        # Line numbers are per unit: chunks join only within their unit.
        segments[first_of_unit:] = _merge_wordless(
            segments[first_of_unit:], text, offset
        )
        texts.append(text)
        offset += len(text) + len(UNIT_SEPARATOR)
    body = UNIT_SEPARATOR.join(texts)
    for i, seg in enumerate(segments):
        seg.ordinal = i
    if not segments and ((extracted.title or "").strip() or extracted.meta):
        # A file of front matter only (or of components only, ``<ThemePage />``)
        # is still found by its title and name (issue #19): one empty chunk,
        # whose FTS title column holds both.
        segments = [Segment(0, "", 1, 1, (), rel_path, char_start=0, char_end=0)]
    return body, _finish_ids(segments, rel_path)


def _unique_anchor(anchor: str | None, used: set[str]) -> str | None:
    """``anchor``, or with -2, -3 when another unit took it: two sheets whose
    names slugify alike keep unique chunk ids. Records the one returned."""
    if anchor is None:
        return None
    k = 1
    while (anchor if k == 1 else f"{anchor}-{k}") in used:
        k += 1
    anchor = anchor if k == 1 else f"{anchor}-{k}"
    used.add(anchor)
    return anchor


_WORD = re.compile(r"[^\W_]")
_ATX_OR_FENCE_LINE = re.compile(
    r"^ {0,3}(?:#{1,6}(?:[ \t][^\n]*)?|```[^\n]*|~~~[^\n]*)$", re.M
)


_WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+")
MIN_PIECE_WORDS = 3  # a section's later piece with fewer words joins the one before


def _few_words(seg: Segment) -> bool:
    """True when a chunk has no word outside its heading and fence lines, or
    is a later piece of its section with fewer than MIN_PIECE_WORDS words
    (the tail ``</template>`` of a split code block)."""
    return _plain(seg.text) or _short_piece(seg)


def _short_piece(seg: Segment) -> bool:
    """A later piece of its section with fewer than MIN_PIECE_WORDS words."""
    return seg.part > 1 and (
        sum(1 for _ in islice(_WORDS.finditer(seg.text, 0, 200), MIN_PIECE_WORDS))
        < MIN_PIECE_WORDS
    )


def _plain(text: str) -> bool:
    """True when every word of ``text`` is on a heading or fence line (or none is).

    Line by line from each word found: the first prose line answers (an
    ``_ATX_OR_FENCE_LINE.sub`` over every chunk's text cost ~1 CPU-s of a
    corpus scan, issue #22). A line-by-line property: the text of two
    adjacent chunks is plain when both are (what keeps a file of headings
    linear, issue #33).
    """
    at = 0
    while (word := _WORD.search(text, at)) is not None:
        start = text.rfind("\n", 0, word.start()) + 1
        end = text.find("\n", word.start())
        end = len(text) if end < 0 else end
        if _ATX_OR_FENCE_LINE.match(text, start) is None:
            return False
        at = end
    return True


class _Span(NamedTuple):
    """Consecutive chunks joined as one, named like ``keep``; made into one
    Segment once, at the end (joining as they come copied the text again at
    each join: quadratic on a file of headings, issue #33)."""

    first: Segment
    last: Segment
    keep: Segment
    plain: bool  # every word on a heading or fence line (``_plain``)


def _merge_wordless(segments: list[Segment], text: str, offset: int) -> list[Segment]:
    """Join each chunk with no word of its own (beyond a heading) to its neighbour.

    A fence-only, ``}``-only or table-rule-only chunk ranked high on its
    heading and showed a snippet of punctuation (issue #19). It joins the
    chunk before it in its unit (else the one after); sheets, whose lines map
    to cells, are left alone. ``text`` is the unit's text, at ``offset`` in the
    document.
    """
    if len(segments) < 2 or not any(_few_words(s) for s in segments):
        return segments
    out: list[_Span] = []
    pending: _Span | None = None  # a small chunk waiting for the next one
    for i, seg in enumerate(segments):
        if seg.line_cells is not None:
            out.append(_Span(seg, seg, seg, False))
            continue
        span = _Span(seg, seg, seg, _plain(seg.text))
        few = span.plain or _short_piece(seg)
        if pending is not None:
            # A heading whose text was split off (a big table or fence follows)
            # keeps its id: the chunk opens with the heading.
            keep = pending.keep if pending.keep.anchor == seg.anchor else seg
            plain = pending.plain and span.plain
            span = _Span(pending.first, seg, keep, plain)
            if plain:
                few = True
            else:
                joined = _made(span, text, offset)
                few = _few_words(joined)
                span = span._replace(plain=_plain(joined.text))
            pending = None
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        keep = span.keep
        if not few:
            out.append(span)
        elif keep.part == 1 and nxt is not None and nxt.anchor == keep.anchor:
            pending = span  # a section's heading joins its own text
        elif out and out[-1].keep.line_cells is None:
            out[-1] = out[-1]._replace(last=seg, plain=out[-1].plain and span.plain)
        else:
            pending = span
    if pending is not None:
        out.append(pending)
    return [_made(s, text, offset) for s in out]


def _made(span: _Span, text: str, offset: int) -> Segment:
    """The one Segment a span stands for."""
    if span.first is span.last:
        return span.keep
    return _joined(span.first, span.last, text, offset, keep=span.keep)


def _joined(a: Segment, b: Segment, text: str, offset: int, keep: Segment) -> Segment:
    """``a`` and ``b`` (consecutive, one unit) as one chunk named like ``keep``."""
    return Segment(
        keep.ordinal, text[a.char_start - offset : b.char_end - offset],
        a.start_line, b.end_line,
        keep.heading_path, keep.chunk_id, a.page, a.slide, a.sheet, None,
        a.char_start, b.char_end, keep.anchor, keep.part,
    )  # fmt: skip


def _split_spans(line: str, at: int, size: int) -> list[tuple[int, int]]:
    """Offsets of the pieces _split_long_line cuts ``line`` (at offset ``at``) into."""
    spans: list[tuple[int, int]] = []
    for piece in _split_long_line(line, size):
        spans.append((at, at + len(piece)))
        at += len(piece)
    return spans


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
