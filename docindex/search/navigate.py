"""Structure-aware navigation over an open index (issue #6).

Outline, show (a chunk with its neighbours), section, list and related: what
an agent needs after a search hit. Every file or chunk argument is a path
relative to a root, or absolute inside one; anything that resolves outside
the roots (``..``, absolute paths elsewhere, symlinks pointing out) raises
:class:`OutsideRootsError` before the index is asked.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from docindex.errors import (
    BadInputError,
    DocindexError,
    MisuseError,
    OutsideRootsError,
)
from docindex.models.limits import (
    MAX_CHUNK_ID_CHARS,
    MAX_GLOB_CHARS,
    MAX_LIST,
    MAX_OFFSET,
    MAX_QUERY_CHARS,
    check_length,
    check_path,
    check_range,
)
from docindex.models.navigation import (
    Chunk,
    DocumentInfo,
    DocumentList,
    DocumentRef,
    Outline,
    OutlineEntry,
    Section,
    Shown,
)
from docindex.store import DocFilter, Index, SegmentRow, StoredDocument
from docindex.text.headings import markdown_headings

MARKDOWN_KINDS = ("md", "docx", "html", "odt")  # one unit whose text has ``#`` headings


# -- resolving arguments inside the roots ---------------------------------------


def join_path(root: str, rel_path: str) -> str:
    """The absolute path of a root's ``rel_path`` (stored with ``/``)."""
    return str(Path(root, *rel_path.split("/")))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _candidates(
    roots: Sequence[str], arg: str, cwd: Path | None
) -> list[tuple[str, str]]:
    """(root, rel_path) pairs ``arg`` may name, each checked to stay in its root.

    Raises:
        OutsideRootsError: no interpretation of ``arg`` stays inside a root,
            lexically and after resolving symlinks.
    """
    check_path("path", arg)
    root_paths = [Path(r) for r in roots]
    given = Path(os.path.expanduser(arg))
    if given.is_absolute():
        bases = [given]
    else:
        bases = [r / given for r in root_paths]
        if cwd is not None:
            bases.append(cwd / given)
    out: list[tuple[str, str]] = []
    for base in bases:
        lexical = Path(os.path.normpath(base))
        try:
            real = lexical.resolve()
        except OSError as exc:  # e.g. ENAMETOOLONG, ELOOP
            raise DocindexError(f"cannot resolve {arg}: {exc.strerror}") from None
        for root in root_paths:
            if _inside(lexical, root) and any(_inside(real, r) for r in root_paths):
                pair = (str(root), lexical.relative_to(root).as_posix())
                if pair not in out:
                    out.append(pair)
                break
    if not out:
        raise OutsideRootsError(
            f"{arg} is outside the index's roots ({', '.join(roots) or 'none'})"
        )
    return out


def resolve_inside(roots: Sequence[str], arg: str, cwd: Path | None = None) -> Path:
    """Absolute path of ``arg`` (relative to a root, or absolute inside one).

    Raises:
        OutsideRootsError: ``arg`` escapes every root.
    """
    root, rel = _candidates(roots, arg, cwd)[0]
    return Path(join_path(root, rel)) if rel != "." else Path(root)


_GLOB_CHARS = frozenset("*?[")


class PathScope(NamedTuple):
    """Where ``--path`` points: one root (or every root) and a root-relative pattern.

    ``pattern`` is a file, a folder prefix or a glob (``store._sql.path_clause``);
    ``""`` is the whole root.
    """

    root: str | None
    pattern: str


def check_glob(pattern: str) -> None:
    """Refuse a glob no engine can match by: a character range that runs
    backwards (``[z-a]``). SQLite's GLOB would match nothing and PostgreSQL's
    regex fail; both engines answer with this one line instead (issue #44).

    Raises:
        BadInputError: naming the range.
    """
    from docindex.text.globs import backwards_range, bracket_sets

    for found in bracket_sets(pattern):
        bad = backwards_range(found.body)
        if bad:
            raise BadInputError(
                f"path: the glob {pattern!r} holds the range {bad}, which runs "
                f"backwards; write [{bad[2]}-{bad[0]}]"
            )


