"""RTF extractor: the document's text, with striprtf.

striprtf (pure Python, BSD) drops control words, font and colour tables,
pictures and other destinations, and decodes ``\\'xx`` escapes in the
document's ``\\ansicpg`` code page and ``\\uN`` escapes as Unicode. The text
is one unit; line numbers are lines of that text (``\\par`` and ``\\line``
end lines), as for PDF pages.
"""

from __future__ import annotations

import codecs
import re

from docindex.errors import ExtractionError
from docindex.ingest.extract.limits import ExtractLimits
from docindex.ingest.extract.pdf import describe_error, normalize_text
from docindex.models import Extracted, Unit

_CODEPAGE = re.compile(rb"\\ansicpg(\d{3,5})")
_TITLE = re.compile(rb"\{\\title\s*([^{}]*)\}")


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract the text of an RTF document as one unit.

    Args:
        data: the raw bytes of the file.
        name: the file name, used in messages only.
        limits: bounds for this file (characters).

    Returns:
        One unit, ``kind="rtf"``, the ``\\info`` title when there is one.

    Raises:
        ExtractionError: ``corrupt`` when the file does not start like RTF or
            striprtf fails on it.
    """
    from striprtf.striprtf import rtf_to_text

    if not data.lstrip()[:5] == b"{\\rtf":
        raise ExtractionError("corrupt", "not an RTF file (no {\\rtf header)")
    encoding = _codepage(data)
    try:
        text = rtf_to_text(data.decode(encoding, "replace"), encoding, "replace")  # type: ignore[no-untyped-call]
    except RecursionError:
        raise ExtractionError("corrupt", "RTF groups nested too deeply") from None
    except Exception as exc:
        raise ExtractionError("corrupt", describe_error(exc)) from None
    text = normalize_text(text)
    meta: dict[str, str] = {}
    if len(text) > limits.max_text_chars:
        text = text[: limits.max_text_chars]
        meta["truncated"] = f"chars:{limits.max_text_chars}"
    return Extracted(units=(Unit(text=text),), title=_title(data, encoding),
                     kind="rtf", meta=meta)  # fmt: skip


def _codepage(data: bytes) -> str:
    """The ``\\ansicpg`` code page as a Python codec name (cp1252 by default)."""
    found = _CODEPAGE.search(data[:4096])
    if found:
        name = f"cp{int(found.group(1))}"
        try:
            codecs.lookup(name)
            return name
        except LookupError:
            pass
    return "cp1252"


def _title(data: bytes, encoding: str) -> str | None:
    found = _TITLE.search(data[:65536])
    if not found:
        return None
    raw = found.group(1).decode(encoding, "replace")
    title = " ".join(re.sub(r"\\[a-z]+-?\d* ?", "", raw).split())
    return title or None
