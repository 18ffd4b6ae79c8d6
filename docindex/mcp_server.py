"""``docindex mcp``: the index as MCP tools over stdio (issue #6).

A thin adapter over :mod:`docindex.api`, built on the official ``mcp`` SDK's
low-level ``Server`` so the tool input schemas are ours: enums for file types,
modes and front-matter facet values are filled from the index each time the
tools are listed (docs-mcp's taxonomy injection). Every path or chunk id is
checked against the roots before anything is read; results are JSON text.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import api
from .errors import DocindexError
from .search import MODES

INSTALL_HINT = "the MCP server needs the mcp extra: pip install 'docindex[mcp]'"
MAX_BATCH = 10
MAX_ENUM = 100  # a facet with more values gets no enum (schemas stay small)


# -- schemas --------------------------------------------------------------------


def _int(description: str, default: int, lo: int, hi: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": lo, "maximum": hi, "default": default,
            "description": description}  # fmt: skip


def _bool(description: str, default: bool) -> dict[str, Any]:
    return {"type": "boolean", "default": default, "description": description}


def _str(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _object(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def _type_schema(types: list[str]) -> dict[str, Any]:
    one: dict[str, Any] = {"type": "string"}
    if types:
        one["enum"] = types
    return {
        "anyOf": [one, {"type": "array", "items": one}],
        "description": "Only documents of this type, or of any of these types.",
    }


def _where_schema(facets: dict[str, list[str]]) -> dict[str, Any]:
    props = {
        key: {"type": "string", **({"enum": values} if len(values) <= MAX_ENUM else {})}
        for key, values in sorted(facets.items())
    }
    return {
        "type": "object",
        "properties": props,
        "additionalProperties": {"type": "string"},
        "description": "Front-matter filters, key -> value (all must hold).",
    }


def tool_schemas(vocab: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Tool name -> (description, input JSON schema) for the index's vocabulary.

    Args:
        vocab: ``api.index_vocabulary()``: ``types`` and ``facets`` present.
    """
    types, facets = list(vocab.get("types") or []), dict(vocab.get("facets") or {})
    path_doc = "A file path relative to a root, or absolute inside one."
    filters = {
        "type": _type_schema(types),
        "path": _str(
            "Only documents under this folder, this file, or matching "
            "this glob (root-relative)."
        ),
        "where": _where_schema(facets),
    }
    query_props = {
        "query": _str('What to look for, in plain words (any language); '
                      '"exact phrase", +required, -excluded, -"excluded phrase".'),
        "topK": _int("Number of hits.", 10, 1, 100),
        "mode": {"type": "string", "enum": list(MODES), "default": "auto",
                 "description": "Rankings to use: auto (hybrid), lexical, semantic."},
        "highlight": _bool("Mark matches in snippets with **...**.", True),
        "snippetChars": _int("Snippet length in characters.", 200, 20, 5000),
        **filters,
        "cursor": _str("next_cursor of a previous result, for the next page."),
    }  # fmt: skip
    batch_item = _object({k: v for k, v in query_props.items() if k != "cursor"},
                         ("query",))  # fmt: skip
    return {
        "doc_scan": ("Index new and changed files under the roots (or one path).",
                     _object({"path": _str(path_doc + " Default: all roots."),
                              "force": _bool("Re-index unchanged files.", False)})),
        "doc_query": ("Search the index; hits carry path, line, chunk_id and score. "
                      "An empty result carries a hint.", _object(query_props, ("query",))),
        "doc_reindex": ("Re-read every file; full rebuilds the index file.",
                        _object({"full": _bool("Rebuild from scratch.", False)})),
        "doc_stats": ("What the index holds: roots, counts, types, facets.", _object({})),
        "get_doc": ("A chunk by chunk_id (or FILE[:LINE]) with neighbouring chunks.",
                    _object({"chunk_id": _str("A chunk id from a hit, or FILE[:LINE]."),
                             "context": _int("Neighbouring chunks on each side.",
                                             0, 0, 20)}, ("chunk_id",))),
        "get_outline": ("A document's title and headings with levels and lines.",
                        _object({"path": _str(path_doc),
                                 "max_depth": _int("Deepest heading level.", 6, 1, 6)},
                                ("path",))),
        "get_section": ("The text under a heading (case-insensitive) with its lines.",
                        _object({"path": _str(path_doc), "section": _str("Heading text."),
                                 "include_subsections": _bool("Include sub-headings.",
                                                              True)},
                                ("path", "section"))),
        "find_related": ("Chunks nearest by vector to a chunk or a whole file.",
                         _object({"path": _str(path_doc),
                                  "chunk_id": _str("Optional chunk of that file."),
                                  "limit": _int("Number of chunks.", 10, 1, 100),
                                  "same_file": _bool("Include the same file.", False)},
                                 ("path",))),
        "list_documents": ("Indexed documents with title, type, size and segments.",
                           _object({"path": filters["path"], "type": filters["type"],
                                    "limit": _int("Page size.", 50, 1, 500),
                                    "offset": _int("Documents to skip.", 0, 0, 10**9)})),
        "search_batch": (f"Run up to {MAX_BATCH} queries at once.",
                         _object({"queries": {"type": "array", "items": batch_item,
                                              "minItems": 1, "maxItems": MAX_BATCH},
                                  "limit": _int("Default topK per query.", 5, 1, 100)},
                                 ("queries",))),
    }  # fmt: skip