def path_scope(roots: Sequence[str], arg: str, cwd: Path | None = None) -> PathScope:
    """The one rule for a path a user or an agent types (issue #38).

    Used by ``query --path``, ``list --path`` and the MCP tools. An absolute
    path (a hit's ``path``) must lie in a root. A relative one is taken from
    ``cwd`` when ``cwd`` is inside a root, when it starts with ``.``/``..``,
    or when it names something that exists there under a root; otherwise it
    is relative to every root (the form hits print as ``rel_path``). Globs (``*``, ``?``, ``[``) follow the
    same rule for the part before their first wildcard.

    Raises:
        OutsideRootsError: the path lies outside every root.
    """
    check_length("path", arg, MAX_GLOB_CHARS)
    if "\x00" in arg:  # no file name holds one; the OS refuses to look it up
        raise BadInputError("path: contains a NUL character")
    check_glob(arg)
    text = os.path.expanduser(arg)
    root_paths = [Path(r) for r in roots]
    cut = min((text.index(c) for c in _GLOB_CHARS if c in text), default=len(text))
    head, tail = text[:cut], text[cut:]

    def place(base: Path) -> PathScope | None:
        """``text`` taken from ``base``: its root and pattern, or None if outside."""
        lexical = Path(os.path.normpath(base / head)) if head else base
        sep = "/" if tail and (not head or head.endswith("/")) else ""
        for candidate in (lexical, _resolved(lexical)):
            for root in root_paths:
                if _inside(candidate, root):
                    rel = candidate.relative_to(root).as_posix()
                    rel = "" if rel == "." else rel
                    return PathScope(str(root), f"{rel}{sep if rel else ''}{tail}")
        return None

    outside = OutsideRootsError(
        f"{arg} is outside the index's roots ({', '.join(roots) or 'none'}); "
        "give a path inside one: absolute, relative to a root, or to the "
        "current folder"
    )
    if Path(head).is_absolute():
        found = place(Path("/"))
        if found is None:
            raise outside
        return found
    if cwd is not None:
        here = _resolved(cwd)
        in_root = any(_inside(here, r) for r in root_paths)
        # `.`, `./x`, `../x` mean the current folder, as in a shell.
        dotted = bool(head) and Path(head).parts[:1] in ((".",), ("..",))
        dotted = dotted or text in (".", "..")
        if in_root or dotted or (head and _lexists(os.path.normpath(cwd / head))):
            found = place(cwd)
            if found is not None:
                return found
            if in_root or dotted:
                raise outside
    # Relative to every root, as hits print ``rel_path``.
    placed = [place(r) for r in root_paths]
    if ".." in Path(head).parts and (not placed or None in placed):
        raise outside
    pattern = placed[0].pattern if placed and placed[0] is not None else text
    return PathScope(None, pattern)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, ValueError):  # ENAMETOOLONG, ELOOP, a lone surrogate: as given
        return path


def _lexists(path: str) -> bool:
    try:
        return os.path.lexists(path)
    except ValueError:  # a lone surrogate cannot be a file name here
        return False


def _root_ids(store: Index, roots: Sequence[str]) -> dict[str, int]:
    known = {path: rid for rid, path in store.roots().items()}
    return {r: known[r] for r in roots if r in known}


def _doc_of(store: Index, doc_id: int) -> DocumentRef:
    row = store.document(doc_id)
    if row is None:  # deleted between two statements
        raise DocindexError("the document is no longer in the index")
    title = row.title or row.rel_path.rsplit("/", 1)[-1]
    return DocumentRef(doc_id, row.root, row.rel_path, title, row.kind)


def resolve_file(
    store: Index, roots: Sequence[str], arg: str, *, cwd: Path | None = None
) -> DocumentRef:
    """The indexed document ``arg`` names (relative to a root, or absolute in one).

    Args:
        store: the index.
        roots: the configured roots (absolute, resolved).
        arg: the path as given.
        cwd: also try ``arg`` relative to this directory (the CLI passes its cwd).

    Raises:
        OutsideRootsError: ``arg`` escapes every root.
        DocindexError: the file is not in the index.
    """
    ids = _root_ids(store, roots)
    for root, rel in _candidates(roots, arg, cwd):
        if root in ids:
            doc_id = store.find_document(ids[root], rel)
            if doc_id is not None:
                return _doc_of(store, doc_id)
    places = [Path(join_path(root, rel)) for root, rel in _candidates(roots, arg, cwd)]
    if not any(os.path.exists(p) for p in places):  # False for ENAMETOOLONG too
        near, total = _ending_with(store, list(ids.values()), arg)
        hint = "see what is indexed with `docindex list`"
        if near:
            shown = [shlex.quote(d.rel_path) for d in near[:3]]
            hint = "did you mean " + " or ".join(shown)
            if total > len(shown):
                more = shlex.quote("*" + arg.strip().strip("/"))
                hint += f"? ({total - len(shown)} more: `docindex list --path {more}`)"
        raise MisuseError(
            f"{arg} does not exist under the roots ({', '.join(roots)}); {hint}"
        )
    raise MisuseError(
        f"{arg} is not in the index; index it with `docindex scan {shlex.quote(arg)}`"
    )


