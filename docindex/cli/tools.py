"""The commands beside the index: mcp (the MCP server for agents, #6) and
eval (ranking quality on a judged set).

Registered on the ``docindex`` group by ``main._register`` (issue #49 split
``main``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from docindex.cli.output import db_option, json_option, root_option
from docindex.cli.output import echo_json as _echo_json
from docindex.cli.output import find_db as _find_db
from docindex.cli.output import out_console as _out_console
from docindex.cli.output import progress_bar as _progress

if TYPE_CHECKING:
    from collections.abc import Callable

    from docindex.models import Progress


@click.command()
@root_option("A root the tools may read and index (repeatable).")
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


@click.command(name="eval")
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
    from docindex.cli.render_index import print_eval
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
