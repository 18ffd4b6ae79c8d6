"""The ``docindex`` command: parse, call one core function, render. No SQL, no maths."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from docindex import __version__
from docindex.cli.output import ARGV_META, COLOR_OPTION, db_option, json_option
from docindex.cli.output import NdjsonProgress as _NdjsonProgress
from docindex.cli.output import color as _color
from docindex.cli.output import echo_json as _echo_json
from docindex.cli.output import find_db as _find_db
from docindex.cli.output import out_console as _out_console
from docindex.cli.output import piped as _piped
from docindex.cli.output import progress_bar as _progress
from docindex.config import PROVIDERS
from docindex.errors import DocindexError, IndexBusyError, IndexNotWritableError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import TextIO

    from docindex.api.index import Index
    from docindex.cli.signals import Signals
    from docindex.ingest.watch import BatchReport
    from docindex.models import Progress, QueryResult, ScanResult
    from docindex.serve.server import Serving
    from docindex.store.location import ServerUrl

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


_SIGNALS = "docindex.cli.signals"
_ARGV = ARGV_META


class _Group(click.Group):
    """Turns every expected failure into a one-line message (no traceback).

    Exit 1 for a runtime failure, 2 for misuse (``DocindexError.exit_code``),
    0 when the reader of a pipe stopped early, 128 + N after signal N (Ctrl-C,
    SIGTERM, SIGHUP; issue #17, see ``signals.Signals``).
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGV] = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _safe_usage(exc, args) from None

    def invoke(self, ctx: click.Context) -> object:
        from docindex.cli.signals import Interrupted, Signals

        _warn_password_in_argv(ctx.meta.get(_ARGV, []))
        with Signals() as signals:
            ctx.meta[_SIGNALS] = signals
            try:
                return self._invoke(ctx)
            except Interrupted as exc:
                click.echo(
                    "interrupted; the index keeps its last committed state", err=True
                )
                sys.exit(exc.exit_code)

    def _invoke(self, ctx: click.Context) -> object:
        argv = ctx.meta.get(_ARGV, [])
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # a command's own options and arguments
            raise _safe_usage(exc, argv) from None
        except IndexNotWritableError as exc:
            from docindex.cli import remedy  # error paths only: `re`, `shlex`

            raise _failure(remedy.elsewhere(argv, exc), exc.exit_code) from None
        except IndexBusyError as exc:
            from docindex.cli import remedy

            raise _failure(remedy.busy(str(exc), argv), exc.exit_code) from None
        except DocindexError as exc:
            from docindex.cli import remedy

            raise _failure(remedy.with_db(str(exc), argv), exc.exit_code) from None
        except sqlite3.Error as exc:
            from docindex.api.workspace import resolve_db
            from docindex.cli.output import DB_META
            from docindex.store import translate

            # The index the command used, so the message names it and its fix.
            try:
                where = resolve_db(ctx.meta.get(DB_META))
                path: Path | str = where if isinstance(where, Path) else ""
            except Exception:  # a message without the path is still a message
                path = ""
            err = translate(exc, path)
            from docindex.cli import remedy

            if isinstance(err, IndexBusyError):
                raise _failure(remedy.busy(str(err), argv), err.exit_code) from None
            raise _failure(remedy.with_db(str(err), argv), err.exit_code) from None
        except KeyboardInterrupt:
            click.echo(
                "interrupted; the index keeps its last committed state", err=True
            )
            sys.exit(130)
        except PermissionError as exc:
            # Another user's index is private to its owner (issue #33).
            from docindex.cli import remedy

            raise _failure(remedy.permission(exc), 1) from None
        except BrokenPipeError:
            # `docindex list | head`: the reader has all it wanted (issue #20).
            # Point stdout at /dev/null so the interpreter's final flush is quiet.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(0)
        except OSError as exc:
            from docindex.cli import remedy

            message = remedy.os_error(exc, argv)
            if message is None:
                raise
            raise _failure(message, 1) from None
        except Exception as exc:
            if not type(exc).__module__.startswith("psycopg"):
                raise
            from docindex.store.postgres import translate as pg_translate

            err = pg_translate(exc, "")
            raise _failure(str(err), err.exit_code) from None


