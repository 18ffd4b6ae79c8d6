"""Snippets: place the window on the densest query matches and highlight them.

Highlights are word-bounded for latin text (a query ``fetch`` highlights the
whole word ``fetched``, never ``**fetch**ed``) and character-exact for CJK
n-grams. Pure functions over a segment's text.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

from docindex.text.prose import CODE_SPAN as _CODE_SPAN
from docindex.text.prose import display_lines as _display_lines
from docindex.text.prose import drop_anchors
from docindex.text.prose import open_fence as open_fence
from docindex.text.prose import prose_lines as prose_lines
from docindex.text.stem import stem
from docindex.text.tokenize import is_cjk, normalize, token_matches

if TYPE_CHECKING:
    from docindex.config import Config

MARK_OPEN = "**"
MARK_CLOSE = "**"


def match_spans(text: str, qset: set[str], cfg: Config) -> list[tuple[int, int, str]]:
    """(start, end, term) of every query-term occurrence in ``text``, in order."""
    spans: list[tuple[int, int, str]] = []
    max_n = cfg.cjk_ngram
    for match in token_matches(text):
        start, end = match.span()
        raw = match.group(0)
        # NFKC leaves ASCII alone and casefold is lower() there: skip the slow path.
        word = raw.lower() if raw.isascii() else normalize(raw)
        if match.group(1) is not None:
            covered_until = start
            for i in range(len(word)):
                for n in range(min(max_n, len(word) - i), 0, -1):
                    gram = word[i : i + n]
                    if gram in qset:
                        s, e = start + i, start + i + n
                        if s < covered_until:
                            s = covered_until
                        if e > s:
                            spans.append((s, e, gram))
                            covered_until = e
                        break
            continue
        term = stem(word) if cfg.stem else word
        if term in qset or word in qset:
            spans.append((start, end, term))
    return spans


def best_line(
    text: str,
    qset: set[str],
    cfg: Config,
    spans: list[tuple[int, int, str]] | None = None,
) -> int:
    """0-based line inside ``text`` with the most distinct query terms (earliest wins).

    ``spans`` may pass ``match_spans(text, qset, cfg)`` already computed.
    """
    if spans is None:
        spans = match_spans(text, qset, cfg)
    if not spans:
        return _first_nonblank(text)
    line_starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            line_starts.append(i + 1)
    per_line: dict[int, set[str]] = {}
    for start, _, term in spans:
        per_line.setdefault(bisect.bisect_right(line_starts, start) - 1, set()).add(
            term
        )
    return min(per_line, key=lambda ln: (-len(per_line[ln]), ln))


def _first_nonblank(text: str) -> int:
    for i, line in enumerate(text.split("\n")):
        if line.strip():
            return i
    return 0


_PROSE = re.compile(r"^[ \t]*(?:[-*>]\s+)?[^\W\d_][^\n{};=<>]{20,}$", re.M)


def _first_prose(text: str) -> int:
    """Offset of the first line that reads as prose (starts with a letter,
    20+ characters, no code punctuation), else 0: a snippet with no match
    shows words, not ``</> ); }`` (issue #19)."""
    found = _PROSE.search(text)
    return found.start() if found else 0


def display_text(text: str) -> str:
    """A chunk as a reader sees it, for snippets (issue #19).

    Fence lines, table rules, heading marks and explicit anchors
    (``{#id}``, ``{/*id*/}``) go; backslash escapes are resolved outside
    inline code. Code inside fences stays (it may be what matched).
    """
    return "\n".join(line for line, _ in _display_lines(text))


_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}[ \t].*$", re.M)
# The last line of a setext heading that ends in "}" (an attribute list, #45)
_SETEXT_LINE = re.compile(r"^[^\n]*\}[ \t]*(?=\n {0,3}(?:=+|-+)[ \t]*$)", re.M)


