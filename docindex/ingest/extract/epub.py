"""EPUB extractor: one Markdown-headed unit per chapter, in spine order.

Read with zipfile and lxml behind the OOXML pre-flight (:mod:`._zipguard`:
zip-bomb bounds; a DTD only as a bare ``<!DOCTYPE html>``, never with an
internal subset that could declare entities). ebooklib would add a dependency
that reads every item of the book into memory and parses XHTML with the same
lxml; the package document, the spine and the table of contents are three
small XML files.

Each spine item is an XHTML page read like an HTML file (:mod:`.html`): lines
are the chapter file's source lines, ``h1``-``h6`` are headings. The chapter's
table-of-contents label, when its page does not start with that heading,
becomes a level-1 heading above the page's own (shifted one level down), so a
hit's heading path starts with the chapter title. A unit's ``sheet`` is the
chapter file (its path in the manifest), so hits cite ``chapter.xhtml`` and a
line.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lxml.etree import _Element as Element  # lxml ships no type stubs
from urllib.parse import unquote

from docindex.errors import ExtractionError
from docindex.ingest.extract._zipguard import run_guarded
from docindex.ingest.extract.html import decode_html, page_text
from docindex.ingest.extract.limits import ExtractLimits
from docindex.ingest.extract.odf import parse_xml
from docindex.models import Extracted, Unit

_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_PAGES = frozenset({"application/xhtml+xml", "text/html", "application/xml"})


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract an EPUB 2 or 3 book, one unit per chapter in spine order.

    Args:
        data: the raw bytes of the file.
        name: the file name, used in messages only.
        limits: archive and text bounds for this file.

    Returns:
        Units with ``markdown=True`` and ``sheet`` set to the chapter file,
        ``kind="epub"`` and the book's ``dc:title``.

    Raises:
        ExtractionError: ``zip-bomb``/``corrupt`` from the archive checks,
            ``encrypted`` for a DRM-protected book, ``corrupt`` when the
            container or package document is missing or unreadable.
    """
    return run_guarded("EPUB", data, limits, _extract, allow_doctype=True)


def _extract(data: bytes, limits: ExtractLimits) -> Extracted:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = set(zf.namelist())
        opf_path = _package_path(zf, names)
        opf = parse_xml(zf.read(opf_path))
        base = posixpath.dirname(opf_path)
        items = _manifest(opf, base)
        spine = [
            ref.get("idref", "") for ref in opf.iterfind(f"{_OPF}spine/{_OPF}itemref")
        ]
        if "META-INF/encryption.xml" in names:
            _refuse_drm(zf.read("META-INF/encryption.xml"), items, spine)
        labels = _toc_labels(zf, names, opf, items)
        units: list[Unit] = []
        chars = 0
        meta: dict[str, str] = {}
        for idref in spine:
            item = items.get(idref)
            if item is None or item[1] not in _PAGES or item[0] not in names:
                continue
            path = item[0]
            if chars >= limits.max_text_chars:
                meta["truncated"] = f"chars:{limits.max_text_chars}"
                break
            text = _chapter(
                zf.read(path), labels.get(path), limits.max_text_chars - chars
            )
            if text.strip():
                rel = posixpath.relpath(path, base) if base else path
                units.append(Unit(text=text, sheet=rel, markdown=True))
                chars += len(text)
    title_el = opf.find(f"{_OPF}metadata/{_DC}title")
    title = None
    if title_el is not None:
        title = " ".join("".join(title_el.itertext()).split()) or None
    if not units:
        units.append(Unit(text=""))
    return Extracted(units=tuple(units), title=title, kind="epub", meta=meta)


def _package_path(zf: zipfile.ZipFile, names: set[str]) -> str:
    """The package document's path, from ``META-INF/container.xml``."""
    if "META-INF/container.xml" not in names:
        raise ExtractionError("corrupt", "no META-INF/container.xml: not an EPUB")
    container = parse_xml(zf.read("META-INF/container.xml"))
    for rootfile in container.iter(f"{_CONTAINER}rootfile"):
        path = rootfile.get("full-path") or ""
        if path in names:
            return path
    raise ExtractionError("corrupt", "the EPUB container names no package document")


