"""OpenDocument extractor (ODT, ODS, ODP), read with zipfile and lxml.

The three formats are one ZIP layout (``content.xml``, ``meta.xml``, a
``mimetype`` entry), so they are read the way their OOXML siblings are, behind
the same pre-flight (:mod:`._zipguard`: zip-bomb bounds, no DTD or entity in
any XML part) and with an lxml parser that resolves no entity and loads
nothing from the network. No extra library: lxml is already installed with
python-docx, and odfpy (last release 2020) would add a Python object per XML
node and a second parser to keep safe.

* ODT: one Markdown-headed unit, like DOCX: ``text:h`` headings with their
  outline level, paragraphs and list items one per line, table rows one line
  with `` | `` between cells; the table of contents is left out.
* ODS: one unit per sheet, like XLSX: one line per non-empty row, cells joined
  by `` | ``, ``line_cells`` giving the first cell's reference (``B7``).
* ODP: one unit per slide, like PPTX: the title frame first, then the other
  frames in order, then the speaker notes.

The type comes from the ``mimetype`` entry (a spreadsheet renamed ``.odt`` is
still read as a spreadsheet), else from the file name.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lxml.etree import _Element as Element  # lxml ships no type stubs

from docindex.errors import ExtractionError
from docindex.ingest.extract._zipguard import run_guarded
from docindex.ingest.extract.html import escape_markdown
from docindex.ingest.extract.limits import ExtractLimits
from docindex.ingest.extract.pdf import normalize_text
from docindex.models import Extracted, Unit

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
}
_O, _T, _TB, _D, _P = (
    f"{{{_NS[k]}}}" for k in ("office", "text", "table", "draw", "presentation")
)
_KINDS = {
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.text-template": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.spreadsheet-template": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
    "application/vnd.oasis.opendocument.presentation-template": "odp",
}
#: Subtrees that hold no body text (or repeat it: the table of contents).
_SKIP = frozenset(
    {f"{_T}table-of-content", f"{_T}alphabetical-index", f"{_T}illustration-index",
     f"{_T}note-citation", f"{_T}tracked-changes", f"{_O}annotation",
     f"{_T}sequence-decls", f"{_T}variable-decls", f"{_O}forms",
     f"{_TB}table-header-columns", f"{_TB}table-columns", f"{_TB}table-column"}
)  # fmt: skip
_MAX_DEPTH = 64  # nesting visited (hostile files only)
_MAX_REPEAT = 1024  # a repeated non-empty cell or row is written at most this often


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract an OpenDocument text, spreadsheet or presentation.

    Args:
        data: the raw bytes of the file.
        name: the file name: its suffix decides the type when the archive's
            ``mimetype`` entry does not.
        limits: archive, row and text bounds for this file.

    Returns:
        ``kind`` ``odt`` (one Markdown-headed unit), ``ods`` (a unit per sheet
        with ``sheet`` and ``line_cells``) or ``odp`` (a unit per slide with
        ``slide``); the title from ``meta.xml``.

    Raises:
        ExtractionError: ``zip-bomb``/``corrupt`` from the archive checks,
            ``encrypted`` for a password-protected file, ``corrupt`` when
            ``content.xml`` is missing or unreadable.
    """
    suffix = name.lower().rpartition(".")[2]

    def run(data: bytes, limits: ExtractLimits) -> Extracted:
        return _extract(data, suffix, limits)

    return run_guarded("OpenDocument", data, limits, run)


