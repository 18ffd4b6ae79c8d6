"""Prose in Markdown text: fenced code, display lines, words (issues #19, #37).

What a reader sees of a chunk (``display_lines``), whether a chunk starts
inside a fenced block (``open_fence``) and how many words of prose it holds
(``prose_words``). Shared by the snippets (``search.snippet``), the ranking
(``search.quality``) and the scan, which stores each segment's prose count
(``segment_prose``) so a query never decompresses a document to learn it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from docindex.text.mdsyntax import explicit_anchor

# Fewer words of prose: a fragment (code, config, markup). A segment's stored
# count is capped here: all a query needs is whether it reaches it.
MIN_PROSE_WORDS = 8

_TABLE_RULE = re.compile(
    r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$\n?", re.M
)
_HEADING_MARKS = re.compile(r"^ {0,3}#{1,6}[ \t]+", re.M)
ANCHOR = re.compile(r"[ \t]*(?:\{/\*\s*[\w-]+\s*\*/\}|\{#[\w-]+[^}\n]*\})")


def drop_anchors(line: str) -> str:
    """``line`` without explicit anchors: ``{#id}``, ``{/*id*/}`` and a closing
    attribute list as MkDocs reads one (``## CORS { #cors .wide }``, #45)."""
    line = ANCHOR.sub("", line)
    if line.endswith("}"):
        line = line[: explicit_anchor(line)[0]]
    return line


_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
CODE_SPAN = re.compile(r"(`+)[^`\n]*?\1")  # inline code on one line


_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _fence_step(line: str, fence: str) -> tuple[str, bool]:
    """The fence open after ``line`` (``""`` for none) and whether it is a fence line.

    As CommonMark says: the closing fence uses the same character, at least
    as many times, and carries no info string; a backtick fence's info string
    holds no backtick.
    """
    if "`" not in line[:4] and "~" not in line[:4]:
        return fence, False  # (the regex's answer, without running it: #46)
    opened = _FENCE_OPEN.match(line)
    if not opened:
        return fence, False
    mark = opened.group(1)
    rest = line[opened.end() :]
    if fence:
        if mark[0] == fence[0] and len(mark) >= len(fence) and not rest.strip():
            return "", True
        return fence, False
    if mark[0] == "`" and "`" in rest:
        return "", False  # inline code, not a fence
    return mark, True


def open_fence(text: str, fence: str = "") -> str:
    """The code fence still open at the end of ``text`` (``""`` when none).

    A chunk can start inside a long fenced block; the text before it says so.
    ``fence`` is the fence open where ``text`` starts. Only lines that may
    be fences are stepped through (issue #37 reads many chunks per query).
    """
    for line in _FENCE_LINE.findall(text):
        fence, _ = _fence_step(line, fence)
    return fence


_FENCE_LINE = re.compile(r"^ {0,3}(?:`{3,}|~{3,}).*$", re.M)


def display_lines(text: str, fence: str = "") -> list[tuple[str, bool]]:
    """``display_text`` line by line, each with whether it is fenced code.

    ``fence`` is the fence open where ``text`` starts (``open_fence``).
    """
    if not fence and not any(c in text for c in "`~|#{\\"):
        return [(line, False) for line in text.split("\n")]
    out: list[tuple[str, bool]] = []
    for line in text.split("\n"):
        inside = bool(fence)
        fence, marker = _fence_step(line, fence)
        if marker:
            continue
        if inside:
            out.append((line, True))
            continue
        # Each pattern only where its characters are (issue #46: a file of
        # 40,000 short sections ran four regexes on every line).
        if "---" in line and _TABLE_RULE.fullmatch(line):
            continue
        if "#" in line[:10]:
            line = _HEADING_MARKS.sub("", line)
        if "{" in line or line.endswith("}"):
            line = drop_anchors(line)
        if "\\" in line:
            pieces, pos = [], 0
            for code in CODE_SPAN.finditer(line):
                pieces += [_ESCAPE.sub(r"\1", line[pos : code.start()]), code[0]]
                pos = code.end()
            line = "".join([*pieces, _ESCAPE.sub(r"\1", line[pos:])])
        out.append((line, False))
    return out


def prose_lines(text: str, fence: str = "") -> list[str]:
    """The lines of ``text`` outside fenced code, as ``display_text`` shows them."""
    return [line for line, code in display_lines(text, fence) if not code]


_TAG = re.compile(r"</?[A-Za-z][^<>]*>|<>|</>|\{[^{}\n]*\}|(`+)[^`\n]*?\1|\]\([^)]*\)")
_WORD = re.compile(r"[^\W\d_]{2,}")
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def prose_words(text: str, fence: str = "", enough: float = math.inf) -> int:
    """Words of prose in a chunk: outside fenced code, tags, ``{...}``
    expressions and inline code; a CJK character counts half a word.
    Counting stops once ``enough`` words are found."""
    words = 0.0
    for line in prose_lines(text, fence):
        if "<" in line or "{" in line or "`" in line or "](" in line:
            line = _TAG.sub(" ", line)
        if line.isascii():
            words += len(_WORD.findall(line))
        else:
            words += len(_WORD.findall(_CJK_CHAR.sub(" ", line)))
            words += len(_CJK_CHAR.findall(line)) / 2
        if words >= enough:
            break
    return int(words)


def segment_prose(body: str, spans: Iterable[tuple[int, int]]) -> list[int]:
    """Each span's words of prose in ``body``, capped at MIN_PROSE_WORDS.

    ``spans`` are (char_start, char_end) of a document's segments; whether
    one starts inside a fenced block is read from the text before it, in
    one pass when the spans come in order.
    """
    out: list[int] = []
    pos, fence = 0, ""
    for start, end in spans:
        if start < pos:  # out of order: read again from the top
            pos, fence = 0, ""
        fence = open_fence(body[pos:start], fence)
        pos = start
        words = prose_words(body[start:end], fence, MIN_PROSE_WORDS)
        out.append(min(words, MIN_PROSE_WORDS))
    return out
