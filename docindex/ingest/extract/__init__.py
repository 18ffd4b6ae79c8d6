"""Suffix -> extractor registry.

Kinds: ``md``, ``txt``, ``pdf``, ``docx``, ``pptx``, ``xlsx``, ``html``,
``epub``, ``odt``/``ods``/``odp`` (one ``odf`` module), ``rtf``, ``image``
(read by OCR, issue #36), and ``legacy`` for binary .doc/.xls/.ppt (refused
with a conversion hint).

Every extractor is a top-level function ``extract(data, name, limits) -> Extracted``
so it can run in a worker process. Heavy libraries (pypdf, python-docx, ...) are
imported inside the extractor modules, which are imported only when a file of
that type is met, so ``docindex --help`` stays fast. The extractors take
``ExtractLimits`` from ``limits`` and never import this registry (issue #49).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from docindex.ingest.extract.limits import ExtractLimits as ExtractLimits
from docindex.models import Extracted

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
