"""DOCX extractor: the body as Markdown-headed text, with python-docx.

The whole document is one :class:`Unit` with ``markdown=True``: paragraphs and
tables in body order, ``Title``/``Heading N`` paragraphs as ``#`` headings, one
line per table row with `` | `` between cells. After the body come plain lines
for headers and footers (each distinct line once), then footnotes, endnotes and
comments (one line each). The text is read from the WordprocessingML tree
directly so that content controls, tracked insertions, hyperlinks and text boxes
are not lost, and deleted text and field codes stay out.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docx.opc.part import Part
    from lxml.etree import _Element as Element  # lxml ships no type stubs

from docindex.ingest.extract._zipguard import core_title, run_guarded
from docindex.ingest.extract.limits import ExtractLimits
from docindex.ingest.extract.pdf import normalize_text
from docindex.models import Extracted, Unit

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_P, _TBL, _TR, _TC = f"{_W}p", f"{_W}tbl", f"{_W}tr", f"{_W}tc"
_T, _TAB, _BR, _CR = f"{_W}t", f"{_W}tab", f"{_W}br", f"{_W}cr"
_TXBX = f"{_W}txbxContent"
# Subtrees that never hold body text: properties, deleted runs, field codes.
_SKIP = frozenset(
    {_MC_FALLBACK, f"{_W}sectPr", f"{_W}pPr", f"{_W}rPr", f"{_W}tblPr", f"{_W}trPr",
     f"{_W}tcPr", f"{_W}tblGrid", f"{_W}del", f"{_W}delText", f"{_W}instrText",
     f"{_W}moveFrom"}
)  # fmt: skip
_NOTE_SKIP_TYPES = frozenset(
    {"separator", "continuationSeparator", "continuationNotice"}
)
_HEADING = re.compile(r"heading ([1-9])")
# Lines Markdown would read as structure; escaped so a body paragraph such as
# "# of items" or "---" never invents a heading, fence or front matter.
_MD_STRUCTURE = re.compile(r"( {0,3})(#{1,6}(?:[ \t]|$)|```|~~~|=+[ \t]*$|-+[ \t]*$)")

_RT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract a Word document as one Markdown-headed unit.

    Args:
        data: the raw bytes of the file.
        name: the file name, used in messages only.
        limits: archive and text bounds for this file.

    Returns:
        One unit with ``markdown=True`` (empty text for an empty document),
        ``kind="docx"`` and the core-properties title when set.

    Raises:
        ExtractionError: ``zip-bomb``/``corrupt``/``encrypted`` from the archive
            checks, ``corrupt`` for anything python-docx cannot read.
    """
    return run_guarded("DOCX", data, limits, _extract)


def _extract(data: bytes, limits: ExtractLimits) -> Extracted:
    import docx

    document = docx.Document(io.BytesIO(data))
    part = document.part
    styles = _heading_levels(document.styles.element)
    lines: list[str] = []
    _render_blocks(document.element.body, styles, lines, escape=True)

    extra: list[str] = []
    seen: set[str] = set()
    for root in _related_roots(part, _hdrftr_ids(document.element.body)):
        block: list[str] = []
        _render_blocks(root, {}, block, escape=False)
        for line in block:
            if line.strip() and line not in seen:
                seen.add(line)
                extra.append(line)
    for reltype, tag in (("footnotes", "footnote"), ("endnotes", "endnote")):
        for root in _related_roots(part, _ids_of(part, _RT + reltype)):
            for note in root.iter(f"{_W}{tag}"):
                if note.get(f"{_W}type") not in _NOTE_SKIP_TYPES:
                    extra.append(_flat_text(note))
    for root in _related_roots(part, _ids_of(part, _RT + "comments")):
        for comment in root.iter(f"{_W}comment"):
            extra.append(_flat_text(comment))

    tail = [_escape(line) for line in extra if line.strip()]
    text = normalize_text("\n".join(lines + tail))
    meta: dict[str, str] = {}
    if len(text) > limits.max_text_chars:
        cut = text.rfind("\n", 0, limits.max_text_chars)
        text = text[: cut if cut > 0 else limits.max_text_chars]
        meta["truncated"] = f"chars:{limits.max_text_chars}"
    title = core_title(part.package)
    return Extracted(
        units=(Unit(text=text, markdown=True),), title=title, kind="docx", meta=meta
    )


