"""The navigation results: outline, show, section, list and related (issue #6).

Records like those in ``docindex.models``, kept in their own module because a
query never needs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from docindex.models import FoldedHit


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    """One heading: its level (1-6), text, 1-based line and the chunk it opens.

    ``unit`` names the part whose lines ``line`` counts (an EPUB chapter's
    file); None when the document's lines are one sequence.
    """

    level: int
    text: str
    line: int
    chunk_id: str
    unit: str | None = None
    # issue #37: its ancestors' texts and its own, and its own id
    # (``guide.md#install``), which ``show`` takes even when the heading
    # has no chunk of its own and ``chunk_id`` names its first child's
    heading_path: list[str] = field(default_factory=list)
    anchor: str = ""


@dataclass(frozen=True, slots=True)
class Outline:
    """A document's title and headings (``docindex outline --json``)."""

    path: str
    rel_path: str
    title: str
    outline: list[OutlineEntry]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One segment with its text and location."""

    chunk_id: str
    position: int
    start_line: int
    end_line: int
    heading_path: list[str]
    text: str
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None


@dataclass(frozen=True, slots=True)
class Shown:
    """A chunk plus neighbours of the same file: chunk ``position`` of ``total``."""

    path: str
    rel_path: str
    title: str
    type: str
    position: int
    total: int
    chunk: Chunk
    before: list[Chunk]
    after: list[Chunk]


@dataclass(frozen=True, slots=True)
class Section:
    """A heading's section with its start and end lines (``docindex section``)."""

    path: str
    rel_path: str
    heading: str
    level: int
    start_line: int
    end_line: int
    include_subsections: bool
    chunk_ids: list[str]
    text: str
    unit: str | None = None  # as in OutlineEntry
    heading_path: list[str] = field(default_factory=list)  # issue #37


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """One indexed document (``docindex list --json``)."""

    path: str
    rel_path: str
    title: str
    type: str
    size: int
    segments: int


@dataclass(frozen=True, slots=True)
class DocumentList:
    """A page of documents, the total that match, and whether more follow."""

    documents: list[DocumentInfo]
    total: int
    has_more: bool


@dataclass(frozen=True, slots=True)
class RelatedHit:
    """A document's chunk nearest the source by vector, its cosine in [0, 1].

    ``snippet`` is cleaned as ``query``'s are; the document's other near
    chunks fold behind it (``folded_count``; the best in ``folded``, #37).
    """

    path: str
    rel_path: str
    chunk_id: str
    line: int
    start_line: int
    end_line: int
    title: str
    heading_path: list[str]
    score: float
    snippet: str
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    folded: list[FoldedHit] = field(default_factory=list)
    folded_count: int = 0


@dataclass(frozen=True, slots=True)
class Related:
    """Nearest chunks to ``source`` (a chunk id or a file's rel_path)."""

    source: str
    hits: list[RelatedHit]


@dataclass(frozen=True, slots=True)
class DocumentRef:
    """An indexed document named by a path argument (``navigate.resolve_file``)."""

    id: int
    root: str
    rel_path: str
    title: str
    kind: str

    @property
    def path(self) -> str:
        """The document's absolute path."""
        from pathlib import Path

        return str(Path(self.root, *self.rel_path.split("/")))
