"""``docindex mcp``: the index as MCP tools over stdio (issue #6).

A thin adapter over :mod:`docindex.api`, built on the official ``mcp`` SDK's
low-level ``Server`` so the tool input schemas are ours: enums for file types,
modes and front-matter facet values are filled from the index each time the
tools are listed (docs-mcp's taxonomy injection). Every path or chunk id is
checked against the roots before anything is read; results are JSON text.

Under load (issue #17): arguments are validated against the tool's JSON
schema before a call is queued, at most ``MAX_IN_FLIGHT`` calls run at once on
worker threads (see :class:`Tools` for what they may share), and a call the
client cancelled or abandoned stops.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sqlite3
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from docindex.api.index import Index
from docindex.errors import BadInputError, DocindexError, install_hint
from docindex.models.limits import (
    MAX_CHUNK_ID_CHARS,
    MAX_GLOB_CHARS,
    MAX_MCP_LINE_BYTES,
    MAX_OFFSET,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
)
from docindex.search.engine import MODES

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError
    from mcp.shared.message import SessionMessage

    from docindex.api.records import Vocabulary
    from docindex.models import Progress, QueryResult
    from docindex.models.serialize import JSONObject, JSONValue
    from docindex.store.location import ServerUrl

# A JSON schema as the tools list it (built here, only handed to the SDK).
Schema = dict[str, object]

INSTALL_HINT = f"the MCP server needs the mcp extra: {install_hint('mcp')}"
MAX_BATCH = 10
MAX_ENUM = 100  # a facet with more values gets no enum (schemas stay small)
MAX_IN_FLIGHT = 4  # tool calls running at once (threads); the rest wait
MAX_PENDING = 2048  # running + waiting; past it a call is refused as busy


# -- schemas --------------------------------------------------------------------


def _int(description: str, default: int, lo: int, hi: int) -> Schema:
    return {"type": "integer", "minimum": lo, "maximum": hi, "default": default,
            "description": description}  # fmt: skip


def _bool(description: str, default: bool) -> Schema:
    return {"type": "boolean", "default": default, "description": description}


def _str(description: str, max_length: int, min_length: int = 0) -> Schema:
    schema: Schema = {"type": "string", "maxLength": max_length,
                              "description": description}  # fmt: skip
    if min_length:
        schema["minLength"] = min_length
    return schema


def _object(props: dict[str, object], required: tuple[str, ...] = ()) -> Schema:
    schema: Schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def _type_schema(types: list[str]) -> Schema:
    one: Schema = {"type": "string", "maxLength": 100}
    if types:
        one["enum"] = types
    return {
        "anyOf": [one, {"type": "array", "items": one, "maxItems": 100}],
        "description": "Only documents of this type, or of any of these types.",
    }


def _where_schema(facets: dict[str, list[str]]) -> Schema:
    value = {"type": "string", "maxLength": MAX_QUERY_CHARS}
    props = {
        key: {**value, **({"enum": values} if len(values) <= MAX_ENUM else {})}
        for key, values in sorted(facets.items())
    }
    return {
        "type": "object",
        "properties": props,
        "additionalProperties": value,
        "propertyNames": {"maxLength": MAX_QUERY_CHARS},
        "maxProperties": 100,
        "description": "Front-matter filters, key -> value (all must hold).",
    }


def tool_schemas(vocab: Vocabulary) -> dict[str, tuple[str, Schema]]:
    """Tool name -> (description, input JSON schema) for the index's vocabulary.

    Argument names are snake_case. String lengths and integer ranges are the
    limits of :mod:`docindex.limits`; calls are validated against these schemas
    (without the vocabulary's enums) before they are queued.

    Args:
        vocab: ``Index.vocabulary()``: ``types`` and ``facets`` present.
    """
    types, facets = list(vocab.get("types") or []), dict(vocab.get("facets") or {})
    path_doc = "A file path relative to a root, or absolute inside one."
    path = _str(path_doc, MAX_PATH_CHARS, 1)
    filters = {
        "type": _type_schema(types),
        "path": _str(
            "Only documents under this folder, this file, or matching "
            "this glob (root-relative).",
            MAX_GLOB_CHARS,
        ),
        "where": _where_schema(facets),
    }  # fmt: skip
    query_props = {
        "query": _str('What to look for, in plain words (any language); '
                      '"exact phrase", +required, -excluded, -"excluded phrase".',
                      MAX_QUERY_CHARS, 1),
        "top_k": _int("Number of hits.", 10, 1, 100),
        "mode": {"type": "string", "enum": list(MODES), "default": "auto",
                 "description": "Rankings to use: auto (hybrid), lexical, semantic."},
        "highlight": _bool("Mark matches in snippets with **...**.", True),
        "snippet_chars": _int("Snippet length in characters.", 200, 20, 5000),
        **filters,
        "cursor": _str("next_cursor of a previous result, for the next page.", 1024),
    }  # fmt: skip
    batch_item = _object({k: v for k, v in query_props.items() if k != "cursor"},
                         ("query",))  # fmt: skip
    return {
        "doc_scan": ("Index new and changed files under the roots (or one path).",
                     _object({"path": _str(path_doc + " Default: all roots.",
                                           MAX_PATH_CHARS),
                              "force": _bool("Re-index unchanged files.", False)})),
        "doc_query": ("Search the index; hits carry path, line, chunk_id, score (vs the "
                      "best hit) and coverage (0-1: share of the query the hit holds). "
                      "An empty or weak result carries a hint; did_you_mean suggests "
                      "spellings.", _object(query_props, ("query",))),
        "doc_reindex": ("Re-read every file; full rebuilds the index file.",
                        _object({"full": _bool("Rebuild from scratch.", False)})),
        "doc_stats": ("What the index holds: roots, counts, types, facets.", _object({})),
        "get_doc": ("A chunk by chunk_id (or FILE[:LINE]) with neighbouring chunks.",
                    _object({"chunk_id": _str("A chunk id from a hit, or FILE[:LINE].",
                                              MAX_CHUNK_ID_CHARS, 1),
                             "context": _int("Neighbouring chunks on each side.",
                                             0, 0, 20)}, ("chunk_id",))),
        "get_outline": ("A document's title and headings with levels and lines.",
                        _object({"path": path,
                                 "max_depth": _int("Heading levels, from the top level present.", 6, 1, 6)},
                                ("path",))),
        "get_section": ("The text under a heading (case-insensitive) with its lines.",
                        _object({"path": path,
                                 "section": _str("Heading text.", MAX_QUERY_CHARS, 1),
                                 "include_subsections": _bool("Include sub-headings.",
                                                              True)},
                                ("path", "section"))),
        "find_related": ("Documents nearest by vector to a chunk or a whole file: "
                         "one hit each, its other near chunks in folded.",
                         _object({"path": path,
                                  "chunk_id": _str("Optional chunk of that file.",
                                                   MAX_CHUNK_ID_CHARS),
                                  "limit": _int("Number of documents.", 10, 1, 100),
                                  "same_file": _bool("Include the same file.", False)},
                                 ("path",))),
        "list_documents": ("Indexed documents with title, type, size and segments.",
                           _object({"path": filters["path"], "type": filters["type"],
                                    "limit": _int("Page size.", 50, 1, 500),
                                    "offset": _int("Documents to skip.", 0, 0,
                                                   MAX_OFFSET)})),
        "search_batch": (f"Run up to {MAX_BATCH} queries at once.",
                         _object({"queries": {"type": "array", "items": batch_item,
                                              "minItems": 1, "maxItems": MAX_BATCH},
                                  "limit": _int("Default top_k per query.", 5, 1, 100)},
                                 ("queries",))),
    }  # fmt: skip


# -- argument validation --------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _validators() -> dict[str, Draft202012Validator]:
    """One compiled validator per tool, for the schemas without index enums."""
    from jsonschema import Draft202012Validator

    return {
        name: Draft202012Validator(schema)
        for name, (_, schema) in tool_schemas({}).items()
    }


def validate_arguments(name: str, args: object) -> JSONObject:
    """``args`` checked against tool ``name``'s schema; nulls mean "not given".

    Runs before a call is queued, so a queued call holds at most the limits'
    worth of text and a bad one costs nothing but this check.

    Raises:
        BadInputError: unknown tool, or the first argument at fault (named).
    """
    validator = _validators().get(name)
    if validator is None:
        raise BadInputError(f"unknown tool {_clip(name)!r}")
    if not isinstance(args, dict):
        raise BadInputError("arguments must be an object")
    given = {k: v for k, v in args.items() if v is not None}
    for error in validator.iter_errors(given):
        raise BadInputError(_message(error, validator.schema))
    return given


def _clip(value: object, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _message(error: ValidationError, schema: Mapping[str, object]) -> str:
    """A one-line message that names the argument, never echoing a huge value."""
    where = "/".join(str(p) for p in error.absolute_path) or "arguments"
    kind, limit, value = error.validator, error.validator_value, error.instance
    if kind == "additionalProperties":
        known = error.schema.get("properties", {})
        extra = sorted(k for k in value if k not in known)
        inside = "" if where == "arguments" else f" in {where}"
        return (f"unknown argument {_clip(extra[0])!r}{inside}; names are "
                "snake_case (top_k, snippet_chars)")  # fmt: skip
    if kind == "required":
        missing = [k for k in limit if k not in value]
        prefix = "" if where == "arguments" else f"{where}: "
        return f"{prefix}{missing[0]} is required"
    if kind == "type":
        return f"{where} must be of type {limit}, not {type(value).__name__}"
    if kind in ("minimum", "maximum"):
        lo, hi = error.schema.get("minimum"), error.schema.get("maximum")
        return f"{where} must be in {lo}..{hi:,}"
    if kind == "maxLength":
        return f"{where} is {len(value):,} characters long; the limit is {limit:,}"
    if kind == "minLength":
        return f"{where} must not be empty"
    if kind == "enum":
        return f"{where} must be one of {', '.join(map(str, limit))}"
    if kind in ("maxItems", "maxProperties"):
        return f"{where}: at most {limit} items"
    if kind == "minItems":
        return f"{where}: at least {limit} item"
    if kind == "anyOf":
        return f"{where} must be a string or a list of strings (each at most 100)"
    return f"{where}: invalid value ({kind})"


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
            raise BadInputError(f"unknown tool {_clip(name)!r}")
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
        limit = _get_int(args, "limit", 5)
        results = []
        for item in cast("list[JSONObject]", args["queries"]):
            stop.check()
            result = _query(self.plain, item, limit)
            results.append(json.loads(_to_text(result)))
        return {"results": results}


# -- the server -----------------------------------------------------------------


def _to_text(value: object) -> str:
    from docindex.models.serialize import to_json

    return to_json(value)


def _error(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


class _Runner:
    """Runs tool calls on ``MAX_IN_FLIGHT`` threads; the rest wait in a bounded queue.

    A call is validated first (cheap, on the event loop), then waits for one of
    the slots. At most ``MAX_PENDING`` calls may be running or waiting; past
    that a call is refused at once ("busy"), so a client pipelining without
    bound cannot grow the server's memory without bound. When the SDK cancels
    a call (``notifications/cancelled``, or the client went away), a waiting
    call leaves the queue and a running one is told to stop (scans check in at
    every file), and its slot is held until its thread has let go.
    """

    def __init__(self, tools: Tools) -> None:
        import anyio

        from docindex.config import Config, from_env
        from docindex.serve.reach import Reach

        self.tools = tools
        # the index server may restart under us: calls wait for it (#44)
        self.reach = Reach(from_env(Config()).reconnect_timeout_s, _log)
        self.slots = anyio.Semaphore(MAX_IN_FLIGHT)
        self.pool = ThreadPoolExecutor(MAX_IN_FLIGHT, thread_name_prefix="docindex-mcp")
        self.pending = 0

    async def run(self, name: str, raw: object) -> tuple[str, bool]:
        """(JSON text, is_error) for one call."""
        import anyio

        try:
            args = validate_arguments(name, raw)
        except DocindexError as exc:
            return _error(str(exc)), True
        if self.pending >= MAX_PENDING:
            return _error(f"server busy: {self.pending} calls pending; retry"), True
        self.pending += 1
        try:
            async with self.slots:
                cancelled = threading.Event()
                future = self.pool.submit(self._call, name, args, cancelled)
                try:
                    return await asyncio.wrap_future(future)
                except anyio.get_cancelled_exc_class():
                    cancelled.set()
                    with anyio.CancelScope(shield=True):
                        await asyncio.wait([asyncio.wrap_future(future)])
                    raise
        finally:
            self.pending -= 1

    def _call(
        self, name: str, args: JSONObject, cancelled: threading.Event
    ) -> tuple[str, bool]:
        """One call on a worker thread; every failure becomes a tool error."""
        try:
            answer = self.reach.call(
                lambda: _translated(self.tools.call, name, args, cancelled), cancelled
            )
            return _to_text(answer), False
        except DocindexError as exc:
            return _error(str(exc)), True
        except Exception as exc:  # keep serving: one bad call must not end the session
            return _error(f"internal error: {type(exc).__name__}: {exc}"), True

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _log(message: str) -> None:
    """One line on stderr, which an MCP client shows as the server's log."""
    print(f"docindex mcp: {message}", file=sys.stderr, flush=True)


def _translated(
    fn: Callable[[str, JSONObject, threading.Event], object], name: str,
    args: JSONObject, cancelled: threading.Event,
) -> object:  # fmt: skip
    """``fn(...)`` with a database's own errors as DocindexErrors (so a lost
    PostgreSQL connection is an ``IndexUnreachableError`` to retry on)."""
    try:
        return fn(name, args, cancelled)
    except sqlite3.Error as exc:
        from docindex.store import translate

        raise translate(exc, "the index") from None
    except DocindexError:
        raise
    except Exception as exc:
        if not type(exc).__module__.startswith("psycopg"):
            raise
        from docindex.store.postgres import translate as pg_translate

        raise pg_translate(exc, "the index") from None


def build_server(tools: Tools, runner: _Runner) -> Any:
    """A low-level MCP ``Server`` whose tool calls go through ``runner``."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from docindex import __version__

    async def list_tools(ctx: Any, params: Any) -> Any:
        vocab = await anyio.to_thread.run_sync(tools.vocabulary)
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=desc, input_schema=schema)
            for name, (desc, schema) in tool_schemas(vocab).items()
        ])  # fmt: skip

    async def call_tool(ctx: Any, params: Any) -> Any:
        text, error = await runner.run(params.name, params.arguments or {})
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=error
        )

    return Server(
        "docindex", version=__version__,
        instructions="Search local documents; cite path:line; open chunks by chunk_id.",
        on_list_tools=list_tools, on_call_tool=call_tool,
    )  # fmt: skip


class _Answers:
    """Requests read but not yet answered, so end of input can wait for them (#38).

    When stdin closes the SDK cancels every call still running and answers it
    "-32000 Connection closed"; a client that writes its calls and closes its
    end (``printf ... | docindex mcp``) lost them all. The reader keeps the
    server's input open until each request it forwarded has its answer.
    """

    def __init__(self, write_stream: Any) -> None:
        import anyio

        self._write = write_stream
        self.open: set[str | int] = set()  # JSON-RPC request ids
        self.changed = anyio.Event()

    def asked(self, item: SessionMessage) -> None:
        message = getattr(item.message, "root", item.message)
        method = getattr(message, "method", None)
        ident = getattr(message, "id", None)
        if method and ident is not None:
            self.open.add(ident)
        elif method == "notifications/cancelled":  # a cancelled call gets no answer
            params = getattr(message, "params", None)
            if isinstance(params, dict):
                gone = params.get("requestId")
            else:
                gone = getattr(params, "request_id", getattr(params, "requestId", None))
            self.open.discard(gone)
            self.changed.set()

    async def send(self, item: SessionMessage) -> None:
        await self._write.send(item)
        message = getattr(item.message, "root", item.message)
        if getattr(message, "method", None) is None:
            ident = getattr(message, "id", None)
            if ident in self.open:
                self.open.discard(ident)
                self.changed.set()

    async def all_answered(self, closing: threading.Event | None = None) -> None:
        import anyio

        if closing is not None:
            closing.set()  # running scans stop at their next file, answered
        while self.open:
            self.changed = anyio.Event()
            await self.changed.wait()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._write, name)

    async def __aenter__(self) -> _Answers:
        await self._write.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        done: bool | None = await self._write.__aexit__(*exc)
        return done


async def _answer_unparsable(
    source: Any, sink: Any, write_stream: Any, answers: _Answers | None = None,
    closing: threading.Event | None = None,
) -> None:  # fmt: skip
    """Forward messages to the server; answer a line that is not JSON-RPC.

    The SDK's stdio transport only logs such a line; JSON-RPC 2.0 asks for an
    error reply with a null id: -32700 for text that is not JSON, -32600 for
    JSON that is not a request. At end of input, the server's input closes
    once every forwarded request is answered (``_Answers``).
    """
    import mcp.types as types
    from mcp.shared.message import SessionMessage

    async with sink:
        async for item in source:
            if not isinstance(item, Exception):
                if answers is not None:
                    answers.asked(item)
                await sink.send(item)
                continue
            errors: list[dict[str, object]] = getattr(item, "errors", list)()
            kinds = {e.get("type") for e in errors}
            parse = "json_invalid" in kinds or not kinds
            code, text = (
                (-32700, "Parse error") if parse else (-32600, "Invalid Request")
            )
            reply = types.JSONRPCError(jsonrpc="2.0", id=_request_id(errors),
                                       error=types.ErrorData(code=code, message=text))  # fmt: skip
            await write_stream.send(SessionMessage(reply))
        if answers is not None:
            await answers.all_answered(closing)


def _request_id(errors: list[dict[str, object]]) -> str | int | None:
    """The id of a request that failed validation, when one can be read (#33).

    A field the SDK rejects (a lone surrogate in a string, nesting deeper than
    its parser goes) must not cost the caller its answer: the reply carries
    the request's own id, found in the validated object or, for text the
    parser gave up on, by scanning the line's top level.
    """
    for error in errors:
        given = error.get("input") if isinstance(error, dict) else None
        if isinstance(given, dict):
            found = given.get("id")
            if isinstance(found, str | int) and not isinstance(found, bool):
                return found
        elif isinstance(given, str | bytes):
            text = given if isinstance(given, str) else given.decode("utf-8", "replace")
            found = _scan_id(text)
            if found is not None:
                return found
    return None


def _scan_id(line: str) -> str | int | None:
    """The ``id`` member of the JSON object ``line`` at its top level, without
    parsing the rest (no recursion: a 100k-deep value costs one pass)."""
    decoder = json.JSONDecoder()
    depth, i, n = 0, 0, len(line)
    while i < n:
        char = line[i]
        if char == '"':
            try:
                text, end = decoder.raw_decode(line, i)  # one string: flat
            except ValueError:
                return None
            if depth == 1 and text == "id":
                j = end
                while j < n and line[j] in " \t\r\n":
                    j += 1
                if j < n and line[j] == ":":
                    j += 1
                    while j < n and line[j] in " \t\r\n":
                        j += 1
                    try:
                        value, _ = decoder.raw_decode(line, j)
                    except (ValueError, RecursionError):
                        return None
                    if isinstance(value, str | int) and not isinstance(value, bool):
                        return value
                    return None
            i = end
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        i += 1
    return None


class CappedLines:
    """Lines of a binary stream as text, each at most ``limit`` bytes.

    The SDK reads stdin a line at a time with no bound, so one line without a
    newline could grow until memory ran out. A longer line is read to its end
    in small pieces and dropped, and a line that is not JSON takes its place:
    the client gets a -32700 reply and the session goes on.
    """

    def __init__(self, raw: BinaryIO, limit: int = MAX_MCP_LINE_BYTES) -> None:
        self._raw = raw
        self._limit = limit

    def readline(self) -> str:
        line = self._raw.readline(self._limit + 1)
        if len(line) <= self._limit or line.endswith(b"\n"):
            return line.decode("utf-8", "replace")
        while (rest := self._raw.readline(1 << 16)) and not rest.endswith(b"\n"):
            pass
        return "line too long\n" if rest else ""

    def close(self) -> None:
        """Nothing to close: stdin belongs to the process."""


def _warm(index: Index) -> None:
    """Decode the vectors while the client starts (``Index.warm``): the first
    ``find_related`` then answers in milliseconds. Nothing to warm (no index
    yet, no vectors) is no error."""
    try:
        index.warm()
    except (DocindexError, OSError, sqlite3.Error):
        pass


def serve(db: str | Path | ServerUrl | None, roots: list[str]) -> None:
    """Run the MCP server on stdin/stdout until the client disconnects.

    Raises:
        DocindexError: the ``mcp`` package is not installed (with an install hint).
    """
    try:
        import anyio
        from mcp.server.stdio import stdio_server
    except ImportError as exc:
        raise DocindexError(INSTALL_HINT) from exc
    tools = Tools(db, roots)
    runner = _Runner(tools)
    runner.pool.submit(_warm, tools.index)
    server = build_server(tools, runner)

    async def main() -> None:
        stdin = anyio.wrap_file(CappedLines(sys.stdin.buffer))  # type: ignore[arg-type]
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):
            send, receive = anyio.create_memory_object_stream[Any](0)
            answers = _Answers(write_stream)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_answer_unparsable, read_stream, send, write_stream,
                              answers, tools.closing)  # fmt: skip
                tg.start_soon(_end_when_given_up, runner, tg.cancel_scope)
                await server.run(receive, answers,
                                 server.create_initialization_options())  # fmt: skip
                tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        runner.close()
    if runner.reach.gave_up.is_set():
        from docindex.errors import IndexUnreachableError

        raise IndexUnreachableError(runner.reach.reason)


async def _end_when_given_up(runner: _Runner, scope: Any) -> None:
    """Stop serving once the index server stayed away past the limit (#44)."""
    import anyio

    while not runner.reach.gave_up.is_set():
        await anyio.sleep(1.0)
    scope.cancel()
    # A thread blocked reading stdin does not see the cancel: if the loop has
    # not ended in a few seconds, end the process with the same status.
    threading.Thread(target=_exit_soon, args=(3.0,), daemon=True).start()


def _exit_soon(delay: float) -> None:
    import os
    import time

    time.sleep(delay)
    sys.stdout.flush()
    os._exit(1)