def reading_text(text: str) -> str:
    """A chunk or section as ``show`` and ``section`` print it (issue #37).

    The document's own text, line for line (code fences and all), without
    the explicit anchors of its headings (``{/*id*/}``, ``{#id}``, ``{ #id }``) and the
    trailing blanks that MDX tags leave where the index blanked them.
    """
    if "{" in text:
        text = _HEADING_LINE.sub(lambda m: drop_anchors(m.group()), text)
        text = _SETEXT_LINE.sub(lambda m: drop_anchors(m.group()), text)
    return _TRAILING.sub("", text)


_TRAILING = re.compile(r"[ \t]+$", re.M)


def _code_offsets(lines: list[tuple[str, bool]]) -> list[tuple[int, int]]:
    """(start, end) character ranges of fenced-code lines in the joined text."""
    ranges: list[tuple[int, int]] = []
    pos = 0
    for line, code in lines:
        if code:
            ranges.append((pos, pos + len(line)))
        pos += len(line) + 1
    return ranges


def _in_code(ranges: list[tuple[int, int]], offset: int) -> bool:
    i = bisect.bisect_right(ranges, (offset + 1, -1)) - 1
    return i >= 0 and ranges[i][0] <= offset <= ranges[i][1]


def _after_code(ranges: list[tuple[int, int]], offset: int) -> int:
    """Start of the line after the last code range that ends before ``offset``."""
    i = bisect.bisect_right(ranges, (offset + 1, -1)) - 1
    return ranges[i][1] + 1 if i >= 0 and ranges[i][1] < offset else 0


_BOLD = re.compile(r"\*\*(?=[^\s*])(.+?)(?<=[^\s*])\*\*")
# An inline link or image, or a full reference link: shown as its text.
_LINK = re.compile(
    r"!?\[([^\[\]\n]*)\](?:\((?:[^()\s]|\([^()\s]*\))*"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'))?\)|\[[^\[\]\n]+\])"
)
# An inline HTML/JSX tag in prose (group 1 never matches: the tag goes).
_INLINE_TAG = re.compile(r"</?[A-Za-z][\w.:-]*(?:\s[^<>]*)?/?>()")


def _as_rendered(line: str) -> str:
    """A prose line as rendered, outside inline code: links and images as their
    text (``[Get APISIX](./README.md)`` reads "Get APISIX"), inline HTML tags
    gone (``<sup class="vt-badge ts" />``), bold as its text (issue #37); a
    lone ``**`` (Python's power) is text."""
    if "[" in line or "<" in line:
        spans = [m.span() for m in _CODE_SPAN.finditer(line)] if "`" in line else []

        def text(m: re.Match[str]) -> str:
            inside = any(a < m.start() < b for a, b in spans)
            return m.group() if inside else (m.group(1) or "")

        line = _INLINE_TAG.sub(text, _LINK.sub(text, line))
    return _BOLD.sub(r"\1", line)


# A fence marker indented past CommonMark's 3 spaces (MkDocs tabs and
# admonitions nest fences), and an MkDocs include (``--8<-- "file"``): the
# renderer shows neither. The include is replaced by the file even inside a
# fence (OI-wiki's code listings are such fences).
_INCLUDE = re.compile(r"[ \t]*;?-{1,2}8<-{1,2}.*")
_NESTED_FENCE = re.compile(r"[ \t]*(?:`{3,}|~{3,})[\w+.-]*[ \t]*|" + _INCLUDE.pattern)


_OPEN, _CLOSE = "\x02", "\x03"  # private marks while the window is built
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def make_snippet(
    text: str, qset: set[str], chars: int, highlight: bool, cfg: Config,
    spans: list[tuple[int, int, str]] | None = None, fence: str = "",
) -> str:  # fmt: skip
    """``snippet_with_highlights`` as one string with ``**`` around each match."""
    plain, marks = snippet_with_highlights(
        text, qset, chars, highlight, cfg, spans, fence
    )
    out, pos = [], 0
    for start, end in marks:
        out += [plain[pos:start], MARK_OPEN, plain[start:end], MARK_CLOSE]
        pos = end
    return "".join([*out, plain[pos:]])