def _extract(data: bytes, suffix: str, limits: ExtractLimits) -> Extracted:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = set(zf.namelist())
        if "META-INF/manifest.xml" in names:
            manifest = zf.read("META-INF/manifest.xml")
            if b"encryption-data" in manifest:
                raise ExtractionError(
                    "encrypted", "password-protected OpenDocument file"
                )
        if "content.xml" not in names:
            raise ExtractionError("corrupt", "no content.xml: not an OpenDocument file")
        mimetype = zf.read("mimetype").decode("ascii", "replace").strip() if (
            "mimetype" in names
        ) else ""  # fmt: skip
        content = parse_xml(zf.read("content.xml"))
        meta = parse_xml(zf.read("meta.xml")) if "meta.xml" in names else None
    kind = _KINDS.get(mimetype) or {"ods": "ods", "odp": "odp"}.get(suffix, "odt")
    title = None
    if meta is not None:
        found = meta.find(f".//{{{_NS['dc']}}}title")
        if found is not None:
            title = " ".join("".join(found.itertext()).split()) or None
    notes: dict[str, str] = {}
    if kind == "ods":
        units = _sheets(content, limits, notes)
    elif kind == "odp":
        units, first_title = _slides(content, limits, notes)
        title = title or first_title
    else:
        units = [_document(content, limits, notes)]
    if not units:
        units = [Unit(text="")]
    return Extracted(units=tuple(units), title=title, kind=kind, meta=notes)


def parse_xml(data: bytes) -> Element:
    """Parse an XML part safely: no entity expansion, no DTD, no network.

    Raises:
        ExtractionError: ``corrupt`` when the part is not well-formed XML.
    """
    from lxml import etree

    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )
    try:
        return etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError as exc:
        message = " ".join(str(exc).split())  # lxml's messages hold newlines
        raise ExtractionError("corrupt", f"damaged XML: {message}") from None


def _text(el: Element, depth: int = 0, breaks: str = "\n") -> str:
    """The text of a paragraph-like element: spaces, tabs and breaks expanded."""
    out: list[str] = [el.text or ""]
    for child in el:
        tag = child.tag
        if tag == f"{_T}s":
            out.append(" " * min(int(child.get(f"{_T}c", "1") or 1), 100))
        elif tag == f"{_T}tab":
            out.append("\t")
        elif tag == f"{_T}line-break":
            out.append(breaks)
        elif tag not in _SKIP and depth < _MAX_DEPTH and isinstance(tag, str):
            out.append(_text(child, depth + 1, breaks))
        out.append(child.tail or "")
    return "".join(out)


# -- ODT ----------------------------------------------------------------------


def _document(root: Element, limits: ExtractLimits, notes: dict[str, str]) -> Unit:
    body = root.find(f"{_O}body/{_O}text")
    lines: list[str] = []
    if body is not None:
        budget = [limits.max_text_chars]
        for line in _blocks(body, 0, budget):
            lines.append(line)
        if budget[0] <= 0:
            notes["truncated"] = f"chars:{limits.max_text_chars}"
    return Unit(text=normalize_text("\n".join(lines)), markdown=True)


def _blocks(el: Element, depth: int, budget: list[int]) -> Iterator[str]:
    """Lines of a text container (body, section, list item, cell, frame)."""
    for child in el:
        if budget[0] <= 0:
            return
        tag = child.tag
        if tag in _SKIP or not isinstance(tag, str):
            continue
        if tag == f"{_T}h":
            text = " ".join(_text(child).split())
            if text:
                level = child.get(f"{_T}outline-level") or "1"
                n = min(6, max(1, int(level) if level.isdigit() else 1))
                budget[0] -= len(text)
                yield "#" * n + " " + text
        elif tag == f"{_T}p":
            text = _text(child)
            for piece in text.split("\n"):
                if piece.strip():
                    budget[0] -= len(piece)
                    yield escape_markdown(piece.strip())
        elif tag == f"{_TB}table":
            for _, row in _rows(child):
                line = " | ".join(c for c, _ in row)
                if line:
                    budget[0] -= len(line)
                    yield line
        elif depth < _MAX_DEPTH:  # list, list-item, section, frame, text-box ...
            yield from _blocks(child, depth + 1, budget)


# -- tables (ODT tables and ODS sheets) ----------------------------------------


