"""SQL pieces the Store's parts share: filters, id chunks, body and section codecs."""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from docindex.models import NAME_LISTS
from docindex.store.doccounts import SLOT_BITS, DocTerms
from docindex.store.records import DocFilter

T = TypeVar("T")

ALL_DOCS = DocFilter()
MAX_VARS = 900  # bound parameters per statement in chunked IN lists


# The facet keys of those lists, in SQL: ``f.key IN NAME_KEYS``.
NAME_KEYS = "(" + ", ".join(f"'{key}'" for key in NAME_LISTS) + ")"


def facet_rows(meta: dict[str, str]) -> list[tuple[str, str]]:
    """(key, value) facet rows of a document's metadata; a keyword or tag list
    ("APISIX, 上游") gives one row per item."""
    rows: list[tuple[str, str]] = []
    for key, value in meta.items():
        if key in NAME_LISTS:
            rows += [(key, v) for v in dict.fromkeys(value.split(", ")) if v]
        else:
            rows.append((key, value))
    return rows


def compress_body(text: str) -> bytes:
    """How ``documents.body`` stores a document's text: zlib format over UTF-8.

    Written with zlib-ng when it is installed (a dependency): the same format,
    read back by the standard ``zlib``, at level 6 in 0.32 instead of 0.58
    CPU-s on the shared corpus, for 1.6% more bytes (issue #7).
    """
    if not _COMPRESS:  # imported on first use: a query never needs it
        try:
            from zlib_ng import zlib_ng

            _COMPRESS.append(zlib_ng.compress)
        except ImportError:  # a platform without its wheel: same format, slower
            _COMPRESS.append(zlib.compress)
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (issue #17): extractor output is cleaned before it
        # gets here, but storing must not be what fails. "?" keeps offsets.
        raw = text.encode("utf-8", "replace")
    compressed: bytes = _COMPRESS[0](raw, 6)
    return compressed


_COMPRESS: list[Callable[[bytes, int], bytes]] = []


# A stored section: a bare heading path (its anchor is the path's slug), or
# [heading path, anchor] (``encoding.encode_segments``).
Section = list[str] | list[list[str] | str]


def decode_sections(blob: bytes | None) -> list[Section]:
    """A document's stored section list (``encode_segments``)."""
    return json.loads(zlib.decompress(blob)) if blob else []


def decode_section(
    sections: Sequence[Section], index: int | None
) -> tuple[list[str], str]:
    """(heading path, anchor) of a stored section."""
    if index is None:
        return [], ""
    entry = sections[index]
    if not entry or isinstance(entry[0], str):  # a bare heading path
        from docindex.text.anchors import slug_path

        path: list[str] = entry  # type: ignore[assignment]
        return path, slug_path(path)
    return entry[0], entry[1]  # type: ignore[return-value]


_GLOB_CHARS = frozenset("*?[")


def path_clause(path: str) -> tuple[str, tuple[str | int, ...]]:
    """SQL over ``d.rel_path`` for ``--path`` (issue #19).

    A pattern with ``*``, ``?`` or ``[`` is a glob (SQLite GLOB: ``*`` also
    crosses ``/``); anything else is an exact file or a folder prefix, with or
    without its trailing slash (``en/apisix`` and ``en/apisix/`` are the
    same). A leading ``./`` is ignored.
    """
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    if _GLOB_CHARS & set(path):
        return "d.rel_path GLOB ?", (path,)
    folder = path.rstrip("/")
    if not folder:
        return "1", ()
    return "(d.rel_path = ? OR substr(d.rel_path, 1, ?) = ?)", (
        folder, len(folder) + 1, folder + "/",
    )  # fmt: skip


def filter_sql(only: DocFilter) -> tuple[str, tuple[object, ...]]:
    """SQL over ``documents d`` for a DocFilter (pushed down into each query)."""
    clauses: list[str] = []
    params: list[object] = []
    if only.root_ids is not None:
        ids = list(only.root_ids) or [-1]
        clauses.append(f"d.root_id IN ({','.join('?' * len(ids))})")
        params.extend(ids)
    if only.kinds:
        clauses.append(f"d.kind IN ({','.join('?' * len(only.kinds))})")
        params.extend(t.lower().lstrip(".") for t in only.kinds)
    if only.path_glob:
        clauses.append("d.rel_path GLOB ?")
        params.append(only.path_glob)
    if only.path:
        clause, values = path_clause(only.path)
        clauses.append(clause)
        params.extend(values)
    for key, value in only.facets:
        clauses.append(
            "EXISTS (SELECT 1 FROM facets x WHERE x.doc_id = d.id AND x.key = ? "
            "AND x.value = ?)"
        )
        params.extend((key, value))
    if only.except_doc is not None:
        clauses.append("d.id != ?")
        params.append(only.except_doc)
    return " AND ".join(clauses), tuple(params)


MAX_WITHIN = 30_000  # bound parameters in one statement (SQLite allows 32,766)


def insert_doc_terms(conn: sqlite3.Connection, doc_id: int, counts: DocTerms) -> None:
    """A document's stored term counts and lengths (``doccounts``, issue #46)."""
    conn.executemany(
        "INSERT INTO doc_terms (rowid, terms) VALUES (?, ?)",
        [(doc_id << SLOT_BITS | slot, text) for slot, text in counts.slots],
    )
    if counts.escaped:
        conn.executemany(
            "INSERT INTO doc_term_counts (doc_id, term, title, heads, body) "
            "VALUES (?, ?, ?, ?, ?)",
            [(doc_id, *row) for row in counts.escaped],
        )
    # OR FAIL, not the default ABORT: a statement that fires a trigger and may
    # abort opens a statement journal, and FTS5 flushes its pending terms at
    # every such savepoint. With ABORT each document wrote one tiny FTS5
    # segment per table, merged again and again: 1.1 of the writer's 5.0 CPU-s
    # on the shared corpus (#46). A one-row insert fails alike either way.
    conn.execute(
        "INSERT OR FAIL INTO doc_lengths (id, length, body) VALUES (?, ?, ?)",
        (doc_id, counts.length, counts.body),
    )


def delete_doc_counts(conn: sqlite3.Connection, doc_id: int) -> None:
    """Drop a document's lengths and whole counts (its ``doc_terms`` rows go by
    replay, or went with ``clear_fts``)."""
    conn.execute("DELETE FROM doc_term_counts WHERE doc_id = ?", (doc_id,))
    conn.execute("DELETE FROM doc_lengths WHERE id = ?", (doc_id,))


def chunks(ids: Sequence[T]) -> Iterator[Sequence[T]]:
    for i in range(0, len(ids), MAX_VARS):
        yield ids[i : i + MAX_VARS]


def path_ranges(under: Sequence[str] | None) -> list[tuple[str, tuple[str, ...]]]:
    """SQL conditions on ``rel_path`` for the paths at or below each of ``under``.

    "p/" <= rel_path < "p0" is every path that starts with "p/" ("0" follows
    "/" in byte order, SQLite's BINARY collation), so the index is read as a
    range. None or "" is the whole root: no condition.
    """
    if under is None or "" in under:
        return [("", ())]
    return [
        (
            " AND (rel_path = ? OR (rel_path >= ? AND rel_path < ?))",
            (p, p + "/", p + "0"),
        )
        for p in dict.fromkeys(under)
    ]