def _ending_with(
    store: Index, root_ids: list[int], arg: str
) -> tuple[list[StoredDocument], int]:
    """(some, how many) indexed documents have a path ending with ``arg``
    (``useState.md`` given from outside its folder): what the user meant."""
    tail = arg.strip().strip("/")
    if not tail or ".." in tail.split("/") or not root_ids:
        return [], 0
    glob = "".join(f"[{c}]" if c in "*?[" else c for c in tail)
    found: list[StoredDocument] = []
    total = 0
    for pattern in (glob, f"*/{glob}"):
        only = DocFilter(root_ids=tuple(root_ids), path_glob=pattern)
        docs, count = store.documents(only, limit=3)
        found += docs
        total += count
    return found, total


def chunk_rows(
    store: Index, roots: Sequence[str], arg: str, cwd: Path | None
) -> list[SegmentRow]:
    """Segments whose chunk id is ``arg``; its path part is checked against the roots.

    The path part may be root-relative (the stored form) or absolute inside a
    root, in which case it is rewritten to the stored form.
    """
    check_length("chunk id", arg, MAX_CHUNK_ID_CHARS)
    file_part = arg.split("#", 1)[0]
    plain = _without_part(file_part)
    if not plain:
        return []
    rest = arg[len(plain) :]  # "~2", "#anchor", "#anchor~2" or ""
    for root, rel in _candidates(roots, plain, cwd):
        rows = [r for r in store.segments_by_chunk_id(rel + rest) if r.root == root]
        if rows:
            return rows
    return []


def _without_part(file_part: str) -> str:
    """``file_part`` without a trailing ``~N`` (a long section's later part).

    By hand, not with ``re.sub(r"~\\d+$")``: that regex is quadratic on a long
    run of ``~1~1~1`` (issue #17).
    """
    head, tilde, digits = file_part.rpartition("~")
    return head if tilde and digits.isascii() and digits.isdigit() else file_part


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


# -- outline and section --------------------------------------------------------


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
    parts = _without_part(anchor).split("/")
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


# -- show -----------------------------------------------------------------------


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
        if "#" in file or _without_part(file) != file:
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
    doc = _doc_of(store, doc_id)
    lo, hi = max(0, index - max(0, context)), index + max(0, context) + 1
    chunks = [_chunk(store, s, i + 1) for i, s in enumerate(segments[lo:hi], lo)]
    mid = index - lo
    return Shown(
        path=doc.path, rel_path=doc.rel_path, title=doc.title, type=doc.kind,
        position=index + 1, total=len(segments), chunk=chunks[mid],
        before=chunks[:mid], after=chunks[mid + 1 :],
    )  # fmt: skip


def opening_of(segments: list[SegmentRow], rel_path: str, target: str) -> int | None:
    """Index of the first chunk inside the section whose anchor ``target`` names.

    A heading followed directly by a subheading has no chunk of its own (its
    id is its first child's, ``guide.md#reference/useeffect``), yet ``outline``
    and Markdown links name it ``guide.md#reference`` (issue #37). A page's
    own link names a heading by its id alone, ``cors.md#use-corsmiddleware``
    for ``## Use CORSMiddleware { #use-corsmiddleware }`` under ``# CORS``
    (MkDocs, issue #45): the section whose path ends in that id, when one does.
    """
    anchor = target.rpartition("#")[2]
    if not anchor or _without_part(anchor) != anchor:
        return None
    found = anchor_section(segments, anchor)
    return None if found is None else found[0]


def anchor_section(segments: list[SegmentRow], anchor: str) -> tuple[int, int] | None:
    """(first chunk, heading depth) of the section ``anchor`` names, or None.

    ``anchor`` is a chunk id's anchor or its start (``cors/use-cors``), else
    the end of exactly one section's anchor path (``use-cors``).
    """
    owns = [_without_part(s.chunk_id.partition("#")[2]) for s in segments]
    depth = anchor.count("/") + 1
    for i, own in enumerate(owns):
        if own == anchor or own.startswith(anchor + "/"):
            return i, depth
    key = f"/{anchor}/"
    first: dict[str, int] = {}  # the sections so named: their path, first chunk
    for i, own in enumerate(owns):
        path = f"/{own}/"
        at = path.find(key)
        if at >= 0:
            first.setdefault(path[: at + len(key)], i)
    if len(first) != 1:
        return None
    path, i = next(iter(first.items()))
    return i, path.strip("/").count("/") + 1


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


def chunk_file(chunk_id: str) -> str:
    """The file part of a chunk id (``guide.md#install~2`` -> ``guide.md``)."""
    return _without_part(chunk_id.split("#", 1)[0])


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


# -- list -----------------------------------------------------------------------


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
            only = only._replace(
                root_ids=tuple(_root_ids(store, [scope.root]).values())
            )
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


def roots_filter(
    store: Index, roots: Sequence[str], path_glob: str | None, types: Sequence[str]
) -> DocFilter:
    """The documents of ``roots`` (of ``types``, under ``path_glob``)."""
    return DocFilter(
        root_ids=tuple(_root_ids(store, roots).values()),
        kinds=tuple(types),
        path_glob=path_glob,
    )
