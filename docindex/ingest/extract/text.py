"""Plain text: decoding, binary sniffing and newline normalisation."""

from __future__ import annotations

import codecs

from docindex.errors import ExtractionError
from docindex.ingest.extract.limits import ExtractLimits
from docindex.models import Extracted, Unit

_ALLOWED_CONTROLS = frozenset(b"\t\n\r\x0c\x0b\x1b\x08")
# Every byte except the disallowed controls: deleting them leaves the controls.
_NOT_CONTROL = bytes(b for b in range(256) if b >= 0x20 or b in _ALLOWED_CONTROLS)


def looks_binary(head: bytes) -> bool:
    """Sniff the first bytes: NUL bytes or many control characters mean binary.

    UTF-16 text carries NULs, so a UTF-16 BOM wins over the NUL rule.
    """
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    if b"\x00" in head:
        return True
    if not head:
        return False
    controls = len(head.translate(None, _NOT_CONTROL))  # in C (issue #7)
    return controls / len(head) > 0.10


def decode(data: bytes) -> str:
    """Decode bytes to text with normalised newlines.

    UTF-8 (BOM stripped) first, UTF-16 when a BOM says so; invalid UTF-8 bytes
    become U+FFFD rather than losing the file. CRLF and lone CR become LF, and
    NUL characters are dropped (they would end C strings in SQLite tooling).
    """
    if data.startswith(codecs.BOM_UTF8):
        text = data[3:].decode("utf-8", "replace")
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = data.decode("utf-16", "replace")
    else:
        text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract a plain-text file as one unit.

    Raises:
        ExtractionError: ``binary`` when the content is not text.
    """
    if looks_binary(data[:8192]):
        raise ExtractionError("binary", "content looks binary")
    text = decode(data)[: limits.max_text_chars]
    return Extracted(units=(Unit(text=text),), title=None, kind="txt")
