"""The commands that read files into the index: scan, reindex, watch.

Registered on the ``docindex`` group by ``main._register`` (issue #49 split
``main``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from docindex.cli.output import NdjsonProgress as _NdjsonProgress
from docindex.cli.output import color as _color
from docindex.cli.output import (
    command_line,
    db_option,
    exit_if_signalled,
    json_option,
    notice,
    progress_options,
    root_option,
    running_signals,
)
from docindex.cli.output import echo_json as _echo_json
from docindex.cli.output import find_db as _find_db
from docindex.cli.output import progress_bar as _progress
from docindex.config import PROVIDERS

if TYPE_CHECKING:
    from docindex.ingest.watch import BatchReport
    from docindex.models import ScanResult
    from docindex.serve.serving import Serving
    from docindex.store.location import ServerUrl


@click.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@root_option("Add a root directory (repeatable; remembered by the index).")
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
@progress_options
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
    signals = running_signals()
    result = Index(db, roots=roots).scan(
        path, exclude=exclude, force=force, hidden=hidden,
        follow_symlinks=follow_symlinks, gitignore=gitignore,
        provider=provider, progress=progress, stop=signals.graceful().is_set,
        ocr=ocr, on_notice=notice,
    )  # fmt: skip
    _print_scan(result, as_json, quiet, command_line(), event=ndjson)
    exit_if_signalled(signals)


def _print_scan(
    result: ScanResult, as_json: bool, quiet: bool, again: str, event: bool = False
) -> None:
    from docindex.cli.render import to_dict
    from docindex.cli.render_index import interrupted_text, scan_text

    if as_json:
        data = to_dict(result)
        _echo_json({"event": "result", **data} if event else data)
    elif not quiet and not result.interrupted:
        click.echo(scan_text(result), err=True, color=_color())
    if result.interrupted:  # one line, even with --quiet: the work is unfinished
        click.echo(interrupted_text(result, again), err=True)


@click.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option(
    "--full", is_flag=True, help="Drop the index and rebuild it from scratch."
)
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    help="Embedding provider for the rebuilt index (with --full).",
)
@root_option("With --full: the roots to rebuild, when a damaged index cannot say.")
@progress_options
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
    signals = running_signals()
    result = Index(db, roots=roots).reindex(
        path, full=full, provider=provider, progress=progress,
        stop=signals.graceful().is_set,
    )  # fmt: skip
    _print_scan(result, as_json, quiet, command_line(), event=ndjson)
    exit_if_signalled(signals)


@click.command()
@root_option("Add a root directory (repeatable; remembered by the index).")
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

    signals = running_signals()
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
    exit_if_signalled(signals)


def _start_serving(db: Path) -> Serving | None:
    """The watcher's server (after the catch-up, when the index exists), or None."""
    from docindex.serve import serving

    if not serving.supported():
        return None
    try:
        return serving.start(db)
    except OSError as exc:
        click.echo(f"warning: not serving other commands: {exc}", err=True)
        return None
