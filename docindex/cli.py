"""The ``docindex`` command: parse, call one core function, render. No SQL, no maths."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from . import __version__
from .errors import DocindexError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class _Group(click.Group):
    """Turns every expected failure into a one-line message and exit 1 (no traceback)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DocindexError as exc:
            raise click.ClickException(str(exc)) from None
        except sqlite3.Error as exc:
            from .store import translate

            raise click.ClickException(str(translate(exc, ""))) from None
        except KeyboardInterrupt:
            click.echo(
                "interrupted; the index keeps its last committed state", err=True
            )
            sys.exit(130)
        except BrokenPipeError:
            sys.stderr.close()
            sys.exit(1)


def _err_console(quiet: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=True, quiet=quiet, highlight=False)


def _color() -> bool | None:
    """click.echo's ``color``: NO_COLOR and FORCE_COLOR as rich reads them, else auto."""
    if os.environ.get("NO_COLOR"):
        return False
    return True if os.environ.get("FORCE_COLOR") else None


def _out_console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def db_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--db FILE`` with ``DOCINDEX_DB`` as its environment variable."""
    return click.option(
        "--db",
        type=click.Path(dir_okay=False),
        envvar="DOCINDEX_DB",
        help="Index file (default: DOCINDEX_DB, else the nearest .docindex/index.db).",
    )(fn)


def json_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--json``: one JSON document on stdout."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(fn)


@click.group(cls=_Group, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="docindex")
def cli() -> None:
    """docindex: turn folders of documents into a searchable local knowledge base.

    Scan a folder once, then ask in plain words (English, 中文, 日本語, 한국어):

        docindex scan ~/notes && docindex query "how do I rotate the keys"
    """


def _progress(enabled: bool) -> Any:
    """A rich progress bar on stderr (transient), or a no-op."""
    from .progress import ScanProgress

    return ScanProgress(enabled and sys.stderr.isatty())


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
@click.option("--hidden", is_flag=True, default=None, help="Index hidden files too.")
@click.option("--follow-symlinks", is_flag=True, default=None, help="Follow symlinks.")
@click.option("--no-gitignore", is_flag=True, help="Do not honour .gitignore files.")
@click.option(
    "--provider",
    type=click.Choice(["ngram", "none", "minilm"]),
    help="Embedding provider (changing it needs reindex --full).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary on stderr.")
@db_option
@json_option
def scan(path: Path | None, roots: tuple[str, ...], exclude: tuple[str, ...],
         force: bool, hidden: bool | None, follow_symlinks: bool | None,
         no_gitignore: bool, provider: str | None, quiet: bool, db: str | None,
         as_json: bool) -> None:  # fmt: skip
    """Scan the roots incrementally; PATH limits the scan to a file or folder inside them.

    Without an index, PATH (a directory) becomes the first root and the index is
    created at PATH/.docindex/index.db.
    """
    from . import api

    result = api.scan(
        db, path=path, roots=list(roots), exclude=list(exclude), force=force,
        hidden=hidden, follow_symlinks=follow_symlinks, no_gitignore=no_gitignore,
        provider=provider, progress=_progress(not (as_json or quiet)),
    )  # fmt: skip
    _print_scan(result, as_json, quiet)


def _print_scan(result: Any, as_json: bool, quiet: bool) -> None:
    from .render import scan_text, to_json

    if as_json:
        click.echo(to_json(result))
    elif not quiet:
        click.echo(scan_text(result), err=True, color=_color())


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
@click.option("--no-highlight", is_flag=True, help="No **highlight** markers.")
@click.option(
    "--min-score",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    help="Drop hits scoring below this (0..1, same meaning in every mode).",
)
@click.option(
    "--queries",
    type=click.File("r", encoding="utf-8"),
    help="Read one query per line (- for stdin); print JSONL.",
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
    metavar="GLOB",
    help="Only documents whose root-relative path matches GLOB.",
)
@click.option(
    "--where",
    "where",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only documents whose front matter has KEY=VALUE (repeatable).",
)
@click.option("--cursor", help="Continue from a previous result's next_cursor.")
@db_option
@json_option
def query(text: str | None, top: int, mode: str, snippet_chars: int,
          no_highlight: bool, min_score: float, queries: Any, files: bool,
          explain: bool, types: tuple[str, ...], path_glob: str | None,
          where: tuple[str, ...], cursor: str | None, db: str | None,
          as_json: bool) -> None:  # fmt: skip
    """Search the index. TEXT may also come on stdin.

    Exit status 0 even with zero hits; 1 on a runtime failure; 2 on misuse.
    """
    from . import api
    from .render import hits_text, to_json

    pairs = []
    for item in where:
        if "=" not in item:
            raise click.BadParameter("expected KEY=VALUE", param_hint="--where")
        key, _, value = item.partition("=")
        pairs.append((key.strip(), value.strip()))
    options = dict(
        top=top, mode=mode, snippet_chars=snippet_chars, highlight=not no_highlight,
        min_score=min_score, files=files, explain=explain, types=types,
        path_glob=path_glob, where=tuple(pairs), cursor=cursor,
    )  # fmt: skip
    if queries is not None:
        if text:
            raise click.UsageError("give TEXT or --queries, not both")
        for line in api.batch_query(db, (ln.rstrip("\n") for ln in queries), options):
            click.echo(to_json(line))
        return
    if text is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError("missing query TEXT (or pipe it on stdin)")
        text = sys.stdin.read().strip()
    result = api.query(db, text, options)
    if as_json:
        click.echo(to_json(result))
    else:
        click.echo(hits_text(result, explain=explain), color=_color())


@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option(
    "--full", is_flag=True, help="Drop the index and rebuild it from scratch."
)
@click.option(
    "--provider",
    type=click.Choice(["ngram", "none", "minilm"]),
    help="Embedding provider for the rebuilt index (with --full).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary on stderr.")
@db_option
@json_option
def reindex(path: Path | None, full: bool, provider: str | None, quiet: bool,
            db: str | None, as_json: bool) -> None:  # fmt: skip
    """Re-read every file (or PATH) even if unchanged; --full rebuilds the index file."""
    from . import api

    if provider and not full:
        raise click.UsageError("--provider needs --full")
    result = api.reindex(db, path=path, full=full, provider=provider,
                         progress=_progress(not (as_json or quiet)))  # fmt: skip
    _print_scan(result, as_json, quiet)


@cli.command()
@db_option
@json_option
def stats(db: str | None, as_json: bool) -> None:
    """Show what the index holds: roots, counts, types, size, settings."""
    from . import api
    from .render import print_stats

    data = api.stats(db)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False))
    else:
        print_stats(_out_console(), data)


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
@db_option
@json_option
def watch(
    roots: tuple[str, ...], debounce_ms: int, db: str | None, as_json: bool
) -> None:
    """Catch up, then keep the index current as files change, until Ctrl-C or SIGTERM.

    Prints one line per applied batch on stdout (`+added ~updated -removed in N ms`,
    or one JSON object per line with --json); warnings go to stderr.
    """
    import signal
    import threading

    from . import api
    from .render import to_json

    stop = threading.Event()

    def _on_signal(signum: int, frame: object) -> None:
        if stop.is_set():  # a second signal: give up on the pending batch
            raise KeyboardInterrupt
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_signal)

    def on_batch(report: Any) -> None:
        if as_json:
            click.echo(to_json(report))
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

    api.watch(
        db,
        roots=list(roots),
        debounce_ms=debounce_ms,
        on_batch=on_batch,
        stop_event=stop,
        on_notice=on_notice,
    )


def main() -> None:
    """Entry point for ``python -m docindex``."""
    cli(prog_name="docindex")


# -- navigation and the MCP server (issue #6) -----------------------------------


@cli.command()
@click.argument("file")
@click.option(
    "--depth",
    type=click.IntRange(1, 6),
    default=6,
    show_default=True,
    help="Deepest heading level to show.",
)
@db_option
@json_option
def outline(file: str, depth: int, db: str | None, as_json: bool) -> None:
    """Show FILE's title and headings with their levels and lines.

    FILE is relative to a root (or to the current directory), or absolute inside
    a root.
    """
    from . import api
    from .render import print_outline, to_json

    result = api.outline(db, file, depth=depth, cwd=Path.cwd())
    if as_json:
        click.echo(to_json(result))
    else:
        print_outline(_out_console(), result)


@cli.command()
@click.argument("target", metavar="CHUNK_ID|FILE[:LINE]")
@click.option(
    "--context",
    "-C",
    type=click.IntRange(0, 50),
    default=0,
    show_default=True,
    help="Neighbouring chunks to show on each side.",
)
@db_option
@json_option
def show(target: str, context: int, db: str | None, as_json: bool) -> None:
    """Show a chunk (by chunk id, or the one holding FILE:LINE) with its neighbours."""
    from . import api
    from .render import print_shown, to_json

    result = api.show(db, target, context=context, cwd=Path.cwd())
    if as_json:
        click.echo(to_json(result))
    else:
        print_shown(_out_console(), result)


@cli.command()
@click.argument("file")
@click.argument("heading")
@click.option(
    "--no-subsections", is_flag=True, help="Stop at the next heading of any level."
)
@db_option
@json_option
def section(file: str, heading: str, no_subsections: bool, db: str | None,
            as_json: bool) -> None:  # fmt: skip
    """Print the section of FILE under HEADING (case-insensitive) with its lines."""
    from . import api
    from .render import print_section, to_json

    result = api.section(db, file, heading, include_subsections=not no_subsections,
                         cwd=Path.cwd())  # fmt: skip
    if as_json:
        click.echo(to_json(result))
    else:
        print_section(_out_console(), result)


@cli.command(name="list")
@click.option(
    "--path",
    "path_glob",
    metavar="GLOB",
    help="Only documents whose root-relative path matches GLOB.",
)
@click.option(
    "--type",
    "types",
    multiple=True,
    metavar="EXT",
    help="Only documents of this type (md, txt, pdf, ...; repeatable).",
)
@click.option(
    "--limit",
    type=click.IntRange(1, 10_000),
    default=50,
    show_default=True,
    help="Documents per page.",
)
@click.option(
    "--offset",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Documents to skip.",
)
@db_option
@json_option
def list_(path_glob: str | None, types: tuple[str, ...], limit: int, offset: int,
          db: str | None, as_json: bool) -> None:  # fmt: skip
    """List indexed documents with title, type, size and segment count."""
    from . import api
    from .render import print_documents, to_json

    result = api.list_documents(db, path_glob=path_glob, types=types, limit=limit,
                                offset=offset)  # fmt: skip
    if as_json:
        click.echo(to_json(result))
    else:
        print_documents(_out_console(), result, offset)


@cli.command()
@click.argument("target", metavar="FILE[#CHUNK]")
@click.option(
    "--top",
    "-n",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="Number of related chunks.",
)
@click.option(
    "--same-file",
    is_flag=True,
    help="Also return chunks of the same file (never the source chunk).",
)
@db_option
@json_option
def related(target: str, top: int, same_file: bool, db: str | None,
            as_json: bool) -> None:  # fmt: skip
    """Chunks nearest by vector to a chunk, or to FILE's centroid (other files only)."""
    from . import api
    from .render import print_related, to_json

    result = api.related(db, target, top=top, same_file=same_file, cwd=Path.cwd())
    if as_json:
        click.echo(to_json(result))
    else:
        print_related(_out_console(), result)


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
    """Serve the index to agents over MCP (stdio); needs `pip install 'docindex[mcp]'`.

    Tools: doc_scan, doc_query, doc_reindex, doc_stats, get_doc, get_outline,
    get_section, find_related, list_documents, search_batch. No tool reads or
    indexes anything outside the roots.
    """
    from .mcp_server import serve

    serve(db, list(roots))


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
@json_option
def eval_(folder: Path, mode: str, n_queries: int | None, seed: int, view: str,
          quiet: bool, as_json: bool) -> None:  # fmt: skip
    """Measure ranking quality on a BEIR-layout judged set in FOLDER.

    FOLDER holds corpus.jsonl, queries-test.jsonl or queries.jsonl, and
    qrels/test.tsv. A throwaway index is built in a temporary folder (your
    index is not touched), the judged queries run with --top 100, and nDCG@10,
    Recall@100 and MRR@10 are printed per mode and view: "chunks" reads the
    default chunk list as documents in the order of their best chunk, "files"
    is query --files. Ranking settings come
    from DOCINDEX_* variables (e.g. DOCINDEX_SEMANTIC_WEIGHT=0.3).
    """
    from .config import Config, from_env
    from .evaluate import MODES, VIEWS, evaluate
    from .render import print_eval, to_json

    modes = MODES if mode == "all" else (mode,)
    views = VIEWS if view == "both" else (view,)
    progress = _progress(not (as_json or quiet))
    with progress as on_progress:
        report = evaluate(
            folder, modes=modes, views=views, n_queries=n_queries, seed=seed,
            cfg=from_env(Config()), on_progress=_eval_progress(on_progress),
        )  # fmt: skip
    if as_json:
        click.echo(to_json(report))
    else:
        print_eval(_out_console(), report)


def _eval_progress(on_progress: Any) -> Any:
    """Adapt the scan progress bar to evaluate()'s (phase, done, total) events."""
    if on_progress is None:
        return None
    from .indexer import Progress

    def report(phase: str, done: int, total: int) -> None:
        label = "" if phase == "index" else f"querying ({phase} mode)"
        on_progress(Progress(phase, done, total or None, label))

    return report