def _warn_password_in_argv(argv: list[str]) -> None:
    """A password in ``--db`` is in ``ps`` for every local user: say so (#44)."""
    from docindex.cli.remedy import given_db

    db = given_db(argv)
    if db is None or "://" not in db:
        return
    from docindex.store.location import ServerUrl, is_server_url

    if is_server_url(db) and ServerUrl(db).has_password:
        click.echo(
            "warning: the password in --db is visible to every user of this "
            "machine (ps); keep it in ~/.pgpass, PGPASSFILE or a service file, "
            "or pass the URL in DOCINDEX_DB (README: Share an index with a team)",
            err=True,
        )


class _Failure(click.ClickException):
    """A core runtime failure as ``Error: message`` (exit 1)."""


class _Misuse(click.ClickException):
    """Something the user named does not exist or is malformed (exit 2, no usage)."""

    exit_code = 2


def _failure(message: str, exit_code: int) -> click.ClickException:
    """The one exit for expected failures: no password in any error (#44), and
    what the user typed is echoed with terminal controls escaped (#45)."""
    from docindex.cli.remedy import scrubbed
    from docindex.cli.render import term_safe

    ctx = click.get_current_context(silent=True)
    argv = ctx.find_root().meta.get(_ARGV, []) if ctx else []
    message = term_safe(scrubbed(message, argv))
    return _Misuse(message) if exit_code == 2 else _Failure(message)


def _safe_usage(exc: click.UsageError, argv: list[str]) -> click.UsageError:
    """A usage error as click words it, escaped, with how to search for "-word".

    ``docindex query -yield`` is "No such option '-y'": a query that starts
    with "-" goes after "--" (#45).
    """
    from docindex.cli.render import term_safe

    message = exc.format_message()  # "Invalid value for '--top': ..." kept
    if isinstance(exc, click.NoSuchOption) and exc.ctx is not None:
        if exc.ctx.command.name == "query":
            import shlex

            typed = next((a for a in argv if a.startswith(exc.option_name)), "")
            if typed and not typed.startswith("--"):
                message += (
                    f" Is {typed!r} the query? A query that starts with '-' goes "
                    f"after '--': `docindex query -- {shlex.quote(typed)}` (in a "
                    "query, -word leaves out the chunks holding the word)"
                )
    return click.UsageError(term_safe(message), ctx=exc.ctx)


def _signals() -> Signals:
    """The running command's ``signals.Signals`` (installed by ``_Group``)."""
    signals: Signals = click.get_current_context().meta[_SIGNALS]
    return signals


def _exit_if_signalled(signals: Signals) -> None:
    """Exit 128 + N when signal N stopped a graceful command (issue #17)."""
    if signals.signum:
        sys.exit(signals.exit_code)


@click.group(cls=_Group, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="docindex")
def cli() -> None:
    """docindex: turn folders of documents into a searchable local knowledge base.

    Scan a folder once, then ask in plain words (English, 中文, 日本語, 한국어):

        docindex scan ~/notes && docindex query "how do I rotate the keys"

    The index is found by one rule for every command: --db, else DOCINDEX_DB,
    else the nearest .docindex/index.db upward from the folder a command names
    (scan PATH, --root), else upward from the current directory.
    """


def _not_nan(value: float) -> float:
    """FloatRange lets NaN through (every comparison with it is false)."""
    if value != value:
        raise click.BadParameter("must be a number in 0..1, not nan")
    return value


@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Add a root directory (repeatable; remembered by the index).",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="PATTERN",
    help="gitignore-style exclude pattern (repeatable; !negation re-includes).",
)
@click.option("--force", is_flag=True, help="Re-index every file, even unchanged ones.")
@click.option(
    "--hidden/--no-hidden",
    default=None,
    help="Index hidden files too (remembered here for this index).",
)
@click.option(
    "--follow-symlinks/--no-follow-symlinks",
    default=None,
    help="Follow symlinks (remembered here for this index).",
)
@click.option(
    "--gitignore/--no-gitignore",
    default=None,
    help="Honour .gitignore files (default; remembered here for this index).",
)
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    help="Embedding provider (changing it needs reindex --full).",
)
@click.option(
    "--ocr/--no-ocr",
    default=None,
    help="Read scanned PDF pages and images with tesseract (config: ocr = true).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary on stderr.")
