"""docindex: turn folders of documents into a searchable local knowledge base.

The public Python API is exactly ``__all__`` below (issue #32)::

    import docindex

    index = docindex.open(roots=["docs/"])   # or docindex.open("path/to/index.db")
    index.scan()
    result = index.query("how do I configure the port", top=3)
    for hit in result.hits:
        print(hit.path, hit.line, hit.score, hit.snippet)

Everything else (the subpackages and their modules) is private and may change.
Names are imported on first use, so ``import docindex`` stays as light as the
command line's start-up needs.
"""

# No imports at run time: the ``docindex`` command's client imports this package
# first, and ``typing`` alone would add ~10 ms to every served command (#24, #32).
TYPE_CHECKING = False  # mypy and other checkers take this branch as True

__version__ = "0.2.0"

_HOMES: dict[str, str] = {
    # the library face
    "open": "docindex.api.index",
    "Index": "docindex.api.index",
    "Watcher": "docindex.api.index",
    # what it returns
    "QueryResult": "docindex.models",
    "Hit": "docindex.models",
    "FoldedHit": "docindex.models",
    "ScanResult": "docindex.models",
    "Progress": "docindex.models",
    "SkipRecord": "docindex.models",
    "SkipReason": "docindex.models",
    "Outline": "docindex.models.navigation",
    "OutlineEntry": "docindex.models.navigation",
    "Shown": "docindex.models.navigation",
    "Chunk": "docindex.models.navigation",
    "Section": "docindex.models.navigation",
    "DocumentList": "docindex.models.navigation",
    "DocumentInfo": "docindex.models.navigation",
    "Related": "docindex.models.navigation",
    "RelatedHit": "docindex.models.navigation",
    "IndexStats": "docindex.api.records",
    "FacetCount": "docindex.api.records",
    "VacuumResult": "docindex.api.records",
    "SkippedFiles": "docindex.api.records",
    "RootsListing": "docindex.api.records",
    "Relocated": "docindex.api.records",
    "RootInfo": "docindex.api.roots",
    "RootChange": "docindex.api.roots",
    "BatchReport": "docindex.ingest.watch",
    # errors: every expected failure is a DocindexError
    "DocindexError": "docindex.errors",
    "MisuseError": "docindex.errors",
    "BadInputError": "docindex.errors",
    "OutsideRootsError": "docindex.errors",
    "IndexNotFoundError": "docindex.errors",
    "IndexBusyError": "docindex.errors",
    "IndexUnreachableError": "docindex.errors",
    "IndexCorruptError": "docindex.errors",
    "RelocatedIndexError": "docindex.errors",
    "ForeignDatabaseError": "docindex.errors",
    "SchemaTooNewError": "docindex.errors",
    "EmbedderMismatchError": "docindex.errors",
    "ConfigError": "docindex.errors",
    "ExtractionError": "docindex.errors",
}

__all__ = [
    "__version__",
    "open",
    "Index",
    "Watcher",
    "QueryResult",
    "Hit",
    "FoldedHit",
    "ScanResult",
    "Progress",
    "SkipRecord",
    "SkipReason",
    "Outline",
    "OutlineEntry",
    "Shown",
    "Chunk",
    "Section",
    "DocumentList",
    "DocumentInfo",
    "Related",
    "RelatedHit",
    "IndexStats",
    "FacetCount",
    "VacuumResult",
    "SkippedFiles",
    "RootsListing",
    "Relocated",
    "RootInfo",
    "RootChange",
    "BatchReport",
    "DocindexError",
    "MisuseError",
    "BadInputError",
    "OutsideRootsError",
    "IndexNotFoundError",
    "IndexBusyError",
    "IndexUnreachableError",
    "IndexCorruptError",
    "RelocatedIndexError",
    "ForeignDatabaseError",
    "SchemaTooNewError",
    "EmbedderMismatchError",
    "ConfigError",
    "ExtractionError",
]


def __getattr__(name: str) -> object:  # noqa: D105
    """Import a public name from its home on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'docindex' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from docindex.api.index import Index, Watcher, open
    from docindex.api.records import (
        FacetCount,
        IndexStats,
        Relocated,
        RootsListing,
        SkippedFiles,
        VacuumResult,
    )
    from docindex.api.roots import RootChange, RootInfo
    from docindex.errors import (
        BadInputError,
        ConfigError,
        DocindexError,
        EmbedderMismatchError,
        ExtractionError,
        ForeignDatabaseError,
        IndexBusyError,
        IndexCorruptError,
        IndexNotFoundError,
        IndexUnreachableError,
        MisuseError,
        OutsideRootsError,
        RelocatedIndexError,
        SchemaTooNewError,
    )
    from docindex.ingest.watch import BatchReport
    from docindex.models import (
        FoldedHit,
        Hit,
        Progress,
        QueryResult,
        ScanResult,
        SkipReason,
        SkipRecord,
    )
    from docindex.models.navigation import (
        Chunk,
        DocumentInfo,
        DocumentList,
        Outline,
        OutlineEntry,
        Related,
        RelatedHit,
        Section,
        Shown,
    )
