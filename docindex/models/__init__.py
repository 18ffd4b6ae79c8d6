"""Frozen records that cross module boundaries.

Dicts appear only at the edges (SQL rows, JSON); everything the core passes
between its modules is one of these dataclasses (+ navigation records, input
limits, JSON serialisation).
May import: docindex.errors only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NotRequired, TypedDict


@dataclass(frozen=True, slots=True)
class Unit:
    """One citable unit of extracted text: a whole text file, a PDF page, a slide, a sheet.

    Lines inside ``text`` are separated by ``\\n``; line numbers cited in hits are
    1-based lines *within the unit* (a PDF hit says ``p. 3, line 12``).

    Attributes:
        text: the unit's text, newline-separated, already normalised (no CR).
        page: 1-based PDF page (or None).
        slide: 1-based slide number for PPTX (or None).
        sheet: worksheet name for XLSX (or None).
        line_cells: for XLSX, the cell reference (``"A12"``) of the first cell on each
            line of ``text``; ``line_cells[i]`` belongs to line ``i + 1``.
        markdown: True when ``text`` uses Markdown headings (``#``) that should drive
            segmentation and heading paths (Markdown files, DOCX with heading styles).
    """

    text: str
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    line_cells: tuple[str, ...] | None = None
    markdown: bool = False


# Front-matter lists that name the page (Docusaurus, Hugo, Jekyll, MkDocs):
# kept as one comma-separated metadata value, stored as one facet row per
# item; the search treats each item as a name of its page (#37).
NAME_LISTS = ("keywords", "tags")


@dataclass(frozen=True, slots=True)
class Extracted:
    """What an extractor returns for one file.

    Attributes:
        units: the citable units in document order.
        title: a document title if the format carries one (PDF metadata, DOCX core
            properties, first slide title, Markdown front matter or first H1).
        kind: short type name (``md``, ``txt``, ``pdf``, ``docx``, ``pptx``, ``xlsx``).
        meta: scalar facets (Markdown front-matter keys), string values only.
    """

    units: tuple[Unit, ...]
    title: str | None = None
    kind: str = "txt"
    meta: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Segment:
    """A line-numbered chunk of one document, the unit of indexing and ranking.

    Treat it as read-only. It is not frozen because a scan builds one per ~340
    characters, and a frozen dataclass's ``__init__`` (``object.__setattr__``
    per field) took 0.14 s against 0.03 s for the corpus's 89k (issue #7).
    """

    ordinal: int
    text: str
    start_line: int
    end_line: int
    heading_path: tuple[str, ...] = ()
    chunk_id: str = ""
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    line_cells: tuple[str, ...] | None = None
    char_start: int = 0
    char_end: int = 0
    anchor: str = ""  # the section's chunk-id fragment ("" = the file itself)
    part: int = 1  # 1-based piece of that section; the chunk id adds ~part after 1


@dataclass(frozen=True, slots=True)
class FoldedHit:
    """A hit folded behind a shown hit of the same document (``--per-doc``)."""

    chunk_id: str
    line: int
    score: float
    heading_path: list[str]


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result, as printed by ``docindex query --json``."""

    path: str
    rel_path: str
    root: str
    line: int
    start_line: int
    end_line: int
    title: str
    snippet: str
    score: float
    chunk_id: str
    heading_path: list[str]
    from_: list[str]
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    cell: str | None = None
    explain: dict[str, object] | None = None
    folded: list[FoldedHit] = field(default_factory=list)  # the best FOLD_SHOWN
    folded_count: int = 0  # hits of this document folded behind this one
    # [start, end) character offsets of the matches in ``snippet`` (issue #38)
    highlights: list[tuple[int, int]] = field(default_factory=list)
    # share of the query's idf weight in the hit's text and heading path (#37)
    coverage: float = 0.0


def printable(path: str) -> str:
    """``path`` with undecodable file-name bytes shown as backslash escapes.

    A non-UTF-8 name decodes to lone surrogates (os.fsdecode), which JSON
    output and the console cannot encode (issue #8).
    """
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raw = path.encode(
            "utf-8", "surrogateescape" if _escapes_only(path) else "replace"
        )
        return raw.decode("utf-8", "backslashreplace")
    return path


def _escapes_only(text: str) -> bool:
    return all(
        not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in text
    )


