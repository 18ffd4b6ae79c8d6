"""What each MCP tool does: ``Tools``, bound to one index and its roots (issue #6).

Every path or chunk id is checked against the roots before anything is read;
a scan stops when its call is cancelled (issue #17). Split from ``mcp`` (the
transport) and ``mcp_schemas`` (the tools' schemas), #49.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from docindex.api.index import Index
from docindex.errors import BadInputError, DocindexError
from docindex.serve.mcp_schemas import clip

if TYPE_CHECKING:
    from docindex.api.records import Vocabulary
    from docindex.models import Progress, QueryResult
    from docindex.models.serialize import JSONObject, JSONValue
    from docindex.store.location import ServerUrl


def _opt_str(args: JSONObject, key: str) -> str | None:
    value = args.get(key)
    return value if isinstance(value, str) and value else None


# Typed reads of validated arguments (the schema already checked each type).
def _get_int(args: JSONObject, key: str, default: int) -> int:
    return int(cast("int | float", args.get(key, default)))


def _get_bool(args: JSONObject, key: str, default: bool) -> bool:
    return cast("bool", args.get(key, default))


def _get_str(args: JSONObject, key: str, default: str | None = None) -> str:
    return cast("str", args[key] if default is None else args.get(key, default))


def _types(value: JSONValue) -> tuple[str, ...]:
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(cast("list[str]", value))


def _where(value: JSONValue) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(cast("dict[str, str]", value or {}).items()))


def _query(index: Index, args: JSONObject, default_top: int = 10) -> QueryResult:
    """``Index.query`` with a tool call's arguments (the CLI's options, for cursors)."""
    return index.query(
        _get_str(args, "query"), top=_get_int(args, "top_k", default_top),
        mode=_get_str(args, "mode", "auto"),
        snippet_chars=_get_int(args, "snippet_chars", 200),
        highlight=_get_bool(args, "highlight", True), types=_types(args.get("type")),
        path=_opt_str(args, "path"), where=_where(args.get("where")),
        cursor=_opt_str(args, "cursor"),
    )  # fmt: skip


# -- tools ----------------------------------------------------------------------


class CallCancelledError(DocindexError):
    """The client cancelled the call or went away; the work stopped early."""


class _Cancellable:
    """A progress "bar" for ``Index.scan``: its callback stops a cancelled scan.

    The scan checks in at every walked and indexed file, so a cancelled
    ``doc_scan`` stops within one file and rolls back its open transaction.
    """

    def __init__(
        self, cancelled: threading.Event, closing: threading.Event | None = None
    ) -> None:
        self.cancelled = cancelled
        # Set when stdin closed (#38): a scan then stops at its next file like
        # Ctrl-C (what it finished is committed) and is answered as interrupted.
        self.closing = closing or threading.Event()

    def __enter__(self) -> Callable[[Progress], None]:
        return self.check

    def __exit__(self, *exc: object) -> None:
        return None

    def check(self, event: Progress | None = None) -> None:
        if self.cancelled.is_set():
            raise CallCancelledError("cancelled")


class Tools:
    """The tool implementations, bound to one index and its roots.

    Thread rule: a call runs on one worker thread and shares nothing mutable
    with other calls. Each opens and closes its own index connection, the
    cached embedders are per thread (``embed.embedder_for``) and the rest of
    this object is read-only after ``__init__``.

    Args:
        db: the ``--db`` value (or None to resolve as the CLI does).
        roots: ``--root`` directories; the tools never leave the roots.
    """

    def __init__(self, db: str | Path | ServerUrl | None, roots: list[str]) -> None:
        self.db = db
        self.roots = [str(Path(r).resolve()) for r in roots]
        self.index = Index(db, roots=self.roots)  # the tools that read or add roots
        self.plain = Index(db)  # the tools that take the index's own roots
        self.closing = threading.Event()  # stdin closed: scans stop, answered (#38)

    def vocabulary(self) -> Vocabulary:
        """Types and facets in the index now (empty before the first scan)."""
        try:
            return self.index.vocabulary()
        except DocindexError:
            return {"roots": self.roots, "types": [], "facets": {}}

    def call(
        self, name: str, args: JSONObject, cancelled: threading.Event | None = None
    ) -> object:
        """Run tool ``name`` on validated ``args``; return a JSON-ready value.

        Args:
            name: the tool.
            args: arguments as ``validate_arguments`` returned them.
            cancelled: set when the client no longer wants the answer.

        Raises:
            DocindexError: bad arguments, a path outside the roots, a
                cancelled call, or a core failure (a tool error for the agent).
        """
        handler: Callable[[JSONObject, _Cancellable], object] | None = getattr(
            self, f"_tool_{name}", None
        )
        if handler is None:
            raise BadInputError(f"unknown tool {clip(name)!r}")
        return handler(args, _Cancellable(cancelled or threading.Event(), self.closing))

    def _roots_now(self) -> list[str]:
        return list(self.vocabulary().get("roots") or self.roots)

    def _tool_doc_scan(self, args: JSONObject, stop: _Cancellable) -> object:
        from docindex.search.navigate import resolve_inside

        path = _opt_str(args, "path")
        scope = resolve_inside(self._roots_now(), path) if path else None
        return self.index.scan(
            scope, force=_get_bool(args, "force", False), progress=stop,
            stop=stop.closing.is_set,
        )  # fmt: skip

    def _tool_doc_query(self, args: JSONObject, stop: _Cancellable) -> object:
        return _query(self.plain, args)

    def _tool_doc_reindex(self, args: JSONObject, stop: _Cancellable) -> object:
        return self.plain.reindex(full=_get_bool(args, "full", False), progress=stop,
                                  stop=stop.closing.is_set)  # fmt: skip

    def _tool_doc_stats(self, args: JSONObject, stop: _Cancellable) -> object:
        return self.plain.stats()

    def _tool_get_doc(self, args: JSONObject, stop: _Cancellable) -> object:
        from docindex.search.navigate import readable  # headings' anchors go (#37)

        return readable(self.index.show(
            _get_str(args, "chunk_id"), context=_get_int(args, "context", 0)
        ))  # fmt: skip

    def _tool_get_outline(self, args: JSONObject, stop: _Cancellable) -> object:
        return self.index.outline(
            _get_str(args, "path"), depth=_get_int(args, "max_depth", 6)
        )

    def _tool_get_section(self, args: JSONObject, stop: _Cancellable) -> object:
        from docindex.search.navigate import readable

        return readable(self.index.section(
            _get_str(args, "path"), _get_str(args, "section"),
            subsections=_get_bool(args, "include_subsections", True),
        ))  # fmt: skip

    def _tool_find_related(self, args: JSONObject, stop: _Cancellable) -> object:
        path = _get_str(args, "path")
        chunk = _opt_str(args, "chunk_id")
        target = path
        if chunk:
            # A full chunk id names its file; a bare anchor is joined to ``path``.
            target = (
                chunk if "#" in chunk or chunk.startswith(path) else f"{path}#{chunk}"
            )
        return self.index.related(target, top=_get_int(args, "limit", 10),
                                  same_file=_get_bool(args, "same_file", False))  # fmt: skip

    def _tool_list_documents(self, args: JSONObject, stop: _Cancellable) -> object:
        return self.index.documents(
            path=_opt_str(args, "path"), types=_types(args.get("type")),
            limit=_get_int(args, "limit", 50), offset=_get_int(args, "offset", 0),
        )  # fmt: skip

    def _tool_search_batch(self, args: JSONObject, stop: _Cancellable) -> object:
        from docindex.models.serialize import to_json

        limit = _get_int(args, "limit", 5)
        results = []
        for item in cast("list[JSONObject]", args["queries"]):
            stop.check()
            result = _query(self.plain, item, limit)
            results.append(json.loads(to_json(result)))
        return {"results": results}
