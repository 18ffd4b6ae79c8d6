"""Suffix -> extractor registry.

Kinds: ``md``, ``txt``, ``pdf``, ``docx``, ``pptx``, ``xlsx``, ``html``,
``epub``, ``odt``/``ods``/``odp`` (one ``odf`` module), ``rtf``, ``image``
(read by OCR, issue #36), and ``legacy`` for binary .doc/.xls/.ppt (refused
with a conversion hint).

Every extractor is a top-level function ``extract(data, name, limits) -> Extracted``
so it can run in a worker process. Heavy libraries (pypdf, python-docx, ...) are
imported inside the extractor modules, which are imported only when a file of
that type is met, so ``docindex --help`` stays fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from docindex.models import Extracted

if TYPE_CHECKING:
    from docindex.ingest.extract.ocr import OcrSettings

TEXT_SUFFIXES = frozenset(
    {
        ".txt", ".text", ".rst", ".adoc", ".org", ".tex", ".csv", ".tsv", ".log",
        ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".xml", ".css", ".py", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".vue",
        ".go", ".rs", ".java", ".kt", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs",
        ".rb", ".php", ".swift", ".sh", ".bash", ".zsh", ".sql", ".lua", ".pl",
        ".r", ".scala", ".svelte", ".astro", ".env", ".properties", ".gradle",
    }
)  # fmt: skip
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".mdown", ".mkd"})
OFFICE_SUFFIXES = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    # issue #23: web pages, books, OpenDocument, RTF, legacy binary Office
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".epub": "epub",
    ".odt": "odt",
    ".ott": "odt",
    ".ods": "ods",
    ".ots": "ods",
    ".odp": "odp",
    ".otp": "odp",
    ".rtf": "rtf",
    ".doc": "legacy",
    ".dot": "legacy",
    ".xls": "legacy",
    ".xlt": "legacy",
    ".ppt": "legacy",
    ".pps": "legacy",
    # issue #36: images, read by OCR when it is on
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
    ".webp": "image",
    ".gif": "image",
}


@dataclass(frozen=True, slots=True)
class ExtractLimits:
    """Bounds that keep one hostile file from costing more than seconds and megabytes.

    Attributes:
        max_archive_entries: ZIP (OOXML) entries allowed before a file is a zip bomb.
        max_uncompressed_bytes: total declared uncompressed size allowed in a ZIP.
        max_compression_ratio: per-entry uncompressed/compressed ratio allowed.
        max_pages: PDF pages read (the rest are dropped and counted ``truncated``).
        page_timeout_s: wall-clock budget for one PDF page; a slower page is
            left out (``page_errors``) and the others are kept.
        pdf_seconds_per_page: what each page adds to a PDF's budget, which
            starts at ``timeout_s``.
        pdf_content_bytes: decoded page content a PDF may have parsed in all;
            past it the pages read are kept and the file is ``truncated``
            (issue #33: 2,000 pages sharing one 16 MB stream took 530 s).
        pdf_page_content_bytes: decoded content of one page; a page with
            more is left out unparsed and counted in ``page_errors``.
        pdf_timeout_s: the most a whole PDF may take; past its budget the pages
            read so far are kept and the file counts as ``truncated``.
        max_sheet_rows: XLSX rows read per sheet.
        max_text_chars: characters of extracted text kept for one file.
        timeout_s: wall-clock budget for one office file other than PDF
            (enforced by the indexer).
        ocr: OCR of scanned pages and images (issue #36); None when off.
    """

    max_archive_entries: int = 10_000
    max_uncompressed_bytes: int = 200 * 1024 * 1024
    max_compression_ratio: float = 200.0
    max_pages: int = 2_000
    page_timeout_s: float = 10.0
    pdf_seconds_per_page: float = 0.25
    pdf_timeout_s: float = 600.0
    # pypdf parses content at ~1.3 MB/s on this machine (bench/pdf_content.py),
    # so 32 MB is ~25 s at worst; a text page holds a few KB, a dense
    # vector-drawing page a few MB.
    pdf_content_bytes: int = 32 * 1024 * 1024
    pdf_page_content_bytes: int = 4 * 1024 * 1024
    max_sheet_rows: int = 100_000
    max_text_chars: int = 20_000_000
    timeout_s: float = 30.0
    ocr: OcrSettings | None = None


Extractor = Callable[[bytes, str, ExtractLimits], Extracted]


def kind_for(name: str, text_suffixes: frozenset[str] = TEXT_SUFFIXES) -> str | None:
    """Return the extractor kind for a file name, or None when the suffix is unknown.

    Routing is by extension first: a Markdown file that mentions ``%PDF-1.7`` is
    still Markdown. Unknown suffixes are content-sniffed by the caller.
    """
    lower = name.lower()
    dot = lower.rfind(".")
    suffix = lower[dot:] if dot > 0 else ""
    if suffix in MARKDOWN_SUFFIXES:
        return "md"
    if suffix in OFFICE_SUFFIXES:
        return OFFICE_SUFFIXES[suffix]
    if suffix in text_suffixes:
        return "txt"
    return None


def get_extractor(kind: str) -> Extractor:
    """Import and return the extractor for ``kind`` (lazy, so start-up stays fast)."""
    module = importlib.import_module(f".{_MODULES[kind]}", __name__)
    fn: Extractor = module.extract
    return fn


_MODULES = {
    "md": "markdown",
    "txt": "text",
    "pdf": "pdf",
    "docx": "docx",
    "pptx": "pptx",
    "xlsx": "xlsx",
    "html": "html",
    "epub": "epub",
    "odt": "odf",
    "ods": "odf",
    "odp": "odf",
    "rtf": "rtf",
    "legacy": "legacy",
    "image": "image",
}