def _rows(table: Element) -> Iterator[tuple[int, list[tuple[str, int]]]]:
    """Each non-empty row as ``(1-based row number, [(cell text, 0-based column)])``.

    Rows and cells with ``number-*-repeated`` are expanded only when they hold
    text (at most ``_MAX_REPEAT`` times): an empty row repeated a million
    times is how a sheet fills its last rows, and must cost nothing.
    """
    number = 0
    for row in table.iter(f"{_TB}table-row"):
        rep = _repeat(row, "rows")
        cells: list[tuple[str, int]] = []
        column = 0
        for cell in row:
            if cell.tag not in (f"{_TB}table-cell", f"{_TB}covered-table-cell"):
                continue
            n = _repeat(cell, "columns")
            value = " ".join(
                " ".join(_text(p, breaks=" ").split())
                for p in cell.iter(f"{_T}p", f"{_T}h")
            ).strip()
            if value:
                cells.extend((value, column + k) for k in range(min(n, _MAX_REPEAT)))
            column += n
        if cells:
            for k in range(min(rep, _MAX_REPEAT)):
                yield number + k + 1, cells
        number += rep


def _repeat(el: Element, what: str) -> int:
    value = el.get(f"{_TB}number-{what}-repeated") or "1"
    return max(1, int(value)) if value.isdigit() else 1


def _sheets(root: Element, limits: ExtractLimits, notes: dict[str, str]) -> list[Unit]:
    units: list[Unit] = []
    cut: list[str] = []
    chars = 0
    body = root.find(f"{_O}body/{_O}spreadsheet")
    for table in body.iterchildren(f"{_TB}table") if body is not None else ():
        name = table.get(f"{_TB}name") or f"Sheet{len(units) + 1}"
        lines: list[str] = []
        refs: list[str] = []
        rows = 0
        for number, cells in _rows(table):
            if rows >= limits.max_sheet_rows or chars >= limits.max_text_chars:
                cut.append(f"{name}:{rows}")
                break
            rows += 1
            line = " | ".join(value for value, _ in cells)
            lines.append(line)
            refs.append(f"{_column(cells[0][1])}{number}")
            chars += len(line) + 1
        if lines:
            units.append(
                Unit(text="\n".join(lines), sheet=name, line_cells=tuple(refs))
            )
    if cut:
        notes["truncated"] = ";".join(cut)
    return units


def _column(index: int) -> str:
    """0-based column index -> spreadsheet letters (0 -> A, 27 -> AB)."""
    out = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        out = chr(65 + rem) + out
    return out


# -- ODP ----------------------------------------------------------------------


def _slides(
    root: Element, limits: ExtractLimits, notes: dict[str, str]
) -> tuple[list[Unit], str | None]:
    units: list[Unit] = []
    first_title: str | None = None
    chars = 0
    body = root.find(f"{_O}body/{_O}presentation")
    pages = body.iterchildren(f"{_D}page") if body is not None else ()
    for number, page in enumerate(pages, start=1):
        if chars >= limits.max_text_chars:
            notes["truncated"] = f"chars:{limits.max_text_chars}"
            break
        title = ""
        lines: list[str] = []
        for frame in page.iterchildren():
            if frame.tag == f"{_P}notes":
                continue
            text = _frame_text(frame)
            if not text:
                continue
            if frame.get(f"{_P}class") == "title" and not title:
                title = " ".join(text.split())
                lines.insert(0, text)
            else:
                lines.append(text)
        if number == 1:
            first_title = title or None
        for speaker in page.iterchildren(f"{_P}notes"):
            text = _frame_text(speaker)
            if text:
                lines.append(text)
        text = normalize_text("\n".join(lines))
        if text.strip():
            units.append(Unit(text=text, slide=number))
            chars += len(text)
    return units, first_title


def _frame_text(frame: Element) -> str:
    """The text of a drawing frame (text boxes, tables, groups), one line per paragraph."""
    lines: list[str] = []
    for el in frame.iter(f"{_T}p", f"{_T}h", f"{_TB}table-row"):
        if el.tag == f"{_TB}table-row":
            cells = [
                " ".join(_text(p, breaks=" ").split())
                for c in el.iterchildren(f"{_TB}table-cell")
                for p in c.iter(f"{_T}p")
            ]
            row = " | ".join(c for c in cells if c)
            if row:
                lines.append(row)
            continue
        if any(a.tag == f"{_TB}table-cell" for a in el.iterancestors()):
            continue  # read with its row
        text = _text(el)
        if text.strip():
            lines.append(text.strip())
    return "\n".join(lines)
