"""The index-wide commands: stats, vacuum, export, import.

Registered on the ``docindex`` group by ``main._register`` (issue #49 split
``main``).
"""

from __future__ import annotations

import json
from typing import TextIO

import click

from docindex.cli.output import db_option, json_option
from docindex.cli.output import echo_json as _echo_json
from docindex.cli.output import find_db as _find_db
from docindex.cli.output import out_console as _out_console
from docindex.cli.output import progress_bar as _progress


@click.command()
@db_option
@json_option
def stats(db: str | None, as_json: bool) -> None:
    """Summarise the index on one screen: counts, size, roots, top types and facets.

    --json prints everything, every facet value included.
    """
    from docindex.api.index import Index
    from docindex.cli.render_index import print_stats

    data = Index(_find_db(db)).stats()
    if as_json:
        _echo_json(data)
    else:
        print_stats(_out_console(), data)


@click.command()
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
    from docindex.cli.render_index import vacuum_text

    result = Index(_find_db(db)).vacuum(ocr_cache=ocr_cache)
    if as_json:
        _echo_json(result)
    else:
        click.echo(vacuum_text(result))


@click.command("export")
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


@click.command("import")
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