#: Why a file that needs OCR was not read while OCR is off (issue #36).
OCR_OFF = (
    "OCR is off: turn it on with `ocr = true` in config.toml or `docindex scan --ocr`"
)


class SkipReason(StrEnum):
    """Why a file is not in the index, or not wholly (the closed set, issue #18).

    The value is the key ``docindex scan --json`` counts under (``skipped``)
    and reports in ``errors``; ``message`` says what it means.
    """

    IGNORED = "ignored"
    HIDDEN = "hidden"
    SYMLINK = "symlink"
    TOO_LARGE = "too-large"
    BINARY = "binary"
    UNSUPPORTED = "unsupported"
    EMPTY = "empty"
    MAX_DOCS = "max-docs"
    MAX_SEGMENTS = "max-segments"
    MAX_EMBEDDED = "max-embedded"
    MISSING_ROOT = "missing-root"
    WALK_LIMIT = "walk-limit"
    BAD_NAME = "bad-name"
    ERROR = "error"
    CORRUPT = "corrupt"
    ENCRYPTED = "encrypted"
    NO_TEXT_LAYER = "no-text-layer"
    NO_TEXT_FOUND = "no-text-found"
    ZIP_BOMB = "zip-bomb"
    TIMEOUT = "timeout"
    TRUNCATED = "truncated"
    PARTIAL = "partial"
    # Code and assets rather than prose, left out by name (issue #45)
    VECTOR_IMAGE = "vector-image"
    STYLESHEET = "stylesheet"
    SCRIPT = "script"
    SOURCE_MAP = "source-map"
    MINIFIED = "minified"
    LOCK_FILE = "lock-file"
    DIAGRAM_SOURCE = "diagram-source"

    @property
    def message(self) -> str:
        """A one-line explanation for people."""
        return _SKIP_MESSAGES[self]


