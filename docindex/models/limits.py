"""Input limits: the most a caller may pass, checked before any work (issue #17).

Every text that comes from a user or an agent is measured with ``len()`` before
it is normalised, parsed, resolved or sent to SQLite, so a hostile size costs
its own bytes and nothing more. The CLI turns a breach into exit 2, the MCP
server into a tool error naming the argument. README "Input limits" lists them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from docindex.errors import BadInputError

if TYPE_CHECKING:
    from docindex.models import QueryOptions

MAX_QUERY_CHARS = 4096  # a query, a heading to look up, a --where value
MAX_PATH_CHARS = 4096  # a FILE argument (Linux PATH_MAX)
MAX_CHUNK_ID_CHARS = 8192  # a path plus its heading anchors
MAX_GLOB_CHARS = 1024  # SQLite refuses GLOB patterns past 50,000 bytes
MAX_TOP = 1000  # hits or related chunks in one answer
MAX_LIST = 10_000  # documents in one page of ``list``
MAX_OFFSET = 1_000_000  # paging further is a scan, not a page
MAX_MCP_LINE_BYTES = 16 * 1024 * 1024  # one JSON-RPC message on the MCP wire


def check_length(name: str, value: str | None, limit: int) -> None:
    """Refuse ``value`` longer than ``limit`` characters.

    Raises:
        BadInputError: naming ``name``, the length and the limit.
    """
    if value is not None and len(value) > limit:
        raise BadInputError(
            f"{name} is {len(value):,} characters long; the limit is {limit:,}"
        )


def check_path(name: str, value: str, limit: int = MAX_PATH_CHARS) -> None:
    """Refuse a path past ``limit`` characters or holding a NUL (no OS accepts one).

    Raises:
        BadInputError: naming ``name``.
    """
    check_length(name, value, limit)
    if "\x00" in value:
        raise BadInputError(f"{name} must not contain a NUL character")


def check_range(name: str, value: int, lo: int, hi: int) -> None:
    """Refuse an integer outside ``lo..hi``.

    Raises:
        BadInputError: naming ``name`` and the range.
    """
    if not lo <= value <= hi:
        raise BadInputError(f"{name} must be in {lo}..{hi:,} (got {value})")


def check_score(name: str, value: float) -> None:
    """Refuse a score threshold that is NaN or outside 0..1.

    Raises:
        BadInputError: naming ``name``.
    """
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise BadInputError(f"{name} must be a number in 0..1 (got {value})")


def check_query(text: str, opts: QueryOptions) -> None:
    """Refuse a query text or options past the limits, before any normalisation.

    Raises:
        BadInputError: naming the first argument at fault.
    """
    check_length("query", text, MAX_QUERY_CHARS)
    check_range("top", opts.top, 1, MAX_TOP)
    check_range("offset", opts.offset, 0, MAX_OFFSET)
    check_score("min_score", opts.min_score)
    check_length("path", opts.path_glob, MAX_GLOB_CHARS)
    if len(opts.types) > 100:
        raise BadInputError("type: at most 100 types")
    if len(opts.where) > 100:
        raise BadInputError("where: at most 100 filters")
    for name in opts.types:
        check_length("type", name, 100)
    for key, value in opts.where:
        check_length("where key", key, MAX_QUERY_CHARS)
        check_length("where value", value, MAX_QUERY_CHARS)