# -- argument coercion ----------------------------------------------------------


def _get_int(args: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = args.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DocindexError(f"{key} must be an integer")
    try:
        number = int(value)
    except ValueError as exc:
        raise DocindexError(f"{key} must be an integer") from exc
    if not lo <= number <= hi:
        raise DocindexError(f"{key} must be in {lo}..{hi}")
    return number


def _get_str(args: dict[str, Any], key: str, required: bool = False) -> str | None:
    value = args.get(key)
    if value is None or value == "":
        if required:
            raise DocindexError(f"{key} is required")
        return None
    if not isinstance(value, str):
        raise DocindexError(f"{key} must be a string")
    return value


def _get_bool(args: dict[str, Any], key: str, default: bool) -> bool:
    value = args.get(key, default)
    return default if value is None else bool(value)


def _types(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise DocindexError("type must be a string or a list of strings")
    return tuple(items)


def _where(value: Any) -> tuple[tuple[str, str], ...]:
    if not value:
        return ()
    if not isinstance(value, dict):
        raise DocindexError("where must be an object of key -> value")
    return tuple((str(k), str(v)) for k, v in sorted(value.items()))


def _query_options(args: dict[str, Any], default_top: int = 10) -> dict[str, Any]:
    """The option dict ``api.query`` takes (same keys as the CLI's, for cursors)."""
    mode = _get_str(args, "mode") or "auto"
    if mode not in MODES:
        raise DocindexError(f"mode must be one of {', '.join(MODES)}")
    return dict(
        top=_get_int(args, "topK", default_top, 1, 100), mode=mode,
        snippet_chars=_get_int(args, "snippetChars", 200, 20, 5000),
        highlight=_get_bool(args, "highlight", True), min_score=0.0, files=False,
        explain=False, types=_types(args.get("type")),
        path_glob=_get_str(args, "path"), where=_where(args.get("where")),
        cursor=_get_str(args, "cursor"),
    )  # fmt: skip


# -- tools ----------------------------------------------------------------------


class Tools:
    """The tool implementations, bound to one index and its roots.

    Args:
        db: the ``--db`` value (or None to resolve as the CLI does).
        roots: ``--root`` directories; the tools never leave the roots.
    """

    def __init__(self, db: str | None, roots: list[str]) -> None:
        self.db = db
        self.roots = [str(Path(r).resolve()) for r in roots]

    def vocabulary(self) -> dict[str, Any]:
        """Types and facets in the index now (empty before the first scan)."""
        try:
            return api.index_vocabulary(self.db, self.roots or None)
        except DocindexError:
            return {"roots": self.roots, "types": [], "facets": {}}

    def call(self, name: str, args: dict[str, Any]) -> Any:
        """Run tool ``name``; return a JSON-ready value.

        Raises:
            DocindexError: bad arguments, a path outside the roots, or a core
                failure (reported to the agent as a tool error).
        """
        handler: Callable[[dict[str, Any]], Any] | None = getattr(
            self, f"_tool_{name}", None
        )
        if handler is None:
            raise DocindexError(f"unknown tool {name!r}")
        return handler(args)

    def _roots_now(self) -> list[str]:
        return list(self.vocabulary().get("roots") or self.roots)

    def _tool_doc_scan(self, args: dict[str, Any]) -> Any:
        from .navigate import resolve_inside

        path = _get_str(args, "path")
        scope = resolve_inside(self._roots_now(), path) if path else None
        return api.scan(self.db, path=scope, roots=self.roots or None,
                        force=_get_bool(args, "force", False))  # fmt: skip

    def _tool_doc_query(self, args: dict[str, Any]) -> Any:
        text = _get_str(args, "query", required=True)
        return api.query(self.db, str(text), _query_options(args))

    def _tool_doc_reindex(self, args: dict[str, Any]) -> Any:
        return api.reindex(self.db, full=_get_bool(args, "full", False))

    def _tool_doc_stats(self, args: dict[str, Any]) -> Any:
        return api.stats(self.db)

    def _tool_get_doc(self, args: dict[str, Any]) -> Any:
        target = str(_get_str(args, "chunk_id", required=True))
        return api.show(self.db, target, context=_get_int(args, "context", 0, 0, 20),
                        roots=self.roots or None)  # fmt: skip

    def _tool_get_outline(self, args: dict[str, Any]) -> Any:
        path = str(_get_str(args, "path", required=True))
        return api.outline(self.db, path, depth=_get_int(args, "max_depth", 6, 1, 6),
                           roots=self.roots or None)  # fmt: skip

    def _tool_get_section(self, args: dict[str, Any]) -> Any:
        path = str(_get_str(args, "path", required=True))
        heading = str(_get_str(args, "section", required=True))
        return api.section(
            self.db, path, heading, roots=self.roots or None,
            include_subsections=_get_bool(args, "include_subsections", True),
        )  # fmt: skip

    def _tool_find_related(self, args: dict[str, Any]) -> Any:
        path = str(_get_str(args, "path", required=True))
        chunk = _get_str(args, "chunk_id")
        target = path
        if chunk:
            # A full chunk id names its file; a bare anchor is joined to ``path``.
            target = (
                chunk if "#" in chunk or chunk.startswith(path) else f"{path}#{chunk}"
            )
        return api.related(self.db, target, top=_get_int(args, "limit", 10, 1, 100),
                           same_file=_get_bool(args, "same_file", False),
                           roots=self.roots or None)  # fmt: skip

    def _tool_list_documents(self, args: dict[str, Any]) -> Any:
        return api.list_documents(
            self.db, path_glob=_get_str(args, "path"), types=_types(args.get("type")),
            limit=_get_int(args, "limit", 50, 1, 500),
            offset=_get_int(args, "offset", 0, 0, 10**9), roots=self.roots or None,
        )  # fmt: skip

    def _tool_search_batch(self, args: dict[str, Any]) -> Any:
        queries = args.get("queries")
        if not isinstance(queries, list) or not queries:
            raise DocindexError("queries must be a non-empty list")
        if len(queries) > MAX_BATCH:
            raise DocindexError(f"at most {MAX_BATCH} queries per batch")
        limit = _get_int(args, "limit", 5, 1, 100)
        results = []
        for item in queries:
            if not isinstance(item, dict):
                raise DocindexError("each query must be an object with a query key")
            text = str(_get_str(item, "query", required=True))
            result = api.query(self.db, text, _query_options(item, limit))
            results.append(json.loads(_to_text(result)))
        return {"results": results}


# -- the server -----------------------------------------------------------------


def _to_text(value: Any) -> str:
    from .render import to_json

    return to_json(value)


def build_server(tools: Tools) -> Any:
    """A low-level MCP ``Server`` whose handlers call ``tools`` in a worker thread."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from . import __version__

    async def list_tools(ctx: Any, params: Any) -> Any:
        vocab = await anyio.to_thread.run_sync(tools.vocabulary)
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=desc, input_schema=schema)
            for name, (desc, schema) in tool_schemas(vocab).items()
        ])  # fmt: skip

    async def call_tool(ctx: Any, params: Any) -> Any:
        args = dict(params.arguments or {})
        try:
            value = await anyio.to_thread.run_sync(tools.call, params.name, args)
            text, error = _to_text(value), False
        except DocindexError as exc:
            text, error = json.dumps({"error": str(exc)}, ensure_ascii=False), True
        except sqlite3.Error as exc:
            from .store import translate

            text = json.dumps({"error": str(translate(exc, "the index"))})
            error = True
        except Exception as exc:  # keep serving: one bad call must not end the session
            text = json.dumps({"error": f"internal error: {type(exc).__name__}: {exc}"})
            error = True
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=error
        )

    return Server(
        "docindex", version=__version__,
        instructions="Search local documents; cite path:line; open chunks by chunk_id.",
        on_list_tools=list_tools, on_call_tool=call_tool,
    )  # fmt: skip


def serve(db: str | None, roots: list[str]) -> None:
    """Run the MCP server on stdin/stdout until the client disconnects.

    Raises:
        DocindexError: the ``mcp`` package is not installed (with an install hint).
    """
    try:
        import anyio
        from mcp.server.stdio import stdio_server
    except ImportError as exc:
        raise DocindexError(INSTALL_HINT) from exc
    server = build_server(Tools(db, roots))

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream,
                             server.create_initialization_options())  # fmt: skip

    anyio.run(main)