_SKIP_MESSAGES = {
    SkipReason.IGNORED: "excluded by a default, --exclude or .gitignore rule",
    SkipReason.HIDDEN: "a hidden file or folder (hidden = true indexes them)",
    SkipReason.SYMLINK: "a symbolic link, not followed (or a directory cycle)",
    SkipReason.TOO_LARGE: "over max_file_bytes (or a PDF page over 4 MB of content)",
    SkipReason.BINARY: "binary content",
    SkipReason.UNSUPPORTED: "not a regular file, or a type docindex cannot read",
    SkipReason.EMPTY: "no text",
    SkipReason.MAX_DOCS: "the index holds max_docs documents",
    SkipReason.MAX_SEGMENTS: "the index holds max_segments segments",
    SkipReason.MAX_EMBEDDED: "the index holds max_embedded vectors",
    SkipReason.MISSING_ROOT: "the root is not a directory",
    SkipReason.WALK_LIMIT: "max_depth or max_walked_files reached",
    SkipReason.BAD_NAME: "the file name is not valid UTF-8",
    SkipReason.ERROR: "could not be read or extracted",
    SkipReason.CORRUPT: "a damaged or mislabelled file",
    SkipReason.ENCRYPTED: "encrypted (password-protected)",
    SkipReason.NO_TEXT_LAYER: "no text layer (a scan or an image; needs OCR)",
    SkipReason.NO_TEXT_FOUND: "an image or scan in which OCR found no words (or an icon)",
    SkipReason.ZIP_BOMB: "an archive over the decompression limits",
    SkipReason.TIMEOUT: "took over extract_timeout_s CPU-s per MiB of the file",
    SkipReason.TRUNCATED: "indexed in part: a row, page, time or PDF content limit",
    SkipReason.PARTIAL: "indexed, but some pages could not be read",
    SkipReason.VECTOR_IMAGE: "an SVG drawing: markup, not prose",
    SkipReason.STYLESHEET: "a stylesheet (CSS, Sass, Less)",
    SkipReason.SCRIPT: "JavaScript or TypeScript code",
    SkipReason.SOURCE_MAP: "a source map",
    SkipReason.MINIFIED: "minified code (.min.js, .min.css)",
    SkipReason.LOCK_FILE: "a package manager's lock file",
    SkipReason.DIAGRAM_SOURCE: "a diagram's source (Mermaid, PlantUML, Graphviz, ...)",
}
#: Reasons a scan reports but the index does not keep (`docindex skipped` cannot
#: list them): limits met on the way and a walk's I/O errors, met again next time.
UNRECORDED_REASONS = frozenset(
    {
        SkipReason.WALK_LIMIT, SkipReason.MISSING_ROOT, SkipReason.MAX_DOCS,
        SkipReason.MAX_SEGMENTS, SkipReason.MAX_EMBEDDED,
    }
)  # fmt: skip
#: Reasons for files that are code or assets: ``text_extensions`` opts them in.
ASSET_REASONS = frozenset(
    {
        SkipReason.VECTOR_IMAGE, SkipReason.STYLESHEET, SkipReason.SCRIPT,
        SkipReason.SOURCE_MAP, SkipReason.MINIFIED, SkipReason.LOCK_FILE,
        SkipReason.DIAGRAM_SOURCE,
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SkipRecord:
    """A file the index left out (or kept only in part), as ``docindex skipped`` lists it.

    Attributes:
        path: the file's absolute path (printable).
        root: the root it lies under.
        rel_path: its path relative to that root.
        reason: the skip reason (``unsupported``, ``timeout``, ``truncated``, ...).
        message: what exactly went wrong, for people.
        skipped_at: when the file was last looked at (Unix time).
    """

    path: str
    root: str
    rel_path: str
    reason: str
    message: str
    skipped_at: float


@dataclass(slots=True)
class ScanResult:
    """Counts from one scan; mutable while the scan runs, returned when it ends."""

    scanned: int = 0
    indexed: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)
    segments: int = 0
    embedded: int = 0
    took_ms: float = 0.0
    degraded: bool = False
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False  # stopped on request; what it did is committed (#17)
    pending: int = 0  # files it walked but left for the next scan (when interrupted)
    # Vectors a deferred embedder left to do: ``watch`` yields to file changes
    # and embeds the rest when idle (issue #47).
    vectors_pending: int = 0

    def skip(
        self, reason: SkipReason | str, path: str | None = None, message: str = ""
    ) -> None:
        """Count a skipped file under ``reason`` and keep a message for real errors.

        Raises:
            ValueError: ``reason`` is not a SkipReason value.
        """
        reason = SkipReason(reason)
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if path is not None and message:
            self.errors.append(
                {"path": printable(path), "reason": reason, "message": message}
            )


# -- scanning ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress event: ``done`` files of ``total`` (None while walking)."""

    phase: str
    done: int
    total: int | None
    path: str = ""


ProgressFn = Callable[[Progress], None]


# -- queries ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueryOptions:
    """How to run one query."""

    top: int = 10
    mode: str = "auto"
    snippet_chars: int = 200
    highlight: bool = True
    min_score: float = 0.0
    files: bool = False
    explain: bool = False
    types: tuple[str, ...] = ()
    path_glob: str | None = None
    where: tuple[tuple[str, str], ...] = ()
    offset: int = 0
    per_doc: int = 2  # hits a document shows in a page; 0 = no limit (issue #19)
    roots: tuple[str, ...] = ()  # only documents of these roots (--root, #38)


class WouldMatch(TypedDict, total=False):
    """A hint's values that unfiltered hits have, per filter that was set."""

    type: list[str]
    path: list[str]
    where: dict[str, list[str]]


class Hint(TypedDict):
    """Why a query found nothing, or found only a weak match (``weak_match``,
    issue #37), and what to try (``QueryResult.hint``)."""

    unmatched_words: list[str]
    filtered_out: bool
    would_match: WouldMatch
    suggestion: str
    weak_match: NotRequired[bool]


@dataclass(slots=True)
class QueryResult:
    """What ``docindex query`` prints (``--json`` keys are these field names)."""

    query: str
    mode: str
    used: list[str] = field(default_factory=list)
    degraded: bool = False
    took_ms: float = 0.0
    total: int = 0
    hits: list[Hit] = field(default_factory=list)
    next_offset: int | None = None
    next_cursor: str | None = None
    hint: Hint | None = None
    total_exact: bool = True  # False: ``total`` is a lower bound (issue #37)
    did_you_mean: dict[str, str] = field(default_factory=dict)  # term -> index term
    corrected: str | None = None  # the query searched instead (no hits, auto mode)
    # The synonym file's expansions (issue #47): member matched -> members added.
    synonyms: dict[str, list[str]] = field(default_factory=dict)


# The navigation results (outline, show, section, list, related) are in
# ``models/navigation.py``: a query never needs them, and each frozen dataclass
# costs about a millisecond to create at import (the one-shot query budget, #7).