@click.option(
    "--progress",
    "ndjson",
    is_flag=True,
    help="With --json: stream progress events as JSON lines before the result.",
)
@db_option
@json_option
def scan(path: Path | None, roots: tuple[str, ...], exclude: tuple[str, ...],
         force: bool, hidden: bool | None, follow_symlinks: bool | None,
         gitignore: bool | None, provider: str | None, ocr: bool | None,
         quiet: bool, ndjson: bool, db: str | None, as_json: bool) -> None:  # fmt: skip
    """Scan the roots incrementally; PATH limits the scan to a file or folder inside them.

    Without an index, PATH (a directory) becomes the first root and the index is
    created at PATH/.docindex/index.db. A root is read on this machine only
    when you named it here (scan DIR, --root, roots add/accept) or the index
    lives in it; see `docindex roots accept`.
    """
    from docindex.api.index import Index

    if ndjson and not as_json:
        raise click.UsageError("--progress streams JSON lines: use it with --json")
    progress = _NdjsonProgress() if ndjson else _progress(not (as_json or quiet))
    signals = _signals()
    result = Index(db, roots=roots).scan(
        path, exclude=exclude, force=force, hidden=hidden,
        follow_symlinks=follow_symlinks, gitignore=gitignore,
        provider=provider, progress=progress, stop=signals.graceful().is_set,
        ocr=ocr, on_notice=_notice,
    )  # fmt: skip
    _print_scan(result, as_json, quiet, _command_line(), event=ndjson)
    _exit_if_signalled(signals)


def _notice(message: str) -> None:
    """A line the user should see now (e.g. a scan waiting for another writer)."""
    from docindex.cli.remedy import scrubbed

    root = click.get_current_context().find_root()
    click.echo(scrubbed(message, root.meta.get(_ARGV, [])), err=True)


def _command_line() -> str:
    """The command as the user typed it, to run again (issue #38), masked (#44)."""
    from docindex.cli.remedy import command_line

    root = click.get_current_context().find_root()
    return command_line(root.meta.get(_ARGV, []))


def _print_scan(
    result: ScanResult, as_json: bool, quiet: bool, again: str, event: bool = False
) -> None:
    from docindex.cli.render import interrupted_text, scan_text, to_dict

    if as_json:
        data = to_dict(result)
        _echo_json({"event": "result", **data} if event else data)
    elif not quiet and not result.interrupted:
        click.echo(scan_text(result), err=True, color=_color())
    if result.interrupted:  # one line, even with --quiet: the work is unfinished
        click.echo(interrupted_text(result, again), err=True)


