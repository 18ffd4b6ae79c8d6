"""What the index-wide commands return: ``stats``, ``vacuum``, ``skipped``, ``roots``.

Field names are the keys of the commands' documented ``--json`` output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from docindex.api.roots import RootInfo
from docindex.models import SkipRecord


class Vocabulary(TypedDict, total=False):
    """``Index.vocabulary()`` (a JSON object): what to offer as filters."""

    roots: list[str]
    types: list[str]
    facets: dict[str, list[str]]


@dataclass(frozen=True, slots=True)
class FacetCount:
    """A front-matter key: how many documents have it and how many values it takes."""

    key: str
    documents: int
    values: int


@dataclass(frozen=True, slots=True)
class IndexStats:
    """``docindex stats``: what the index holds and what it costs on disk."""

    db: str
    documents: int
    segments: int
    embedded: int
    roots: list[str]
    types: dict[str, int]
    db_bytes: int
    reclaimable_bytes: int  # free pages + stale FTS data: what vacuum gives back
    embedder: str | None
    tokenizer: str | None
    facets: dict[str, list[str]]
    facet_counts: list[FacetCount]
    skipped: dict[str, int]
    notices: list[str]  # what to do about the index's state (``Index.notices``)


@dataclass(frozen=True, slots=True)
class VacuumResult:
    """``docindex vacuum``: the file's size before and after."""

    db: str
    before_bytes: int
    after_bytes: int
    reclaimed_bytes: int
    reclaimable_bytes: int
    took_ms: float
    # with --ocr-cache (#45): the OCR cache entries removed and their bytes
    ocr_cache_removed: int = 0
    ocr_cache_freed_bytes: int = 0


@dataclass(frozen=True, slots=True)
class SkippedFiles:
    """``docindex skipped``: counts for every reason, files for the one asked."""

    counts: dict[str, int]
    files: list[SkipRecord] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Relocated:
    """The index's folder was copied or moved: where it was, where it is, the fix."""

    old: str
    new: str
    fix: str


@dataclass(frozen=True, slots=True)
class RootsListing:
    """``docindex roots``: the index's roots with their document counts."""

    db: str
    roots: list[RootInfo]
    relocated: Relocated | None
    #: the index read is a replica: no scan runs against it, so which roots
    #: a scan here reads (``accepted``) says nothing (#48)
    replica: bool = False
