"""Legacy binary Office files (.doc, .xls, .ppt): named and sent to conversion.

Word, Excel and PowerPoint 97-2003 files are OLE compound documents that no
well-kept pure-Python library reads reliably, so they stay out with the reason
``unsupported`` and a message that says what to convert them to. Files that
only carry the old extension are read for what they are: an RTF or HTML file
saved as ``.doc`` (Word and many web exports do this), a renamed OOXML file,
or plain text.
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING

from docindex.errors import ExtractionError
from docindex.ingest.extract.limits import ExtractLimits
from docindex.ingest.extract.text import looks_binary
from docindex.models import Extracted

if TYPE_CHECKING:
    from collections.abc import Callable

    Extractor = Callable[[bytes, str, ExtractLimits], Extracted]

_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # OLE compound file
# A Graphviz file: a line that opens "[strict] (di)graph [name] {"
_GRAPHVIZ = re.compile(rb"^\s*(?:strict\s+)?(?:di)?graph\b[^{\n]*\{", re.I | re.M)

_FORMATS = {
    "doc": ("Word 97-2003 document", ".docx (or .odt)"),
    "dot": ("Word 97-2003 template", ".docx (or .odt)"),
    "xls": ("Excel 97-2003 workbook", ".xlsx (or .ods)"),
    "xlt": ("Excel 97-2003 template", ".xlsx (or .ods)"),
    "ppt": ("PowerPoint 97-2003 presentation", ".pptx (or .odp)"),
    "pps": ("PowerPoint 97-2003 slide show", ".pptx (or .odp)"),
}
_OOXML = {"doc": "docx", "dot": "docx", "xls": "xlsx", "xlt": "xlsx",
          "ppt": "pptx", "pps": "pptx"}  # fmt: skip


def _read_as(module: str) -> Extractor:
    """A sibling extractor by module name, imported on first use (never the
    registry in ``__init__``, which imports this module: issue #49)."""
    found: Extractor = importlib.import_module(f"{__package__}.{module}").extract
    return found


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Refuse a binary legacy Office file; read one that is really RTF/HTML/OOXML.

    Raises:
        ExtractionError: ``unsupported`` naming the format and what to convert
            it to.
    """
    suffix = name.lower().rpartition(".")[2]
    head = data[:1024].lstrip()
    if head.startswith(b"{\\rtf"):
        return _read_as("rtf")(data, name, limits)
    if head[:64].lower().startswith((b"<html", b"<!doctype html", b"<?xml")) or (
        b"<html" in head.lower()
    ):
        return _read_as("html")(data, name, limits)
    if data.startswith(b"PK\x03\x04") and suffix in _OOXML:
        return _read_as(_OOXML[suffix])(data, name, limits)
    if not data.startswith(_CFB_MAGIC) and not looks_binary(data[:8192]):
        if suffix == "dot" and _GRAPHVIZ.search(data[:4096]):  # not prose (#45)
            raise ExtractionError(
                "diagram-source",
                'a Graphviz diagram\'s source; text_extensions = [".dot"] indexes '
                "such files",
            )
        return _read_as("text")(data, name, limits)  # an old README.doc
    what, target = _FORMATS.get(suffix, ("legacy Office file", "a current format"))
    raise ExtractionError(
        "unsupported",
        f"{what} (.{suffix}) is a binary format docindex does not read; "
        f"save it as {target} to index it",
    )
