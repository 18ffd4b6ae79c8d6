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

This module is the transport (the SDK's server, the stdio lines, the calls in
flight); the schemas are in ``mcp_schemas``, the tools in ``mcp_tools`` (#49).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from docindex.api.index import Index
from docindex.errors import DocindexError, install_hint
from docindex.models.limits import MAX_MCP_LINE_BYTES
from docindex.serve.mcp_schemas import MAX_BATCH as MAX_BATCH
from docindex.serve.mcp_schemas import tool_schemas, validate_arguments
from docindex.serve.mcp_tools import CallCancelledError as CallCancelledError
from docindex.serve.mcp_tools import Tools as Tools

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

    from docindex.models.serialize import JSONObject
    from docindex.store.location import ServerUrl

INSTALL_HINT = f"the MCP server needs the mcp extra: {install_hint('mcp')}"
MAX_IN_FLIGHT = 4  # tool calls running at once (threads); the rest wait
MAX_PENDING = 2048  # running + waiting; past it a call is refused as busy


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