def _heading_levels(styles_root: Element) -> dict[str, int]:
    """Map paragraph style ids to a Markdown heading level (Title -> 1)."""
    levels: dict[str, int] = {}
    for style in styles_root.iter(f"{_W}style"):
        name_el = style.find(f"{_W}name")
        style_id = style.get(f"{_W}styleId")
        if name_el is None or style_id is None:
            continue
        # Built-in names are stored in English ("heading 1") in every locale.
        name = (name_el.get(f"{_W}val") or "").strip().lower()
        match = _HEADING.fullmatch(name)
        if name == "title":
            levels[style_id] = 1
        elif match:
            levels[style_id] = min(int(match.group(1)), 6)
    return levels


def _render_blocks(
    container: Element, styles: dict[str, int], lines: list[str], *, escape: bool
) -> None:
    """Append one line per paragraph and per table row found under ``container``.

    With ``escape``, lines that are not headings are Markdown-escaped.
    """
    esc = _escape if escape else _same
    for child in container:
        tag = child.tag
        if tag == _P:
            boxes: list[Element] = []
            text = _para_text(child, boxes)
            level = styles.get(_style_id(child), 0) if styles else 0
            if level and text.strip():
                lines.append("#" * level + " " + " ".join(text.split()))
            else:
                lines.extend(esc(line) for line in normalize_text(text).split("\n"))
            for box in boxes:
                _render_blocks(box, styles, lines, escape=escape)
        elif tag == _TBL:
            for row in _iter_tagged(child, _TR, _TBL):
                cells = [_flat_text(tc) for tc in _iter_tagged(row, _TC, _TR)]
                while cells and not cells[-1]:  # trailing empty cells are noise
                    cells.pop()
                if cells:
                    lines.append(esc(" | ".join(cells)))
        elif isinstance(tag, str) and tag not in _SKIP:
            _render_blocks(
                child, styles, lines, escape=escape
            )  # sdt, customXml, ins, ...


def _iter_tagged(parent: Element, tag: str, stop: str) -> Iterator[Element]:
    """Yield ``tag`` children of ``parent``, looking through wrappers like w:sdt."""
    for child in parent:
        if child.tag == tag:
            yield child
        elif (
            isinstance(child.tag, str) and child.tag != stop and child.tag not in _SKIP
        ):
            yield from _iter_tagged(child, tag, stop)


def _style_id(p: Element) -> str:
    ppr = p.find(f"{_W}pPr")
    style = ppr.find(f"{_W}pStyle") if ppr is not None else None
    return (style.get(f"{_W}val") or "") if style is not None else ""


def _para_text(p: Element, boxes: list[Element]) -> str:
    """The text of one paragraph; text boxes met inside are collected in ``boxes``."""
    out: list[str] = []
    _collect(p, out, boxes)
    return "".join(out)


def _collect(el: Element, out: list[str], boxes: list[Element]) -> None:
    for child in el:
        tag = child.tag
        if tag == _T:
            out.append(child.text or "")
        elif tag == _TAB:
            out.append("\t")
        elif tag in (_BR, _CR):
            out.append("\n")
        elif tag == f"{_W}noBreakHyphen":
            out.append("-")
        elif tag == _TXBX:
            boxes.append(child)
        elif isinstance(tag, str) and tag not in _SKIP:
            _collect(child, out, boxes)


def _flat_text(el: Element) -> str:
    """All text under ``el`` (a cell, note or comment) on one line."""
    lines: list[str] = []
    _render_blocks(el, {}, lines, escape=False)
    return " ".join(" ".join(line.split()) for line in lines if line.strip())


def _same(line: str) -> str:
    return line


def _escape(line: str) -> str:
    """Backslash-escape a line that Markdown would read as a heading or fence."""
    match = _MD_STRUCTURE.match(line)
    if match is None:
        return line
    indent = match.group(1)
    return indent + "\\" + line[len(indent) :]


def _hdrftr_ids(body: Element) -> list[str]:
    """Header then footer relationship ids, in section order, without repeats."""
    ids: dict[str, None] = {}
    for kind in ("headerReference", "footerReference"):
        for ref in body.iter(f"{_W}{kind}"):
            rid = ref.get(_R_ID)
            if rid:
                ids.setdefault(rid, None)
    return list(ids)


def _ids_of(part: Part, reltype: str) -> list[str]:
    return [rid for rid, rel in part.rels.items() if rel.reltype == reltype]


def _related_roots(part: Part, rids: list[str]) -> Iterator[Element]:
    """Yield the XML root of each related part (header, footnotes, comments)."""
    for rid in rids:
        rel = part.rels.get(rid)
        if rel is None or rel.is_external:
            continue
        target = rel.target_part
        root = getattr(target, "element", None)
        if root is None:
            root = _parse(target.blob)
        yield root


def _parse(blob: bytes) -> Element:
    """Parse a part python-docx keeps as bytes, without entities or network."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    return etree.fromstring(blob, parser=parser)
