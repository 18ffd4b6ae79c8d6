"""The ``query`` command: one query or a batch, signed paging cursors, and the
lines around each hit (``query --context``, ``--vimgrep``; issue #49 split
``commands``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.api import workspace
from docindex.api.params import DbArg
from docindex.errors import MisuseError
from docindex.models import Hit, QueryOptions, QueryResult

if TYPE_CHECKING:
    from docindex.store import Store


def _scoped(
    ws: workspace.Workspace, opts: QueryOptions, cwd: Path | None
) -> QueryOptions:
    """``path_glob`` and ``roots`` as the index stores them (issue #38).

    ``--path`` follows ``navigate.path_scope`` (absolute, cwd-relative or
    root-relative; outside every root is an error); ``--root`` must name
    roots of the index.
    """
    from dataclasses import replace

    roots = list(ws.config.roots)
    chosen: list[str] = []
    for given in opts.roots:
        full = workspace.canonical(given)
        if full not in roots:
            raise MisuseError(
                f"--root {given} is not a root of the index ({', '.join(roots)}); "
                "limit to a folder inside one with --path"
            )
        chosen.append(full)
    path = opts.path_glob
    if path:
        from docindex.search.navigate import path_scope

        scope = path_scope(chosen or roots, path, cwd)
        path = scope.pattern or None
        if scope.root is not None:
            chosen = [scope.root]
    return replace(opts, path_glob=path, roots=tuple(chosen))


def _with_cursor(
    opts: QueryOptions, cursor: str | None, text: str | None
) -> QueryOptions:
    if not cursor:
        return opts
    from dataclasses import replace

    from docindex.models.limits import check_length
    from docindex.search.cursor import decode_cursor

    check_length("cursor", cursor, 1024)
    # The cursor was signed with the query text (see _add_cursor).
    return replace(opts, offset=decode_cursor(cursor, query=text, options=opts))


def query(
    db: DbArg, text: str, options: QueryOptions, *, cursor: str | None = None,
    cwd: Path | None = None,
) -> QueryResult:  # fmt: skip
    """Run one query; see ``docindex query --help``.

    ``cwd``: the folder relative ``--path`` values start from (the CLI's).
    """
    from docindex.search.engine import (  # not for a scan, which never searches (#24)
        parse,
        search,
    )

    ws = workspace.load(db, reading=True, every_root=True)
    try:
        opts = _with_cursor(_scoped(ws, options, cwd), cursor, text)
    except BaseException:
        ws.close_reader()
        raise
    with ws.open_reader() as store:
        # One read transaction: a query that spans a scan's commit would find
        # FTS rowids in the old snapshot and their segments gone in the new (#8).
        with store.atomic(immediate=False):
            result = search(store, parse(text, ws.config), ws.config, opts)
            _note_pending(store, result)
    _add_cursor(result, opts)
    return result


def _note_pending(store: Store, result: QueryResult) -> None:
    """An interrupted ``scan --force`` left documents to be found by meaning only."""
    pending = store.get_meta("fts_pending")
    if pending:
        result.degraded = True
        if result.hint is None:
            result.hint = {
                "unmatched_words": [], "filtered_out": False, "would_match": {},
                "suggestion": f"{len(pending)} documents are found by meaning only "
                "until the interrupted scan is run again",
            }  # fmt: skip


def batch_query(
    db: DbArg, lines: Iterable[str], options: QueryOptions,
    *, cwd: Path | None = None,
) -> Iterator[QueryResult]:  # fmt: skip
    """Run many queries over one open index (``--queries``), in order."""
    from docindex.errors import BadInputError
    from docindex.search.engine import parse, search

    ws = workspace.load(db, reading=True, every_root=True)
    try:
        options = _scoped(ws, options, cwd)
    except BaseException:
        ws.close_reader()
        raise
    with ws.open_reader() as store:
        for number, line in enumerate(lines, 1):
            try:
                with store.atomic(immediate=False):  # one snapshot per query
                    result = search(store, parse(line, ws.config), ws.config, options)
            except BadInputError as exc:
                raise BadInputError(f"line {number}: {exc}") from None
            _add_cursor(result, options)
            yield result


def _add_cursor(result: QueryResult, opts: QueryOptions) -> None:
    if result.next_offset is not None:
        from docindex.search.cursor import encode_cursor

        result.next_cursor = encode_cursor(
            result.next_offset, query=result.query, options=opts
        )


def hit_lines(
    db: DbArg, hits: list[Hit], context: int, *, whole_chunk: bool = False
) -> list[list[tuple[int, str]]]:
    """Each hit's line with ``context`` lines either side, from the indexed text.

    For ``query --context N`` and ``--vimgrep`` (``whole_chunk``: every line of
    the hit's segment). Lines are (number, text), numbered as the hit's
    ``line`` is (within its page or slide for PDF and PPTX), and come from
    the text the index holds.
    """
    ws = workspace.load(db, reading=True, every_root=True)
    out: list[list[tuple[int, str]]] = []
    with ws.open_reader() as store:
        bodies: dict[int, list[str]] = {}
        for hit in hits:
            rows = [
                r
                for r in store.segments_by_chunk_id(hit.chunk_id)
                if r.root == hit.root
            ]
            if not rows:
                out.append([])
                continue
            seg = rows[0]
            if seg.doc_id not in bodies:
                bodies[seg.doc_id] = store.body(seg.doc_id).split("\n")
            lines = bodies[seg.doc_id]
            # The segment's first line in the whole text; its start_line may
            # count from the top of a page instead.
            first = sum(1 for _ in _newlines(lines, seg.char_start)) + 1
            shift = first - hit.start_line
            if whole_chunk:
                lo, hi = first, first + (hit.end_line - hit.start_line)
            else:
                lo, hi = hit.line + shift - context, hit.line + shift + context
            lo, hi = max(1, lo, 1 + shift), min(len(lines), hi)  # not before the page
            out.append([(n - shift, lines[n - 1]) for n in range(lo, hi + 1)])
    return out


def _newlines(lines: list[str], offset: int) -> Iterator[None]:
    """One item per line break before character ``offset`` of the joined text."""
    seen = 0
    for line in lines:
        seen += len(line) + 1
        if seen > offset:
            return
        yield None