def _unmark(marked: str) -> tuple[str, list[tuple[int, int]]]:
    """Text without the private marks, and the [start, end) of each marked run."""
    out: list[str] = []
    marks: list[tuple[int, int]] = []
    length, start = 0, -1
    for piece in re.split(f"([{_OPEN}{_CLOSE}])", marked):
        if piece == _OPEN:
            start = length
        elif piece == _CLOSE:
            if start >= 0 and length > start:
                marks.append((start, length))
            start = -1
        else:
            out.append(piece)
            length += len(piece)
    return "".join(out), marks


def snippet_with_highlights(
    text: str, qset: set[str], chars: int, highlight: bool, cfg: Config,
    spans: list[tuple[int, int, str]] | None = None, fence: str = "",
) -> tuple[str, list[tuple[int, int]]]:  # fmt: skip
    """A one-line window of about ``chars`` characters around the densest matches.

    Returns the snippet as plain text (the document's own ``**`` kept) and the
    ``[start, end)`` character offsets of its highlighted matches (none
    without ``highlight``): offsets cannot collide with the text, as ``**``
    markers did (issue #38).

    ``spans`` may pass ``match_spans(text, qset, cfg)`` already computed;
    ``fence`` is the code fence open where ``text`` starts (``open_fence``).
    The window is placed on ``display_text(text)``: no fence lines, heading
    marks or anchors (issue #19).
    """
    chars = max(20, chars)
    lines = _display_lines(text, fence)
    lines = [
        (line if code else _as_rendered(line), code)
        for line, code in lines
        if not (_INCLUDE if code else _NESTED_FENCE).fullmatch(line)
    ]
    shown = "\n".join(line for line, _ in lines)
    if shown != text:
        text, spans = shown, None
    if spans is None:
        spans = match_spans(text, qset, cfg)
    floor = 0
    if not spans:
        start = _first_prose(text)
    if spans:
        # A window anchored on a match in prose beats one in fenced code,
        # then more distinct terms, then more matches (issue #19: snippets
        # from the best-matching prose lines).
        code_at = _code_offsets(lines)
        best: tuple[int, int, int, int, int] = (-1, -1, -1, 0, 0)
        for i, (s, _, _) in enumerate(spans):
            prose = 0 if _in_code(code_at, s) else 1
            # A window on prose does not reach back into the code before it.
            low = _after_code(code_at, s) if prose else 0
            window_start = max(low, s - chars // 4)
            inside = [sp for sp in spans[i:] if sp[1] <= window_start + chars]
            score = (prose, len({t for _, _, t in inside}), len(inside))
            if score > best[:3]:
                best = (*score, window_start, low)
        start, floor = best[3], best[4]
    end = min(len(text), start + chars)
    if end - start < chars:
        start = max(floor, end - chars)
    # Do not cut a latin word in half at either edge.
    while start > 0 and text[start - 1].isalnum() and not is_cjk(text[start - 1]):
        start -= 1
    while end < len(text) and text[end].isalnum() and not is_cjk(text[end]):
        end += 1
    pieces: list[str] = []
    pos = start
    if highlight:
        for s, e, _ in spans:
            if s < start or e > end or s < pos:
                continue
            pieces.append(_CONTROL.sub("", text[pos:s]))
            pieces.append(f"{_OPEN}{_CONTROL.sub('', text[s:e])}{_CLOSE}")
            pos = e
    pieces.append(_CONTROL.sub("", text[pos:end]))
    snippet = "".join(pieces)
    snippet = " ".join(snippet.split())
    # Adjacent matches read as one highlight.
    snippet = snippet.replace(f"{_CLOSE}{_OPEN}", "")
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(text) else ""
    return _unmark(f"{prefix}{snippet}{suffix}")