@cli.command()
@click.argument("text", required=False)
@click.option(
    "--top",
    "-n",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="Number of hits (up to 1000).",
)
@click.option(
    "--mode",
    type=click.Choice(["auto", "lexical", "semantic"]),
    default="auto",
    show_default=True,
    help="Which rankings to use.",
)
@click.option(
    "--snippet",
    "snippet_chars",
    type=click.IntRange(20, 5000),
    default=200,
    show_default=True,
    help="Snippet length in characters.",
)
@click.option(
    "--no-highlight",
    is_flag=True,
    help="No highlighted matches (--json: empty highlights).",
)
@click.option(
    "--min-score",
    type=click.FloatRange(0.0, 1.0),
    callback=lambda ctx, param, value: _not_nan(value),
    default=0.0,
    help="Drop hits scoring below this (0..1, same meaning in every mode).",
)
@click.option(
    "--queries",
    type=click.File("r", encoding="utf-8"),
    help='Read one query per line, or {"id": ..., "query": ...} JSON lines '
    "(- for stdin); print JSONL.",
)
@click.option("--files", is_flag=True, help="One best hit per document.")
@click.option("--explain", is_flag=True, help="Show each list's rank and raw score.")
@click.option(
    "--type",
    "types",
    multiple=True,
    metavar="EXT",
    help="Only documents of this type (md, txt, pdf, docx, ...; repeatable).",
)
@click.option(
    "--path",
    "path_glob",
    metavar="PATH",
    help="Only documents under this folder, this file, or matching this glob: "
    "absolute, relative to the current folder, or to a root (en/apisix).",
)
@click.option(
    "--root",
    "only_roots",
    multiple=True,
    metavar="DIR",
    help="Only documents of this root of the index (repeatable).",
)
@click.option(
    "--where",
    "where",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only documents whose front matter has KEY=VALUE (repeatable).",
)
@click.option(
    "--per-doc",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Hits a document shows in a page; the rest fold behind them (0: no limit).",
)
@click.option("--cursor", help="Continue from a previous result's next_cursor.")
@click.option(
    "--context",
    "-C",
    "context_lines",
    type=click.IntRange(0, 50),
    default=0,
    help="Print N lines of the document around each hit's line.",
)
@click.option(
    "--vimgrep",
    is_flag=True,
    help="One line per hit as path:line:col:text (ripgrep style, for editors).",
)
@db_option
@json_option
def query(text: str | None, top: int, mode: str, snippet_chars: int,
          no_highlight: bool, min_score: float, queries: TextIO | None, files: bool,
          explain: bool, types: tuple[str, ...], path_glob: str | None,
          where: tuple[str, ...], per_doc: int, cursor: str | None,
          only_roots: tuple[str, ...], context_lines: int, vimgrep: bool,
          db: str | None, as_json: bool) -> None:  # fmt: skip
    """Search the index. TEXT may also come on stdin.

    TEXT is plain words, with "exact phrase", +required, -excluded and
    -"excluded phrase"; anything else (FTS5 syntax too) is plain text. Put
    -- before a TEXT that starts with "-".

    Exit status 0 even with zero hits; 1 on a runtime failure; 2 on misuse.
    """
    from docindex.api.index import Index
    from docindex.cli.render import hits_text, vimgrep_lines

    if (as_json or queries is not None) and (vimgrep or context_lines):
        raise click.UsageError(
            "--vimgrep and --context shape the text output; JSON has each hit's "
            "lines (start_line, end_line): drop --json/--queries, or use `docindex "
            "show CHUNK_ID` for the text"
        )
    pairs = []
    for item in where:
        if "=" not in item:
            raise click.BadParameter("expected KEY=VALUE", param_hint="--where")
        key, _, value = item.partition("=")
        pairs.append((key.strip(), value.strip()))
    index = Index(_find_db(db))
    if queries is not None:
        if text:
            raise click.UsageError("give TEXT or --queries, not both")
        _batch(index, queries, lambda texts: index.queries(
            texts, top=top, mode=mode, files=files, path=path_glob, types=types,
            where=pairs, snippet_chars=snippet_chars, highlight=not no_highlight,
            only_roots=only_roots, cwd=Path.cwd(),
        ))  # fmt: skip
        return
    if text is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError("missing query TEXT (or pipe it on stdin)")
        text = sys.stdin.read().strip()
    result = index.query(
        text, top=top, mode=mode, snippet_chars=snippet_chars,
        highlight=not no_highlight, min_score=min_score, files=files,
        explain=explain, types=types, path=path_glob, where=pairs, per_doc=per_doc,
        cursor=cursor, only_roots=only_roots, cwd=Path.cwd(),
    )  # fmt: skip
    if as_json:
        _echo_json(result)
        return
    lines = None
    if (vimgrep or context_lines) and result.hits:
        lines = index.lines_around(result.hits, context=0 if vimgrep else context_lines)
    if vimgrep:
        for line in vimgrep_lines(result.hits, lines or []):
            click.echo(line)
        return
    click.echo(
        hits_text(result, explain=explain, full_paths=_piped(), context=lines),
        color=_color(),
    )


