"""The navigation commands: outline, show, section, list, skipped, related (#6, #23).

Registered on the ``docindex`` group by ``cli._register``, like ``cli_roots``.
"""

from __future__ import annotations

from pathlib import Path

import click

from docindex.cli.output import (
    db_option,
    echo_json,
    err_console,
    find_db,
    json_option,
    out_console,
    piped,
)


@click.command()
@click.argument("file")
@click.option(
    "--depth",
    type=click.IntRange(1, 6),
    default=6,
    show_default=True,
    help="Heading levels to show, counted from the file's top level.",
)
@db_option
@json_option
def outline(file: str, depth: int, db: str | None, as_json: bool) -> None:
    """Show FILE's title and headings with their levels and lines.

    FILE is relative to a root (or to the current directory), or absolute inside
    a root.
    """
    from docindex.api.index import Index
    from docindex.cli.render_nav import print_outline

    result = Index(find_db(db)).outline(file, depth=depth, cwd=Path.cwd())
    if as_json:
        echo_json(result)
    else:
        print_outline(out_console(), result)


@click.command()
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
    from docindex.api.index import Index
    from docindex.cli.render_nav import print_shown

    result = Index(find_db(db)).show(target, context=context, cwd=Path.cwd())
    if as_json:
        echo_json(result)
    else:
        print_shown(out_console(), result)


@click.command()
@click.argument("file")
@click.argument("heading")
@click.option(
    "--no-subsections", is_flag=True, help="Stop at the next heading of any level."
)
@db_option
@json_option
def section(file: str, heading: str, no_subsections: bool, db: str | None,
            as_json: bool) -> None:  # fmt: skip
    """Print the section of FILE under HEADING (case-insensitive) with its lines.

    HEADING is a heading's text, a path 'Parent > Heading', or its id: '#install'.
    """
    from docindex.api.index import Index
    from docindex.cli.render_nav import print_section

    result = Index(find_db(db)).section(file, heading,
                         subsections=not no_subsections,
                         cwd=Path.cwd())  # fmt: skip
    if as_json:
        echo_json(result)
    else:
        print_section(out_console(), result)


@click.command(name="list")
@click.option(
    "--path",
    "path_glob",
    metavar="PATH",
    help="Only documents under this folder, this file, or matching this glob: "
    "absolute, relative to the current folder, or to a root.",
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
    type=click.IntRange(0, 1_000_000),
    default=0,
    show_default=True,
    help="Documents to skip.",
)
@db_option
@json_option
def list_(path_glob: str | None, types: tuple[str, ...], limit: int, offset: int,
          db: str | None, as_json: bool) -> None:  # fmt: skip
    """List indexed documents with title, type, size and segment count.

    On a terminal: a table of root-relative paths. Piped: one tab-separated line
    per document (absolute path, type, bytes, segments, title), never cut short;
    the paging footer goes to stderr.
    """
    from docindex.api.index import Index
    from docindex.cli.render_nav import document_rows, print_documents

    result = Index(find_db(db)).documents(path=path_glob, types=types, limit=limit,
                                          offset=offset, cwd=Path.cwd())  # fmt: skip
    if as_json:
        echo_json(result)
    elif piped():
        for row in document_rows(result):
            click.echo(row)
        print_documents(err_console(), result, offset, footer_only=True)
    else:
        print_documents(out_console(), result, offset)


@click.command()
@click.option(
    "--reason",
    metavar="REASON",
    help="Only files skipped for this reason (unsupported, hidden, script, ...).",
)
@db_option
@json_option
def skipped(reason: str | None, db: str | None, as_json: bool) -> None:
    """List every file left out of the index (or kept in part), with its reason.

    A file stays listed until it changes on disk; the next scan then reads it
    again.
    """
    from docindex.api.index import Index
    from docindex.cli.render_index import print_skipped

    result = Index(db).skipped(reason=reason)
    if as_json:
        echo_json(result)
    else:
        print_skipped(out_console(), result, reason)


@click.command()
@click.argument("target", metavar="FILE[#CHUNK]")
@click.option(
    "--top",
    "-n",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="Number of related documents.",
)
@click.option(
    "--same-file",
    is_flag=True,
    help="Also return chunks of the same file, each listed (never the source).",
)
@db_option
@json_option
def related(target: str, top: int, same_file: bool, db: str | None,
            as_json: bool) -> None:  # fmt: skip
    """Documents nearest by vector to a chunk, a heading's section, or FILE.

    One entry per document (other files only, unless --same-file): its
    nearest chunk, with the document's other near chunks folded behind it
    ("+ N more here"), as `query` shows hits.
    """
    from docindex.api.index import Index
    from docindex.cli.render import related_text

    result = Index(find_db(db)).related(target, top=top, same_file=same_file,
                         cwd=Path.cwd())  # fmt: skip
    if as_json:
        echo_json(result)
    else:
        click.echo(related_text(result))
