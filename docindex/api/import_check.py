"""Every record of an import checked before it is written (issue #44).

An export file may come from anywhere: a colleague, an attacker, a disk that
cut it short. Each line is read with a size cap (a 200 MB line is refused as
soon as it passes the cap, never held), parsed, and checked for its type, its
keys and the type and range of each value: paths relative to their root with
no ``..`` or absolute part, every document's root declared by an earlier
``root`` record, chunk offsets inside the text, vectors of the index's width.
A failure is a ``BadInputError`` naming the line and the problem; the import
runs in one transaction, so nothing of it stays.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import ntpath
import posixpath
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from docindex.errors import BadInputError
from docindex.models.limits import MAX_CHUNK_ID_CHARS, MAX_PATH_CHARS

FORMAT = "docindex-export"
VERSION = 1
META_KEYS = ("settings", "tokenizer", "embedder")
#: One record line: a document's text, its chunks and their vectors.
MAX_LINE_CHARS = 64 * 1024 * 1024
#: A document's text: what extraction keeps of one file at most (32 MiB).
MAX_TEXT_CHARS = 32 * 1024 * 1024
MAX_FIELD_CHARS = 4096  # a title, a heading, a kind, a hash, a sheet name
MAX_HEADINGS = 64

_HEADER = {"type", "version", "documents"}
_META = {"type", "key", "value"}
_ROOT = {"type", "path"}
_DOCUMENT = {
    "type", "root", "rel_path", "kind", "title", "size", "mtime_ns", "hash", "meta",
    "terms", "text", "chunks",
}  # fmt: skip
_CHUNK = {
    "chunk_id", "heading", "start_line", "end_line", "char_start", "char_end",
    "page", "slide", "sheet", "cells", "vector",
}  # fmt: skip


class RecordError(ValueError):
    """What is wrong with one record (the caller adds its line number)."""


def numbered_records(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, JSON object) of each non-blank line, each line capped.

    Raises:
        BadInputError: a line past ``MAX_LINE_CHARS``, not JSON, or no object.
    """
    for number, line in enumerate(_capped(lines), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise BadInputError(f"line {number}: not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise BadInputError(f"line {number}: not a JSON object")
        yield number, record


def _capped(lines: Iterable[str]) -> Iterator[str]:
    """Lines of at most ``MAX_LINE_CHARS``; a longer one is refused as soon as
    it passes the cap (from a file, without reading the rest of it)."""
    if isinstance(lines, io.TextIOBase):
        number = 0
        while True:
            number += 1
            line = lines.readline(MAX_LINE_CHARS + 1)
            if not line:
                return
            if len(line) > MAX_LINE_CHARS:
                raise BadInputError(
                    f"line {number}: longer than {MAX_LINE_CHARS:,} characters; "
                    "no record of an export is that long"
                )
            yield line
    for number, line in enumerate(lines, start=1):
        if len(line) > MAX_LINE_CHARS:
            raise BadInputError(
                f"line {number}: longer than {MAX_LINE_CHARS:,} characters"
            )
        yield line


def check_header(record: Mapping[str, Any] | None) -> int | None:
    """The header's document count (None when it gives none).

    Raises:
        BadInputError: not a header of this format, or of a newer version.
    """
    if not record or record.get("type") != FORMAT:
        raise BadInputError("not a docindex export (its first line is not the header)")
    _keys(record, _HEADER, required={"type", "version"})
    version = _int(record, "version", 1)
    if version > VERSION:
        raise BadInputError(
            f"line 1: this export was written by a newer docindex (version "
            f"{version} > {VERSION}); upgrade docindex"
        )
    return _int(record, "documents", 0) if "documents" in record else None


def check_meta(record: Mapping[str, Any]) -> tuple[str, Any]:
    """(key, value) of a ``meta`` record; settings are checked as a config."""
    from docindex.config import from_mapping
    from docindex.errors import ConfigError

    _keys(record, _META)
    key = record["key"]
    if key not in META_KEYS:
        raise RecordError(f"unknown meta key {key!r} (one of {', '.join(META_KEYS)})")
    value = record["value"]
    if value is not None and not isinstance(value, dict):
        raise RecordError(f"meta {key} must be an object or null")
    if key == "settings" and value is not None:
        try:
            from_mapping(value)
        except ConfigError as exc:
            raise RecordError(f"meta settings: {exc}") from None
    return key, value


def check_root(record: Mapping[str, Any]) -> str:
    """The absolute, normalised path of a ``root`` record."""
    _keys(record, _ROOT)
    path = _str(record, "path", MAX_PATH_CHARS)
    if not (posixpath.isabs(path) or ntpath.isabs(path)):
        raise RecordError(f"root {path!r} is not an absolute path")
    parts = path.replace("\\", "/").split("/")
    if ".." in parts or "." in parts:
        raise RecordError(f"root {path!r} holds a '.' or '..' part")
    return path


@dataclass(frozen=True, slots=True)
class Chunk:
    """A checked chunk of an imported document."""

    chunk_id: str
    heading: tuple[str, ...]
    start_line: int
    end_line: int
    char_start: int
    char_end: int
    page: int | None
    slide: int | None
    sheet: str | None
    cells: tuple[str, ...] | None
    vector: bytes | None


def vector_widths(dim: int) -> frozenset[int]:
    """The byte widths a vector of ``dim`` is stored in: int8 codes and a
    float32 scale, or int4 codes and a float16 scale (``embed.quantized.quantize``)."""
    return frozenset({dim + 4, 2 + (dim + 1) // 2})


def check_document(
    record: Mapping[str, Any], roots: Iterable[str], widths: frozenset[int] | None
) -> tuple[str, str, list[Chunk]]:
    """(root, rel_path, chunks) of a ``document`` record, every value checked.

    ``widths``: the byte widths the index's vectors may have (None: any);
    the caller keeps every vector of an import at one width.
    """
    _keys(record, _DOCUMENT)
    root = _str(record, "root", MAX_PATH_CHARS)
    if root not in roots:
        raise RecordError(f"document root {root!r} is not declared by a root record")
    rel = _str(record, "rel_path", MAX_PATH_CHARS)
    _relative(rel)
    for name in ("kind", "hash"):
        _str(record, name, MAX_FIELD_CHARS)
    _opt_str(record, "title")
    _int(record, "size", 0)
    _int(record, "mtime_ns", None)
    _str(record, "terms", MAX_TEXT_CHARS)
    text = _str(record, "text", MAX_TEXT_CHARS)
    if record["meta"] is not None and not isinstance(record["meta"], dict):
        raise RecordError("meta must be an object or null")
    chunks = record["chunks"]
    if not isinstance(chunks, list):
        raise RecordError(f"chunks must be a list, not {_kind(chunks)}")
    return (
        root,
        rel,
        [_chunk(c, i, len(text), widths) for i, c in enumerate(chunks)],
    )


def _chunk(c: object, i: int, n_chars: int, widths: frozenset[int] | None) -> Chunk:
    where = f"chunk {i + 1}"
    if not isinstance(c, dict):
        raise RecordError(f"{where} is not an object")
    _keys(c, _CHUNK, where=where)
    heading = c["heading"]
    if not isinstance(heading, list) or len(heading) > MAX_HEADINGS:
        raise RecordError(f"{where}: heading must be a list of up to {MAX_HEADINGS}")
    for h in heading:
        if not isinstance(h, str) or len(h) > MAX_FIELD_CHARS:
            raise RecordError(f"{where}: each heading must be a string")
    start, end = _int(c, "char_start", 0, where), _int(c, "char_end", 0, where)
    if not start <= end <= n_chars:
        raise RecordError(f"{where}: characters {start}..{end} are outside the text")
    first, last = _int(c, "start_line", 1, where), _int(c, "end_line", 1, where)
    if not first <= last:
        raise RecordError(f"{where}: start_line {first} is after end_line {last}")
    cells = c["cells"]
    if cells is not None and (
        not isinstance(cells, list) or not all(isinstance(x, str) for x in cells)
    ):
        raise RecordError(f"{where}: cells must be a list of strings or null")
    return Chunk(
        _str(c, "chunk_id", MAX_CHUNK_ID_CHARS, where), tuple(heading), first, last,
        start, end, _opt_int(c, "page", where), _opt_int(c, "slide", where),
        _opt_str(c, "sheet", where),
        tuple(cells) if cells is not None else None,
        _vector(c["vector"], where, widths),
    )  # fmt: skip


def _vector(value: object, where: str, widths: frozenset[int] | None) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 4 * 8192 * 2:
        raise RecordError(f"{where}: vector must be base64 text or null")
    try:
        blob = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RecordError(f"{where}: vector is not valid base64") from None
    if widths is not None and len(blob) not in widths:
        raise RecordError(
            f"{where}: a vector of {len(blob)} bytes; this index's are "
            f"{' or '.join(map(str, sorted(widths)))} bytes"
        )
    return blob


def _relative(rel: str) -> None:
    """A path inside its root: relative, no empty, '.' or '..' part."""
    if not rel or posixpath.isabs(rel) or ntpath.isabs(rel) or "\\" in rel:
        raise RecordError(f"rel_path {rel!r} must be a relative path with '/'")
    if any(part in ("", ".", "..") for part in rel.split("/")):
        raise RecordError(f"rel_path {rel!r} must stay inside its root (no '..')")


def _keys(
    record: Mapping[str, Any], allowed: set[str], *, required: set[str] | None = None,
    where: str = "",
) -> None:  # fmt: skip
    prefix = f"{where}: " if where else ""
    missing = sorted((allowed if required is None else required) - record.keys())
    if missing:
        raise RecordError(f"{prefix}missing key {', '.join(map(repr, missing))}")
    unknown = sorted(record.keys() - allowed)
    if unknown:
        raise RecordError(f"{prefix}unknown key {', '.join(map(repr, unknown))}")


def _str(record: Mapping[str, Any], key: str, limit: int, where: str = "") -> str:
    value = record[key]
    prefix = f"{where}: " if where else ""
    if not isinstance(value, str):
        raise RecordError(f"{prefix}{key} must be a string, not {_kind(value)}")
    if len(value) > limit:
        raise RecordError(f"{prefix}{key} is longer than {limit:,} characters")
    if "\x00" in value and key not in ("text", "terms"):
        raise RecordError(f"{prefix}{key} holds a NUL character")
    return value


def _opt_str(record: Mapping[str, Any], key: str, where: str = "") -> str | None:
    return None if record[key] is None else _str(record, key, MAX_FIELD_CHARS, where)


def _int(record: Mapping[str, Any], key: str, lo: int | None, where: str = "") -> int:
    value = record[key]
    prefix = f"{where}: " if where else ""
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordError(f"{prefix}{key} must be an integer, not {_kind(value)}")
    if lo is not None and value < lo:
        raise RecordError(f"{prefix}{key} must be at least {lo} (got {value})")
    if abs(value) >= 1 << 63:
        raise RecordError(f"{prefix}{key} is out of range")
    return value


def _opt_int(record: Mapping[str, Any], key: str, where: str) -> int | None:
    return None if record[key] is None else _int(record, key, 1, where)


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null", float: "a number", int: "an integer"}.get(
        type(value), type(value).__name__
    )  # fmt: skip
