"""The bounds every extractor receives (``ExtractLimits``).

Its own module so that the extractors, which the registry in ``__init__``
imports by name, never import the registry back (issue #49).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docindex.ingest.extract.ocr import OcrSettings


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
