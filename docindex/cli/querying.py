"""The ``query`` command: one query, a batch of them (``--queries``), paging.

Registered on the ``docindex`` group by ``main._register`` (issue #49 split
``main``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from docindex.cli.output import color as _color
from docindex.cli.output import db_option, json_option
from docindex.cli.output import echo_json as _echo_json
from docindex.cli.output import find_db as _find_db
from docindex.cli.output import piped as _piped

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from docindex.api.index import Index
    from docindex.models import QueryResult


def _not_nan(value: float) -> float:
    """FloatRange lets NaN through (every comparison with it is false)."""
    if value != value:
        raise click.BadParameter("must be a number in 0..1, not nan")
    return value


@click.command()
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
