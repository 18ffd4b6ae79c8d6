"""One function per user command, behind ``Index`` (``api/index.py``).

Each function resolves the workspace, opens the index, calls the core and
closes the index: one call per command, no printing. The CLI and the MCP
server reach these through ``Index``, as a script does. They live by
family (issue #49): ``scanning`` (scan, reindex, watch), ``querying``
(query, batch queries, hit lines), ``reading`` (navigation, stats, skipped,
roots, config, export) and ``upkeep`` (vacuum, roots changes, import); the
argument types are in ``params``. This module names them all in one place.
"""

from docindex.api.params import DbArg, Overrides, ProgressArg, ProgressCallback
from docindex.api.querying import batch_query, hit_lines, query
from docindex.api.reading import (
    export,
    index_vocabulary,
    list_documents,
    outline,
    related,
    roots_list,
    section,
    settings,
    show,
    skipped,
    stats,
    warm,
)
from docindex.api.scanning import reindex, scan, watch
from docindex.api.upkeep import import_, roots_change, vacuum

__all__ = [
    "DbArg", "Overrides", "ProgressArg", "ProgressCallback", "batch_query",
    "export", "hit_lines", "import_", "index_vocabulary", "list_documents",
    "outline", "query", "reindex", "related", "roots_change", "roots_list",
    "scan", "section", "settings", "show", "skipped", "stats", "vacuum", "warm",
    "watch",
]  # fmt: skip