def _batch(
    index: Index, queries: TextIO,
    run: Callable[[Iterator[str]], Iterator[QueryResult]],
) -> None:  # fmt: skip
    """``--queries``: one JSON line out per line in; a JSON line's ``id`` is echoed."""
    from docindex.cli.render import to_dict

    ids: list[object] = []

    def texts() -> Iterator[str]:
        for number, raw in enumerate(queries, start=1):
            line = raw.rstrip("\n")
            if line.lstrip().startswith("{"):
                try:
                    item = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise click.BadParameter(
                        f"line {number} is not valid JSON ({exc.msg})",
                        param_hint="--queries",
                    ) from None
                if not isinstance(item, dict) or not isinstance(item.get("query"), str):
                    raise click.BadParameter(
                        f'line {number}: expected {{"id": ..., "query": "..."}}',
                        param_hint="--queries",
                    )
                ids.append(item.get("id"))
                yield item["query"]
            else:
                ids.append(None)
                yield line

    for result in run(texts()):
        data = to_dict(result)
        qid = ids.pop(0)
        _echo_json(data if qid is None else {"id": qid, **data})


@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option(
    "--full", is_flag=True, help="Drop the index and rebuild it from scratch."
)
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    help="Embedding provider for the rebuilt index (with --full).",
)
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help="With --full: the roots to rebuild, when a damaged index cannot say.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary on stderr.")
@click.option(
    "--progress",
    "ndjson",
    is_flag=True,
    help="With --json: stream progress events as JSON lines before the result.",
)
@db_option
@json_option
def reindex(path: Path | None, full: bool, provider: str | None,
            roots: tuple[str, ...], quiet: bool, ndjson: bool, db: str | None,
            as_json: bool) -> None:  # fmt: skip
    """Re-read every file (or PATH) even if unchanged; --full rebuilds the index file."""
    from docindex.api.index import Index

    if provider and not full:
        raise click.UsageError("--provider needs --full")
    if ndjson and not as_json:
        raise click.UsageError("--progress streams JSON lines: use it with --json")
    progress = _NdjsonProgress() if ndjson else _progress(not (as_json or quiet))
    signals = _signals()
    result = Index(db, roots=roots).reindex(
        path, full=full, provider=provider, progress=progress,
        stop=signals.graceful().is_set,
    )  # fmt: skip
    _print_scan(result, as_json, quiet, _command_line(), event=ndjson)
    _exit_if_signalled(signals)


@cli.command()
@db_option
@json_option
def stats(db: str | None, as_json: bool) -> None:
    """Summarise the index on one screen: counts, size, roots, top types and facets.

    --json prints everything, every facet value included.
    """
    from docindex.api.index import Index
    from docindex.cli.render import print_stats

    data = Index(_find_db(db)).stats()
    if as_json:
        _echo_json(data)
    else:
        print_stats(_out_console(), data)


@cli.command()
@click.option(
    "--ocr-cache",
    is_flag=True,
    help="Also empty the OCR text cache (~/.cache/docindex/ocr).",
)
@db_option
@json_option
def vacuum(ocr_cache: bool, db: str | None, as_json: bool) -> None:
    """Shrink the index file: merge the search index and free unused pages.

    Prints the size before and after. `docindex stats` shows how much is
    reclaimable. Like any writer it waits for the lock (the busy timeout,
    10 s by default): it may run between a scan's commits, and when a scan or
    a watcher holds the lock longer it fails with "index is busy" and
    changes nothing. The OCR text cache is kept under ocr_cache_max_bytes
    (256 MB) after each scan; --ocr-cache empties it.
    """
    from docindex.api.index import Index
    from docindex.cli.render import vacuum_text

    result = Index(_find_db(db)).vacuum(ocr_cache=ocr_cache)
    if as_json:
        _echo_json(result)
    else:
        click.echo(vacuum_text(result))


