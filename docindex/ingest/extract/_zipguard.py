"""Pre-flight checks for OOXML (DOCX, PPTX, XLSX) archives.

The checks run before python-docx, python-pptx or openpyxl touch a file, so a
hostile archive costs milliseconds and bounded memory instead of gigabytes:

* :func:`check_zip` reads only the ZIP central directory and refuses archives
  whose declared sizes, entry counts or compression ratios look like a zip bomb.
  Declared sizes can be trusted as an upper bound afterwards because
  ``zipfile.ZipExtFile`` never returns more than an entry's declared
  ``file_size``, and every parser used here reads parts through ``zipfile``.
* :func:`check_xml_parts` refuses XML parts that carry a DTD (``<!DOCTYPE``),
  the only place where entities can be declared ("billion laughs"). OOXML never
  needs a DTD (ECMA-376 Part 2, section 8.1.4 forbids DTD declarations in parts).
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable
from typing import IO

from docindex.errors import ExtractionError
from docindex.ingest.extract.limits import ExtractLimits
from docindex.models import Extracted

#: Entries smaller than this are never judged by their compression ratio: tiny
#: XML parts full of repeated markup legitimately compress 100:1 or more.
RATIO_MIN_BYTES = 1024 * 1024

#: An XML prolog (declaration, comments, processing instructions, DOCTYPE) longer
#: than this is refused; real OOXML prologs are well under 200 bytes.
MAX_PROLOG_BYTES = 64 * 1024

_CHUNK = 4096
_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# Password-protected OOXML is stored as an OLE compound file holding an
# "EncryptionInfo" stream (MS-OFFCRYPTO 2.3.4); directory names are UTF-16LE.
_ENCRYPTION_INFO = "EncryptionInfo".encode("utf-16-le")
_PROLOG_SKIP = re.compile(rb"\s+|<\?.*?\?>|<!--.*?-->", re.DOTALL)


def check_zip(data: bytes, limits: ExtractLimits) -> None:
    """Refuse a file that is not a ZIP archive or that looks like a zip bomb.

    Only the central directory is read, so this runs in milliseconds with
    memory bounded by the number of entries.

    Args:
        data: the raw bytes of the file.
        limits: the archive bounds to enforce.

    Raises:
        ExtractionError: ``encrypted`` for a password-protected Office file,
            ``corrupt`` when ``data`` is not a ZIP archive, ``zip-bomb`` when an
            archive bound is exceeded.
    """
    if data.startswith(_CFB_MAGIC):
        if data.find(_ENCRYPTION_INFO) != -1:
            raise ExtractionError("encrypted", "password-protected Office document")
        raise ExtractionError(
            "corrupt", "legacy OLE file (.doc/.xls/.ppt), not a ZIP archive"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except ExtractionError:
        raise  # e.g. the indexer's timeout, raised from a signal handler
    except Exception as exc:  # BadZipFile, NotImplementedError (version), OSError...
        raise ExtractionError(
            "corrupt", f"not a ZIP archive (mislabelled?): {exc}"
        ) from None
    if len(infos) > limits.max_archive_entries:
        raise ExtractionError(
            "zip-bomb",
            f"{len(infos)} archive entries > limit {limits.max_archive_entries}",
        )
    total = 0
    for info in infos:
        total += info.file_size
        if total > limits.max_uncompressed_bytes:
            raise ExtractionError(
                "zip-bomb",
                f"declared uncompressed size over {total} bytes > limit "
                f"{limits.max_uncompressed_bytes}",
            )
        if info.file_size > RATIO_MIN_BYTES:
            ratio = info.file_size / max(info.compress_size, 1)
            if ratio > limits.max_compression_ratio:
                raise ExtractionError(
                    "zip-bomb",
                    f"entry {info.filename!r} expands {info.compress_size} -> "
                    f"{info.file_size} bytes (ratio {ratio:.0f} > "
                    f"{limits.max_compression_ratio:g})",
                )


def check_xml_parts(data: bytes, allow_doctype: bool = False) -> None:
    """Refuse an OOXML archive if any XML part declares a DTD or entities.

    Every entry whose content starts like XML is checked, whatever its name,
    because parsers pick parts by content type, not by file extension. Only the
    prolog is read (the DOCTYPE must precede the root element), so the cost is a
    few KiB of decompression per entry. Call :func:`check_zip` first.

    Args:
        data: the raw bytes of a ZIP archive that passed :func:`check_zip`.
        allow_doctype: accept a bare ``<!DOCTYPE html ...>`` without an
            internal subset (EPUB's XHTML has one; it can declare nothing).

    Raises:
        ExtractionError: ``corrupt`` when a part carries a DTD, has an absurdly
            long prolog, or cannot be decompressed.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for info in zf.infolist():
                if info.is_dir() or info.file_size == 0:
                    continue
                with zf.open(info) as part:
                    _check_prolog(part, info.filename, allow_doctype)
    except ExtractionError:
        raise
    except Exception as exc:  # zlib.error, BadZipFile (CRC), NotImplementedError...
        raise ExtractionError(
            "corrupt", f"damaged archive: {type(exc).__name__}: {exc}"
        ) from None


def check_ooxml(data: bytes, limits: ExtractLimits) -> None:
    """Run :func:`check_zip` then :func:`check_xml_parts` (the OOXML pre-flight)."""
    check_zip(data, limits)
    check_xml_parts(data)


def _check_prolog(part: IO[bytes], name: str, allow_doctype: bool = False) -> None:
    """Read a part's prolog up to its root element; raise if it holds a DTD."""
    head = part.read(_CHUNK)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        # UTF-16 XML: decode what we read; a DTD is still "<!DOCTYPE".
        encoding = "utf-16"
    elif head.startswith(b"\xef\xbb\xbf"):
        head, encoding = head[3:], ""
    else:
        encoding = ""
    if not encoding and not head.lstrip().startswith(b"<"):
        return  # binary part (image, embedded object): not XML
    buf = head
    while True:
        text = buf.decode(encoding, "ignore").encode() if encoding else buf
        state = _scan_prolog(text, allow_doctype)
        if state == "dtd":
            raise ExtractionError("corrupt", f"XML with DTD/entities refused ({name})")
        if state == "root":
            return
        if len(buf) >= MAX_PROLOG_BYTES:
            raise ExtractionError("corrupt", f"XML prolog too long ({name})")
        more = part.read(_CHUNK)
        if not more:
            return  # no root element: let the parser report it
        buf += more


def _scan_prolog(text: bytes, allow_doctype: bool = False) -> str:
    """Classify the start of an XML document: ``root``, ``dtd`` or ``more``."""
    pos = 0
    while True:
        match = _PROLOG_SKIP.match(text, pos)
        if match is None:
            if allow_doctype and text[pos : pos + 9].upper() == b"<!DOCTYPE":
                end = text.find(b">", pos)
                if end == -1:
                    return "more"
                if b"[" in text[pos:end]:
                    return "dtd"  # an internal subset can declare entities
                pos = end + 1
                continue
            break
        pos = match.end()
    rest = text[pos:]
    if rest[:9].upper() == b"<!DOCTYPE" or rest[:8].upper() == b"<!ENTITY":
        return "dtd"
    if not rest or rest.startswith((b"<?", b"<!")) or rest == b"<":
        # An unterminated declaration/comment, or not enough bytes yet.
        return "more"
    return "root"


def run_guarded(
    label: str,
    data: bytes,
    limits: ExtractLimits,
    extract: Callable[[bytes, ExtractLimits], Extracted],
    allow_doctype: bool = False,
) -> Extracted:
    """Check the archive, then run ``extract``; any other failure is ``corrupt``.

    ``allow_doctype`` is for EPUB (see :func:`check_xml_parts`).

    Library warnings are silenced (the core never prints, and tests turn
    warnings into errors); ExtractionError and BaseExceptions such as the
    indexer's timeout pass through untouched.
    """
    import warnings

    from docindex.ingest.extract.pdf import describe_error

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            check_zip(data, limits)
            check_xml_parts(data, allow_doctype)
            return extract(data, limits)
        except ExtractionError:
            raise
        except RecursionError:
            raise ExtractionError("corrupt", f"{label} nested too deeply") from None
        except Exception as exc:
            raise ExtractionError("corrupt", describe_error(exc)) from None


_RT_CORE = (
    "http://schemas.openxmlformats.org/package/2006/relationships/metadata/"
    "core-properties"
)


def core_title(package: object) -> str | None:
    """The core-properties title of an OOXML package, or None.

    python-docx and python-pptx invent a default title ("Word Document") when
    the part is missing; reading the part directly never shows that.
    """
    try:
        part = package.part_related_by(_RT_CORE)  # type: ignore[attr-defined]
        title = part.core_properties.title
    except ExtractionError:
        raise  # the indexer's timeout
    except Exception:  # absent, duplicated or unreadable core properties
        return None
    title = " ".join((title or "").split())
    return title or None
