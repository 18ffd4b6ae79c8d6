"""Markdown headings as a CommonMark renderer sees them (issues #6, #19).

Shared by ingest (``segment`` cuts sections at them) and search (``navigate``
outlines a document with them). Positions are character offsets of line starts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate

from docindex.text.mdsyntax import heading_text

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_HEADING_MARKS = re.compile(r" {0,3}(#{1,6})[ \t]+")  # _HEADING up to its text
# A line that may be a heading or open a fence (``#``, ``` or ~~~ after at most
# 3 spaces) or is a table row (``|`` after any whitespace): group 1 is "#",
# "```" or "~~~", None for a table row. A fence opener is what
# ``^ {0,3}(`{3,}|~{3,})`` matches; ``[^\S\n]`` is the whitespace str.strip()
# removes, newline excepted.
_SPECIAL = re.compile(r"^(?: {0,3}(#|```|~~~)|[^\S\n]*\|)")
# The same after a newline: searching for a literal first character runs in C
# far faster than trying ``^`` at every position.
_SPECIAL_AFTER_NL = re.compile(r"\n(?: {0,3}(#|```|~~~)|[^\S\n]*\|)")

# (where the line starts, "#" | "```" | "~~~" | "|") of each special line, in order.
Specials = list[tuple[int, str]]


def markdown_headings(lines: list[str]) -> Iterator[tuple[int, int, str]]:
    """Yield (0-based line, level, text) of the headings a CommonMark renderer shows.

    ATX and setext headings outside fenced code; the text is as rendered
    (``mdsyntax.heading_text``: no explicit anchor, markup or escapes).
    """
    text = "\n".join(lines)
    heads = find_headings(text, special_lines(text))
    if text.count("\n") != len(lines) - 1:  # an item holding a newline
        starts = list(accumulate((len(x) + 1 for x in lines[:-1]), initial=0))
        return iter((bisect_right(starts, h.where) - 1, h.level, h.text) for h in heads)
    at = line = 0
    out: list[tuple[int, int, str]] = []
    for head in heads:
        line += text.count("\n", at, head.where)
        at = head.where
        out.append((line, head.level, head.text))
    return iter(out)


def special_lines(text: str) -> Specials:
    found = [(m.start() + 1, m[1] or "|") for m in _SPECIAL_AFTER_NL.finditer(text)]
    head = _SPECIAL.match(text)
    if head:
        found.insert(0, (0, head[1] or "|"))
    return found


def _line_reader(text: str) -> Callable[[int], str]:
    """The line starting at an offset of ``text``."""

    def line_at(pos: int) -> str:
        end = text.find("\n", pos)
        return text[pos:end] if end >= 0 else text[pos:]

    return line_at


@dataclass(slots=True)
class Heading:
    where: int  # offset of its first line
    body: int  # offset of the line after it (after a setext underline)
    level: int
    text: str  # as rendered
    anchor: str | None  # an explicit ``{#id}``, ``{ #id .class }``, ``{/*id*/}``


_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_CONTAINER = re.compile(
    r" {0,3}(?:>|[-+*](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|<[A-Za-z/!?])"
)
_INDENTED = re.compile(r" {0,3}\t| {4}")
_SETEXT = re.compile(r"\n {0,3}(=+|-+)[ \t]*(?=\n|\Z)")
# A line that cannot continue a paragraph into a setext heading: blank, or a
# block start (ATX heading, fence, quote, list item, thematic break, HTML tag).
_NOT_PARAGRAPH = re.compile(
    r"[ \t]*$| {0,3}(?:#{1,6}(?:[ \t]|$)|`{3,}[^`\n]*$|~~~|>|[-+*](?:[ \t]|$)"
    r"|\d{1,9}[.)](?:[ \t]|$)|<[A-Za-z/!?]|([-*_])[ \t]*\1[ \t]*\1[-*_ \t]*$)"
)


def find_headings(text: str, specials: Specials) -> list[Heading]:
    """The ATX and setext headings outside fenced code, in order (CommonMark).

    A fence closes at a line of its character, at least as long as the
    opener, followed by blanks only; a backtick fence's info string holds no
    backtick. A setext underline (``===`` or ``---``) makes a heading of the
    paragraph lines right above it.
    """
    line_at = _line_reader(text)
    out: list[Heading] = []
    fences: list[tuple[int, int]] = []
    fence: tuple[str, int, int] | None = None  # (character, length, start)
    for where, tag in specials:
        if tag == "|":
            continue
        if tag == "#":
            if fence is None:
                found = _heading(line_at(where))
                if found is not None:
                    end = text.find("\n", where) + 1 or len(text) + 1
                    out.append(Heading(where, end, found[0], *heading_text(found[1])))
            continue
        m = _FENCE_LINE.match(line_at(where))
        if m is None:
            continue
        if fence is None:
            if m[1][0] != "`" or "`" not in m[2]:
                fence = (m[1][0], len(m[1]), where)
        elif m[1][0] == fence[0] and len(m[1]) >= fence[1] and not m[2].strip():
            fences.append((fence[2], where))
            fence = None
    if fence is not None:
        fences.append((fence[2], len(text) + 1))
    if "\n=" in text or "\n-" in text or "\n " in text:
        setext = _setext_headings(text, fences, {h.where for h in out})
        if setext:
            out = sorted([*out, *setext], key=lambda h: h.where)
    return out


def _lazy_parent(line: str) -> bool:
    """True when ``line`` opens a quote, list item or HTML block whose
    paragraph (or HTML) the next lines would continue lazily."""
    while True:
        found = _CONTAINER.match(line)
        if found is None:
            return False
        if found[0].lstrip().startswith("<"):
            return True
        line = line[found.end() :]
        if not line.strip() or _NOT_PARAGRAPH.match(line):
            return False
        if _CONTAINER.match(line) is None:
            return True


def _setext_headings(
    text: str, fences: list[tuple[int, int]], atx: set[int]
) -> list[Heading]:
    out: list[Heading] = []
    floor = 0  # a paragraph starts after the previous setext heading
    for m in _SETEXT.finditer(text):
        under = m.start() + 1
        if any(a <= under <= b for a, b in fences):
            continue
        # Walk up over the paragraph's lines (stop at a blank or block start).
        first = -1
        pos = under
        while pos > floor:
            start = text.rfind("\n", 0, pos - 1) + 1
            if (
                start < floor
                or start in atx
                or _NOT_PARAGRAPH.match(text, start, pos - 1)
            ):
                if start >= floor and _lazy_parent(text[start : pos - 1]):
                    first = -1  # a lazy continuation of a quote, list or HTML
                break
            if any(a <= start <= b for a, b in fences):
                break
            first = start
            pos = start
        # A paragraph never starts indented by 4 (that is indented code).
        while 0 <= first < under and _INDENTED.match(text, first):
            first = text.find("\n", first) + 1
        if first < 0 or first >= under or any(h.where <= first < h.body for h in out):
            continue
        body = text.find("\n", under) + 1 or len(text) + 1
        raw = " ".join(text[first : under - 1].split())
        level = 1 if m[1][0] == "=" else 2
        out.append(Heading(first, body, level, *heading_text(raw)))
        floor = body
    return out


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line, as _HEADING finds them.

    Without the regex's lazy group: the text is what follows the marks and
    blanks, less a closing run of blanks, #s and blanks.
    """
    if "\n" in line:  # the regex's ``.`` and ``$`` treat a newline specially
        match = _HEADING.match(line)
        return (len(match[1]), match[2].strip()) if match else None
    marks = _HEADING_MARKS.match(line)
    if marks is None:
        return None
    text = line[marks.end() :].rstrip(" \t").rstrip("#").rstrip(" \t")
    return len(marks[1]), text.strip()