@cli.command()
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Add a root directory (repeatable; remembered by the index).",
)
@click.option(
    "--debounce-ms",
    type=click.IntRange(0, 60_000),
    default=300,
    show_default=True,
    help="Quiet time before a batch of changes is applied.",
)
@click.option(
    "--serve/--no-serve",
    default=True,
    show_default=True,
    help="Run query, scan, show, ... for other docindex processes on this index, "
    "warm (a 0600 socket beside the index; Linux).",
)
@db_option
@json_option
def watch(
    roots: tuple[str, ...], debounce_ms: int, serve: bool, db: str | None,
    as_json: bool,
) -> None:  # fmt: skip
    """Catch up, then keep the index current as files change, until Ctrl-C or SIGTERM.

    Says what it watches on stderr, then prints one line per applied batch on
    stdout (`+added ~updated -removed in N ms`, or one JSON object per line with
    --json); warnings go to stderr.

    While it runs, `docindex query`, `scan` and the reading commands on this
    index skip Python's start-up: a warm server process beside the watcher
    runs them on the caller's terminal, folder and environment, with the same
    output and exit status (DOCINDEX_WATCHER=off in the caller's environment
    opts out).
    """
    from docindex.api.index import Index
    from docindex.serve.rendezvous import watcher_mode

    signals = _signals()
    stop = signals.graceful()  # a second signal gives up on the pending batch
    serve = serve and watcher_mode() != "off"
    serving: list[Serving | None] = []
    index_db: list[Path | ServerUrl] = []

    def on_start(index: Path | ServerUrl, watched: list[str]) -> None:
        index_db.append(index)
        click.echo(
            f"watching {', '.join(watched)} (index {index}); Ctrl-C to stop",
            err=True,
        )
        # A server index (issue #34) has no folder for the warm server's socket.
        if serve and isinstance(index, Path) and index.is_file():
            serving.append(_start_serving(index))

    def on_batch(report: BatchReport) -> None:
        if serve and not serving and index_db and isinstance(index_db[0], Path):
            serving.append(_start_serving(index_db[0]))
        if as_json:
            _echo_json(report)
        else:
            line = f"+{report.added} ~{report.updated} -{report.removed}"
            line += f" in {report.took_ms:.0f} ms"
            if report.kind != "changes":
                line += f" ({report.fallback or report.kind})"
            click.echo(line)
        for err in report.errors:
            click.echo(f"{err['reason']}: {err['path']}: {err['message']}", err=True)
        sys.stdout.flush()

    def on_notice(message: str) -> None:
        click.echo(f"warning: {message}", err=True)

    try:
        Index(_find_db(db, roots), roots=roots).run_watch(
            debounce_ms=debounce_ms,
            on_batch=on_batch,
            stop_event=stop,
            on_notice=on_notice,
            on_start=on_start,
        )
    finally:
        for running in serving:
            if running is not None:
                running.stop()
    _exit_if_signalled(signals)


def _start_serving(db: Path) -> Serving | None:
    """The watcher's server (after the catch-up, when the index exists), or None."""
    from docindex.serve import server

    if not server.supported():
        return None
    try:
        return server.start(db)
    except OSError as exc:
        click.echo(f"warning: not serving other commands: {exc}", err=True)
        return None


# -- the MCP server (issue #6) ---------------------------------------------------


@cli.command()
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help="A root the tools may read and index (repeatable).",
)
@db_option
def mcp(roots: tuple[str, ...], db: str | None) -> None:
    """Serve the index to agents over MCP (stdio); needs the mcp extra (`pip install 'docindex-cli[mcp]'`).

    Tools: doc_scan, doc_query, doc_reindex, doc_stats, get_doc, get_outline,
    get_section, find_related, list_documents, search_batch. No tool reads or
    indexes anything outside the roots. The index is found as for every other
    command: --db, DOCINDEX_DB, the nearest .docindex/ upward from a --root, then
    from the current directory.
    """
    from docindex.serve.mcp import serve

    serve(_find_db(db, roots), list(roots))


