"""A document's outline and one heading's section (issue #6).

Headings come from the text a CommonMark renderer shows
(``text.headings``) for Markdown-like kinds, else from the segments'
heading paths. Split from ``navigate`` (#49).
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from docindex.errors import MisuseError
from docindex.models.limits import MAX_QUERY_CHARS, check_length
from docindex.models.navigation import (
    Chunk,
    DocumentRef,
    Outline,
    OutlineEntry,
    Section,
    Shown,
)
from docindex.search.locate import anchor_section, resolve_file, without_part
from docindex.store import Index, SegmentRow
from docindex.text.headings import markdown_headings

MARKDOWN_KINDS = ("md", "docx", "html", "odt")  # one unit whose text has ``#`` headings


def _headings(text: str) -> list[tuple[int, str, int]]:
    """(level, text, 0-based line) of Markdown headings outside code fences."""
    return [(lvl, txt, i) for i, lvl, txt in markdown_headings(text.split("\n"))]


class _Heading(NamedTuple):
    """A heading of a document: where it starts and, past Markdown, its segment."""

    level: int
    text: str
    line: int  # 1-based, within ``unit`` when there is one
    unit: str | None = None  # EPUB chapter file: its lines restart at 1
    segment: int | None = None  # index of the first segment under it


def _doc_headings(
    store: Index, doc: DocumentRef, segments: list[SegmentRow]
) -> list[_Heading]:
    """Headings of ``doc``: parsed from its Markdown body, else its segments'.

    Multi-unit documents (EPUB chapters) keep each unit's own lines, so the
    body cannot be read as one Markdown text; their segments carry the heading
    path the extractor saw, and a heading starts where a path first names it.
    """
    if doc.kind in MARKDOWN_KINDS:
        return [
            _Heading(lvl, txt, i + 1) for lvl, txt, i in _headings(store.body(doc.id))
        ]
    heads: list[_Heading] = []
    previous: tuple[str, ...] = ()
    for index, seg in enumerate(segments):
        path = seg.heading[:6]
        same = 0
        while same < min(len(path), len(previous)) and path[same] == previous[same]:
            same += 1
        heads.extend(
            _Heading(level + 1, path[level], seg.start_line, seg.sheet, index)
            for level in range(same, len(path))
        )
        previous = path
    return heads


def outline(
    store: Index, roots: Sequence[str], file: str, *, depth: int = 6,
    cwd: Path | None = None,
) -> Outline:  # fmt: skip
    """Title and headings (``depth`` levels from its top one) of a document.

    Args:
        store: the index.
        roots: the configured roots.
        file: a path relative to a root or absolute inside one.
        depth: heading levels to include (1-6), counted from the shallowest
            level the document has (1: its top-level headings, ``##`` or not).
        cwd: also resolve ``file`` relative to this directory.

    Returns:
        The document's Outline; PDF, PPTX and XLSX files have no headings.

    Raises:
        OutsideRootsError: ``file`` escapes the roots.
        DocindexError: the file is not indexed.
    """
    doc = resolve_file(store, roots, file, cwd=cwd)
    segments = store.segments_of(doc.id)
    heads = _doc_headings(store, doc, segments)
    # --depth counts from the shallowest level the file has: React's pages keep
    # their title in front matter and start at "##" (issue #37).
    top = min((h.level for h in heads), default=1)
    paths = _heading_paths(heads)
    entries = []
    for h, path in zip(heads, paths, strict=True):
        if h.level - top >= depth:
            continue
        opening = _heading_segment(segments, h)
        chunk_id = opening.chunk_id if opening else ""
        entries.append(OutlineEntry(
            h.level, h.text, h.line, chunk_id, h.unit, heading_path=path,
            anchor=_own_anchor(opening, len(path)),
        ))  # fmt: skip
    return Outline(doc.path, doc.rel_path, doc.title, entries)


def _heading_segment(segments: list[SegmentRow], head: _Heading) -> SegmentRow | None:
    """The first segment under ``head`` (a bare heading opens its child's)."""
    if not segments:
        return None
    if head.segment is not None:
        return segments[head.segment]
    return next((s for s in segments if s.end_line >= head.line), segments[-1])


def _own_anchor(opening: SegmentRow | None, depth: int) -> str:
    """The heading's own chunk-id form: its first chunk's id, cut to its depth.

    A heading followed directly by a subheading has no chunk of its own; its
    first chunk is its child's (``#reference/useeffect``), but ``show``
    and Markdown links name it ``#reference`` (issue #37).
    """
    if opening is None:
        return ""
    file, _, anchor = opening.chunk_id.partition("#")
    extra = len(opening.heading) - depth
    if not anchor or extra <= 0:
        return opening.chunk_id
    parts = without_part(anchor).split("/")
    if len(parts) <= extra:
        return opening.chunk_id
    return f"{file}#{'/'.join(parts[:-extra])}"


def section(
    store: Index, roots: Sequence[str], file: str, heading: str, *,
    include_subsections: bool = True, cwd: Path | None = None,
) -> Section:  # fmt: skip
    """The section under ``heading`` (case-insensitive; a text or a heading path).

    An exact heading text wins; otherwise a heading containing ``heading``.
    The section ends before the next heading of the same or a higher level
    (with subsections) or before the next heading of any level (without).

    Raises:
        OutsideRootsError: ``file`` escapes the roots.
        DocindexError: the file is not indexed or has no such heading.
    """
    check_length("section", heading, MAX_QUERY_CHARS)
    doc = resolve_file(store, roots, file, cwd=cwd)
    segments = store.segments_of(doc.id)
    heads = _doc_headings(store, doc, segments)
    if heading.startswith("#") and len(heading) > 1:
        index = _heading_by_anchor(heads, segments, heading, doc.rel_path)
    else:
        index = _find_heading(heads, heading, doc.rel_path)
    head, path = heads[index], _heading_paths(heads)[index]
    after = next(
        (
            h
            for h in heads[index + 1 :]
            if not include_subsections or h.level <= head.level
        ),
        None,
    )
    if head.segment is not None:
        body = store.body(doc.id)
        found = _segment_section(doc, segments, head, after, include_subsections, body)
        return dataclasses.replace(found, heading_path=path)
    body_lines = store.body(doc.id).split("\n")
    start, end = head.line, len(body_lines) if after is None else after.line - 1
    while end > start and not body_lines[end - 1].strip():
        end -= 1
    chunk_ids = [
        s.chunk_id for s in segments if s.start_line <= end and s.end_line >= start
    ]
    return Section(
        path=doc.path, rel_path=doc.rel_path, heading=head.text, level=head.level,
        start_line=start, end_line=end, include_subsections=include_subsections,
        chunk_ids=chunk_ids, text="\n".join(body_lines[start - 1 : end]),
        heading_path=path,
    )  # fmt: skip


def _heading_by_anchor(
    heads: list[_Heading], segments: list[SegmentRow], heading: str, rel_path: str
) -> int:
    """Index of the heading ``#anchor`` names (``#use-cors``, #45), else MisuseError."""
    found = anchor_section(segments, heading[1:])
    if found is not None:
        row = segments[found[0]]
        want = list(row.heading[: found[1]])
        paths = _heading_paths(heads)
        at = [
            i
            for i, h in enumerate(heads)
            if paths[i] == want and h.line <= row.end_line
        ]
        if at:
            return at[-1]
    raise MisuseError(
        f"no heading {heading!r} in {rel_path}; see its headings and ids with "
        f"`docindex outline {shlex.quote(rel_path)}`"
    )


def _heading_paths(heads: list[_Heading]) -> list[list[str]]:
    """Each heading's path: its ancestors' texts, then its own."""
    paths: list[list[str]] = []
    stack: list[_Heading] = []
    for head in heads:
        while stack and stack[-1].level >= head.level:
            stack.pop()
        stack.append(head)
        paths.append([h.text for h in stack])
    return paths


def _find_heading(heads: list[_Heading], heading: str, rel_path: str) -> int:
    """Index of the one heading ``heading`` names, else a MisuseError.

    ``heading`` is a heading's text (exact, else contained; case-insensitive) or
    a heading path ``A > B > C`` whose parts name the heading and some of its
    ancestors in order. Two or more matches are an error that lists their
    paths, so a duplicate name never silently picks the first (issue #37).
    """
    paths = _heading_paths(heads)
    wanted = heading.strip().casefold()
    parts = [p.strip().casefold() for p in heading.split(" > ")]

    def by_path(path: list[str]) -> bool:
        if path[-1].casefold() != parts[-1]:
            return False
        rest = iter(p.casefold() for p in path[:-1])
        return all(part in rest for part in parts[:-1])

    found = [i for i, h in enumerate(heads) if h.text.casefold() == wanted]
    if not found and len(parts) > 1:
        found = [i for i, path in enumerate(paths) if by_path(path)]
    if not found:
        found = [i for i, h in enumerate(heads) if wanted in h.text.casefold()]
    if not found:
        raise MisuseError(
            f"no heading {heading!r} in {rel_path}; see its headings with "
            f"`docindex outline {shlex.quote(rel_path)}`"
        )
    if len(found) > 1:
        listed = "; ".join(
            f"line {heads[i].line}: {' > '.join(paths[i])!r}" for i in found[:5]
        )
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        raise MisuseError(
            f"{len(found)} headings match {heading!r} in {rel_path} ({listed}{more});"
            " name one by its heading path, e.g. 'Parent > Heading'"
        )
    return found[0]


def _segment_section(
    doc: DocumentRef, segments: list[SegmentRow], head: _Heading,
    after: _Heading | None, include_subsections: bool, body: str,
) -> Section:  # fmt: skip
    """A section read from whole segments (a multi-unit document)."""
    assert head.segment is not None
    stop = len(segments) if after is None or after.segment is None else after.segment
    part = segments[head.segment : max(stop, head.segment + 1)]
    return Section(
        path=doc.path, rel_path=doc.rel_path, heading=head.text, level=head.level,
        start_line=part[0].start_line, end_line=part[-1].end_line,
        include_subsections=include_subsections,
        chunk_ids=[s.chunk_id for s in part],
        text="\n\n".join(body[s.char_start : s.char_end].strip() for s in part),
        unit=head.unit,
    )  # fmt: skip


def readable(found: Section | Shown) -> Section | Shown:
    """``found`` with its text as a reader sees it (``snippet.reading_text``):
    what MCP tools return, where an agent reads, not a script (issue #37)."""
    from docindex.search.snippet import reading_text

    if isinstance(found, Section):
        return dataclasses.replace(found, text=reading_text(found.text))

    def clean(chunk: Chunk) -> Chunk:
        return dataclasses.replace(chunk, text=reading_text(chunk.text))

    return dataclasses.replace(
        found, chunk=clean(found.chunk), before=[clean(c) for c in found.before],
        after=[clean(c) for c in found.after],
    )  # fmt: skip