def _manifest(opf: Element, base: str) -> dict[str, tuple[str, str, str]]:
    """id -> (archive path, media type, properties) of every manifest item."""
    out: dict[str, tuple[str, str, str]] = {}
    for item in opf.iterfind(f"{_OPF}manifest/{_OPF}item"):
        href = unquote((item.get("href") or "").split("#")[0])
        path = posixpath.normpath(posixpath.join(base, href)) if href else ""
        out[item.get("id") or ""] = (
            path, item.get("media-type") or "", item.get("properties") or ""
        )  # fmt: skip
    return out


def _refuse_drm(
    encryption: bytes, items: dict[str, tuple[str, str, str]], spine: list[str]
) -> None:
    """Refuse a book whose chapters are encrypted (fonts alone may be obfuscated)."""
    pages = {items[i][0] for i in spine if i in items}
    xml = parse_xml(encryption)
    for ref in xml.iter("{http://www.w3.org/2001/04/xmlenc#}CipherReference"):
        if unquote(ref.get("URI") or "") in pages:
            raise ExtractionError(
                "encrypted", "DRM-protected EPUB (encrypted chapters)"
            )


def _toc_labels(
    zf: zipfile.ZipFile, names: set[str], opf: Element,
    items: dict[str, tuple[str, str, str]],
) -> dict[str, str]:  # fmt: skip
    """Chapter file -> its first table-of-contents label (EPUB 3 nav, else NCX)."""
    labels: dict[str, str] = {}
    for path, _media, props in items.values():
        if "nav" in props.split() and path in names:
            _nav_labels(zf.read(path), posixpath.dirname(path), labels)
    if labels:
        return labels
    spine = opf.find(f"{_OPF}spine")
    toc = items.get(spine.get("toc", "") if spine is not None else "")
    if toc is None:
        toc = next(
            (i for i in items.values() if i[1] == "application/x-dtbncx+xml"), None
        )
    if toc is not None and toc[0] in names:
        ncx = parse_xml(zf.read(toc[0]))
        base = posixpath.dirname(toc[0])
        for point in ncx.iter(f"{_NCX}navPoint"):
            text = point.find(f"{_NCX}navLabel/{_NCX}text")
            src = point.find(f"{_NCX}content")
            if text is None or src is None:
                continue
            _label(labels, base, src.get("src") or "", "".join(text.itertext()))
    return labels


def _nav_labels(data: bytes, base: str, labels: dict[str, str]) -> None:
    from docindex.ingest.extract.html import parse

    root = parse(decode_html(data))
    navs = root.xpath("//nav")
    toc = [n for n in navs if "toc" in (n.get("epub:type") or n.get("type") or "")]
    for nav in toc or navs[:1]:
        for link in nav.iter("a"):
            _label(labels, base, link.get("href") or "", link.text_content())


def _label(labels: dict[str, str], base: str, href: str, text: str) -> None:
    path = posixpath.normpath(posixpath.join(base, unquote(href.split("#")[0])))
    text = " ".join(text.split())
    if text and path not in labels:
        labels[path] = text


def _chapter(data: bytes, label: str | None, max_chars: int) -> str:
    """A chapter's text; its TOC label heads it unless its first heading says it."""
    page = page_text(decode_html(data), max_chars)
    text = page.text
    if not label or (page.first_heading or "").casefold() == label.casefold():
        return text
    lines = text.split("\n")
    shifted = [
        "#" + line if line.startswith("#") and not line.startswith("######") else line
        for line in lines
    ]
    first = next((i for i, line in enumerate(shifted) if line.strip()), len(shifted))
    heading = f"# {label}"
    if first > 0:
        shifted[first - 1] = heading  # a blank line above the text: lines stay
    else:
        shifted.insert(0, heading)
    return "\n".join(shifted)