@cli.command(name="eval")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--mode",
    type=click.Choice(["auto", "lexical", "semantic", "all"]),
    default="all",
    show_default=True,
    help="Which mode(s) to score.",
)
@click.option(
    "--queries",
    "n_queries",
    type=click.IntRange(1),
    default=None,
    help="Sample this many judged queries (default: all of them).",
)
@click.option(
    "--seed",
    type=int,
    default=13,
    show_default=True,
    help="Seed for --queries sampling (same seed, same queries).",
)
@click.option(
    "--view",
    type=click.Choice(["chunks", "files", "both"]),
    default="both",
    show_default=True,
    help="Score the default chunk list (documents in the order of their best "
    "chunk), --files, or both.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@click.option(
    "--engine",
    "engine",
    metavar="sqlite|URL",
    default="sqlite",
    show_default=True,
    help="Where the throwaway index is built: a SQLite file, or a "
    "postgresql:// URL (a new schema there, dropped afterwards).",
)
@json_option
def eval_(folder: Path, mode: str, n_queries: int | None, seed: int, view: str,
          quiet: bool, engine: str, as_json: bool) -> None:  # fmt: skip
    """Measure ranking quality on a BEIR-layout judged set in FOLDER.

    FOLDER holds corpus.jsonl, queries-test.jsonl or queries.jsonl, and
    qrels/test.tsv. A throwaway index is built in a temporary folder, the judged
    queries run with --top 100, and nDCG@10, Recall@100 and MRR@10 are printed
    per mode and view: "chunks" reads the default chunk list as documents in the
    order of their best chunk, "files" is query --files. There is no --db: eval
    never reads or writes your index (DOCINDEX_DB is ignored). Ranking settings
    come from DOCINDEX_* variables (e.g. DOCINDEX_SEMANTIC_WEIGHT=0.3).
    """
    from docindex.api.evaluate import MODES, VIEWS, evaluate
    from docindex.cli.render import print_eval
    from docindex.config import Config, from_env
    from docindex.store.location import is_server_url

    if engine != "sqlite" and not is_server_url(engine):
        raise click.UsageError("--engine takes sqlite or a postgresql:// URL")
    server = engine if engine != "sqlite" else None
    modes = MODES if mode == "all" else (mode,)
    views = VIEWS if view == "both" else (view,)
    progress = _progress(not (as_json or quiet))
    with progress as on_progress:
        report = evaluate(
            folder, modes=modes, views=views, n_queries=n_queries, seed=seed,
            cfg=from_env(Config()), on_progress=_eval_progress(on_progress),
            server=server,
        )  # fmt: skip
    if as_json:
        _echo_json(report)
    else:
        print_eval(_out_console(), report)


@cli.command("export")
@db_option
def export_(db: str | None) -> None:
    """Write the index as NDJSON to stdout: settings, roots, documents with their
    text and chunks (ids, lines, vectors). `docindex import` loads it into a new
    index on either engine without reading a file again; chunk ids stay the same.
    """
    from docindex.api import commands as api

    with _progress(True) as on_progress:  # stderr, on a terminal only (#45)
        for record in api.export(db, on_progress):
            click.echo(json.dumps(record, ensure_ascii=False))


@cli.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@db_option
@json_option
def import_(file: TextIO, db: str | None, as_json: bool) -> None:
    """Load FILE (from `docindex export`, or - for stdin) into a new, empty index."""
    from docindex.api import commands as api

    with _progress(True) as on_progress:  # stderr, on a terminal only (#45)
        counts = api.import_(db, file, on_progress)
    if as_json:
        _echo_json(counts)
    else:
        click.echo(", ".join(f"{v} {k}" for k, v in counts.items()), err=True)


def _eval_progress(
    on_progress: Callable[[Progress], None] | None,
) -> Callable[[str, int, int], None] | None:
    """Adapt the scan progress bar to evaluate()'s (phase, done, total) events."""
    if on_progress is None:
        return None
    from docindex.models import Progress

    def report(phase: str, done: int, total: int) -> None:
        label = "" if phase == "index" else f"querying ({phase} mode)"
        on_progress(Progress(phase, done, total or None, label))

    return report


# -- roots, config, and what every command shares (issue #20) -------------------


def _register() -> None:
    from docindex.cli.help import add_examples
    from docindex.cli.nav import list_, outline, related, section, show, skipped
    from docindex.cli.roots import config, roots

    for command in (outline, show, section, list_, skipped, related, roots, config):
        cli.add_command(command)
    add_examples(cli, COLOR_OPTION)


_register()
