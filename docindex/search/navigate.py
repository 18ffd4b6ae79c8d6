"""Structure-aware navigation over an open index (issue #6).

Outline, show (a chunk with its neighbours), section, list and related: what
an agent needs after a search hit. Every file or chunk argument is a path
relative to a root, or absolute inside one; anything that resolves outside
the roots (``..``, absolute paths elsewhere, symlinks pointing out) raises
:class:`OutsideRootsError` before the index is asked (``locate``). This
module answers show and list; ``sections`` outline and section (#49).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from docindex.errors import DocindexError, MisuseError
from docindex.models.limits import (
    MAX_GLOB_CHARS,
    MAX_LIST,
    MAX_OFFSET,
    check_length,
    check_range,
)
from docindex.models.navigation import Chunk, DocumentInfo, DocumentList, Shown
from docindex.search.locate import (
    PathScope,
    anchor_section,
    check_glob,
    chunk_file,
    chunk_rows,
    doc_of,
    join_path,
    opening_of,
    path_scope,
    resolve_file,
    resolve_inside,
    root_ids,
    roots_filter,
    without_part,
)
from docindex.search.sections import outline, readable, section
from docindex.store import Index, SegmentRow

# Where each navigation call lives: outline and section in ``sections``, the
# arguments resolved inside the roots in ``locate`` (#49); named here too.
__all__ = [
    "PathScope", "anchor_section", "check_glob", "chunk_file", "chunk_rows",
    "join_path", "list_documents", "opening_of", "outline", "path_scope",
    "readable", "resolve_file", "resolve_inside", "roots_filter", "section",
    "show",
]  # fmt: skip


def _line_suffix(target: str) -> tuple[str, int | None]:
    """``("guide.md", 42)`` for ``guide.md:42``; ``(target, None)`` otherwise."""
    head, colon, digits = target.rpartition(":")
    if colon and head and digits.isascii() and digits.isdigit() and len(digits) < 19:
        return head, int(digits)
    return target, None


def _chunk(store: Index, row: SegmentRow, position: int) -> Chunk:
    text = store.body(row.doc_id)[row.char_start : row.char_end]
    return Chunk(
        chunk_id=row.chunk_id, position=position, start_line=row.start_line,
        end_line=row.end_line, heading_path=list(row.heading), text=text,
        page=row.page, slide=row.slide, sheet=row.sheet,
    )  # fmt: skip


def show(
    store: Index, roots: Sequence[str], target: str, *, context: int = 0,
    cwd: Path | None = None,
) -> Shown:  # fmt: skip
    """A chunk (by id, or ``FILE[:LINE]``) plus ``context`` chunks either side.

    Args:
        store: the index.
        roots: the configured roots.
        target: a chunk id (``guide.md#install``), a file, or ``file:LINE``.
        context: neighbouring chunks of the same file to include on each side.
        cwd: also resolve relative paths against this directory.

    Raises:
        OutsideRootsError: the path part escapes the roots.
        DocindexError: no such chunk, file or line.
    """
    rows = chunk_rows(store, roots, target, cwd)
    if rows:
        doc_id, ordinal = rows[0].doc_id, rows[0].ordinal
        segments = store.segments_of(doc_id)
        index = next(i for i, s in enumerate(segments) if s.ordinal == ordinal)
    else:
        file, line = _line_suffix(target)
        if "#" in file or without_part(file) != file:
            # A chunk id whose file is indexed but which names no chunk of it
            # (issue #20: not "the file is not indexed").
            doc = resolve_file(store, roots, chunk_file(file), cwd=cwd)
            segments = store.segments_of(doc.id)
            opening = opening_of(segments, doc.rel_path, target)
            if opening is None:
                raise MisuseError(
                    f"{doc.rel_path} has no chunk {target!r}; list its chunk ids "
                    f"with `docindex outline {doc.rel_path}`"
                )
            doc_id, index = doc.id, opening
        else:
            doc_id, segments, index = _file_line(store, roots, file, line, cwd)
    doc = doc_of(store, doc_id)
    lo, hi = max(0, index - max(0, context)), index + max(0, context) + 1
    chunks = [_chunk(store, s, i + 1) for i, s in enumerate(segments[lo:hi], lo)]
    mid = index - lo
    return Shown(
        path=doc.path, rel_path=doc.rel_path, title=doc.title, type=doc.kind,
        position=index + 1, total=len(segments), chunk=chunks[mid],
        before=chunks[:mid], after=chunks[mid + 1 :],
    )  # fmt: skip


def _file_line(
    store: Index, roots: Sequence[str], file: str, line: int | None, cwd: Path | None
) -> tuple[int, list[SegmentRow], int]:
    """(document id, its segments, the index of the one at ``line``) of FILE[:LINE]."""
    doc = resolve_file(store, roots, file, cwd=cwd)
    doc_id = doc.id
    segments = store.segments_of(doc_id)
    if not segments:
        raise DocindexError(f"{doc.rel_path} has no indexed text")
    last = max(s.end_line for s in segments)
    if line is not None and not 1 <= line <= last:
        raise MisuseError(
            f"{doc.rel_path} has lines 1-{last}, not {line}; try "
            f"`docindex show {doc.rel_path}:{last}`"
        )
    return doc_id, segments, _segment_at(segments, line)


def _segment_at(segments: list[SegmentRow], line: int | None) -> int:
    """Index of the segment holding ``line`` (else the next one, else the last)."""
    if line is None:
        return 0
    for i, seg in enumerate(segments):
        if seg.start_line <= line <= seg.end_line:
            return i
    for i, seg in enumerate(segments):
        if seg.start_line > line:
            return i
    return len(segments) - 1


def list_documents(
    store: Index, roots: Sequence[str], *, path_glob: str | None = None,
    types: Sequence[str] = (), limit: int = 50, offset: int = 0,
    cwd: Path | None = None,
) -> DocumentList:  # fmt: skip
    """Indexed documents under the roots, sorted by root and path.

    Args:
        store: the index.
        roots: the configured roots; documents of other roots are not listed.
        path_glob: a file, folder or glob, as ``path_scope`` reads it.
        types: document types to keep (``md``, ``pdf``, ...).
        limit: page size.
        offset: documents to skip.

    Raises:
        BadInputError: the glob is too long, or limit/offset out of range.
    """
    check_length("path", path_glob, MAX_GLOB_CHARS)
    check_range("limit", limit, 1, MAX_LIST)
    check_range("offset", offset, 0, MAX_OFFSET)
    only = roots_filter(store, roots, None, types)
    if path_glob:
        scope = path_scope(roots, path_glob, cwd)
        if scope.root is not None:
            only = only._replace(root_ids=tuple(root_ids(store, [scope.root]).values()))
        only = only._replace(path=scope.pattern or None)
    rows, total = store.documents(only, limit=limit, offset=offset)
    docs = [
        DocumentInfo(
            path=join_path(r.root, r.rel_path),
            rel_path=r.rel_path,
            title=r.title or r.rel_path.rsplit("/", 1)[-1],
            type=r.kind,
            size=r.size,
            segments=r.n_segments,
        )
        for r in rows
    ]
    return DocumentList(docs, total, offset + len(docs) < total)
