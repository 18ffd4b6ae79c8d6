"""HTML extractor: a page's main text as Markdown-headed lines, with lxml.

lxml is already installed with python-docx; it parses real-world HTML leniently
in C, gives every element its source line (``sourceline``), which citations
need, and its HTML parser never expands entities declared in a document's DTD.
On 300 pages of the Rust book (bench/html_parsers.py) this extractor read
~10 MB/s, BeautifulSoup ~1.6 MB/s (over lxml) and ~1.1 MB/s (html.parser);
selectolax reads text ~8x faster still but exposes no source positions.

The text of each block (paragraph, list item, table row, heading, ...) is put
on the *source line* where the block starts, so a hit's line number is the
line in the ``.html`` file. Blocks that share a source line (minified pages)
go on the next free line instead, keeping document order; then lines are only
approximate. ``h1``-``h6`` become ``#`` headings (the heading path); scripts,
styles, ``nav``, ``footer``, ``aside``, a page ``header``, hidden elements,
ARIA navigation landmarks and a few chrome classes (``DROP_CLASSES``) are
dropped; when the page marks its ``main`` content, only that is read.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lxml.html import HtmlElement  # lxml ships no type stubs

from docindex.errors import ExtractionError
from docindex.ingest.extract.limits import ExtractLimits
from docindex.ingest.extract.pdf import describe_error
from docindex.models import Extracted, Unit

#: Subtrees that are never main text.
DROP_TAGS = frozenset(
    {"script", "style", "noscript", "template", "nav", "footer", "aside", "head",
     "svg", "iframe", "object", "embed", "button", "select", "datalist", "dialog",
     "canvas", "audio", "video", "map", "frameset"}
)  # fmt: skip
#: ARIA roles of navigation landmarks (Sphinx marks its sidebars with them).
DROP_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu",
     "menubar", "toolbar", "dialog", "alert"}
)  # fmt: skip
#: Class or id words of site chrome that carries no role (Sphinx's ``footer``
#: and ``related`` bars, themes' sidebars and breadcrumbs, cookie banners).
DROP_CLASSES = frozenset(
    {"footer", "sidebar", "sphinxsidebar", "navbar", "breadcrumb", "breadcrumbs",
     "related", "skip-link", "cookie-banner", "cookie-consent", "headerlink"}
)  # fmt: skip
#: Elements that end a line of text.
BLOCK_TAGS = frozenset(
    {"p", "div", "li", "dt", "dd", "pre", "blockquote", "tr", "table", "section",
     "article", "main", "figure", "figcaption", "caption", "ul", "ol", "dl",
     "address", "details", "summary", "header", "form", "fieldset", "legend",
     "body", "html", "center", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "br",
     "thead", "tbody", "tfoot", "option", "label", "textarea"}
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_CELLS = frozenset({"td", "th"})
_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE
)
_XML_DECL = re.compile(r"\A\s*<\?xml[^>]*\?>")
_XML_ENCODING = re.compile(
    rb"""\A\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9_.:-]+)"""
)
# Lines Markdown would read as structure; escaped so that body text such as
# "# of items" never invents a heading, fence or setext underline.
_MD_STRUCTURE = re.compile(r"( {0,3})(#{1,6}(?:[ \t]|$)|```|~~~|=+[ \t]*$|-+[ \t]*$)")


@dataclass(frozen=True, slots=True)
class PageText:
    """A parsed page: Markdown-headed text aligned with source lines.

    Attributes:
        text: line ``n`` holds the blocks that start on source line ``n``
            (or the next free line), headings as ``#`` lines.
        title: the ``<title>`` text, or None.
        first_heading: the text of the first heading, or None.
        truncated: True when ``max_chars`` cut the text short.
    """

    text: str
    title: str | None
    first_heading: str | None
    truncated: bool = False


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract an HTML page as one Markdown-headed unit.

    Args:
        data: the raw bytes of the file.
        name: the file name, used in messages only.
        limits: bounds for this file (characters).

    Returns:
        One unit with ``markdown=True``, ``kind="html"`` and the ``<title>``
        (else the first heading) as title.

    Raises:
        ExtractionError: ``corrupt`` when lxml cannot build a tree.
    """
    page = page_text(decode_html(data), limits.max_text_chars)
    meta = {"truncated": f"chars:{limits.max_text_chars}"} if page.truncated else {}
    return Extracted(
        units=(Unit(text=page.text, markdown=True),),
        title=page.title or page.first_heading,
        kind="html",
        meta=meta,
    )


def decode_html(data: bytes) -> str:
    """Decode a page: BOM, then the XML or ``<meta>`` charset, UTF-8, cp1252."""
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8", "replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", "replace")
    declared = _XML_ENCODING.match(data[:512]) or _META_CHARSET.search(data[:4096])
    if declared:
        try:
            codec = codecs.lookup(declared.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError):
            codec = None
        # A page that says latin-1 means windows-1252 (WHATWG Encoding).
        if codec is not None and codec.name not in ("utf-8", "latin-1", "ascii"):
            return data.decode(codec.name, "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


def parse(text: str) -> HtmlElement:
    """An lxml HTML tree of ``text`` (comments and processing instructions dropped).

    Raises:
        ExtractionError: ``corrupt`` when nothing can be parsed.
    """
    return _parse(text)[0]


def _parse(text: str) -> tuple[HtmlElement, bool]:
    """``parse``, and whether libxml2 stopped at its nesting limit (256 levels):
    it then silently drops the rest of the page (issue #33)."""
    import lxml.html

    # lxml refuses str input that carries an encoding declaration; blank it out
    # with spaces (same line count, so source lines stay right).
    decl = _XML_DECL.match(text)
    if decl:
        text = re.sub(r"[^\n]", " ", decl.group(0)) + text[decl.end() :]
    parser = lxml.html.HTMLParser(
        remove_comments=True, remove_pis=True, no_network=True, recover=True
    )
    try:
        root = lxml.html.document_fromstring(text, parser=parser)
    except Exception as exc:  # ParserError "Document is empty", XMLSyntaxError
        if not text.strip() or "empty" in str(exc).lower():
            return lxml.html.document_fromstring("<html></html>", parser=parser), False
        raise ExtractionError("corrupt", describe_error(exc)) from None
    deep = any("Excessive depth" in e.message for e in parser.error_log)
    return root, deep


def page_text(text: str, max_chars: int, heading_shift: int = 0) -> PageText:
    """Parse ``text`` and lay its main text out on its source lines.

    Args:
        text: the decoded page.
        max_chars: characters of text kept.
        heading_shift: added to every heading level (capped at 6), for a
            container that puts its own heading above the page's.
    """
    root, too_deep = _parse(text)
    if too_deep:
        title, blocks = _flat_blocks(text)
    else:
        title, blocks = _title(root), _blocks(_main(root))
    lines: dict[int, str] = {}
    last = 0
    chars = 0
    first_heading: str | None = None
    truncated = False
    for line, level, block in blocks:
        if level:
            if first_heading is None:
                first_heading = block
            out = "#" * min(6, level + heading_shift) + " " + block
            at = max(line, last + 1)
            lines[at] = out
            last = at
        else:
            for i, piece in enumerate(block.split("\n")):
                at = max(line + i, last + 1)
                lines[at] = escape_markdown(piece)
                last = at
        chars += len(block) + 1
        if chars > max_chars:
            truncated = True
            break
    if not lines:
        return PageText("", title, None, False)
    out_lines = [""] * last
    for at, value in lines.items():
        out_lines[at - 1] = value
    return PageText("\n".join(out_lines), title, first_heading, truncated)


def _title(root: HtmlElement) -> str | None:
    for el in root.iter("title"):
        title = " ".join(el.text_content().split())
        if title:
            return title
    return None


def _main(root: HtmlElement) -> HtmlElement:
    """The page's marked main content when it has exactly one, else the root."""
    found = root.xpath("//main | //*[@role='main']")
    if len(found) == 1:
        return found[0]
    return root


class _Block:
    """The text of the block being read, where it starts and whether it is
    inside ``<pre>`` (whose whitespace is kept)."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.line = 0  # source line of the first text of the current block
        self.pre = 0  # depth inside <pre>
        self.started = False  # the current block has non-blank text

    def add(self, text: str | None, at: int) -> None:
        if text:
            if not self.started and not text.isspace():
                # The block starts where its first character does.
                lead = len(text) - len(text.lstrip())
                self.line, self.started = at + text.count("\n", 0, lead), True
            self.pieces.append(text)

    def take(self) -> str:
        raw = "".join(self.pieces)
        self.pieces.clear()
        self.started = False
        if self.pre:
            return "\n".join(s.rstrip() for s in raw.strip("\n").split("\n"))
        return " ".join(raw.split())


def _blocks(root: HtmlElement) -> Iterator[tuple[int, int, str]]:
    """Yield ``(source line, heading level or 0, text)`` for each block in order.

    Whitespace inside a block collapses to single spaces except in ``pre``;
    the cells of a table row are joined with `` | `` on the row's first line.
    Iterative (``iterwalk``), so deeply nested pages cannot overflow the stack.
    """
    from lxml import etree

    block = _Block()
    cells: list[str] | None = None  # the current table row's cells
    row_line = 0
    dropped = False  # the last "start" was skipped as boilerplate
    walker = etree.iterwalk(root, events=("start", "end"))
    for event, el in walker:
        tag = el.tag
        if not isinstance(tag, str):
            continue
        tag = tag.rpartition("}")[2].lower()
        at = el.sourceline or block.line or 1
        if event == "start":
            if _dropped(el, tag):
                # lxml still sends this element's "end" event, next: the
                # tail is added there, once (it was added twice: "12.2.
                # Reading a File Reading a File" in mdBook's table of contents).
                walker.skip_subtree()
                dropped = True
                continue
            if tag in BLOCK_TAGS or tag in _HEADINGS or tag in _CELLS:
                text = block.take()
                if text.strip():
                    yield block.line, 0, text
                if tag == "tr":
                    cells, row_line = [], 0
                elif tag == "pre":
                    block.pre += 1
            block.add(el.text, at)
            continue
        if dropped:
            dropped = False
            block.add(el.tail, at)  # the tail follows the dropped element
            continue
        if tag in _CELLS or tag in BLOCK_TAGS or tag in _HEADINGS:
            text = block.take()
            if (tag in _CELLS or tag == "tr") and cells is not None:
                if text:
                    row_line = row_line or block.line
                    cells.append(text)
                if tag == "tr":
                    if cells:
                        yield row_line, 0, " | ".join(cells)
                    cells = None
            elif text.strip():
                yield block.line, _HEADINGS.get(tag, 0), text
            if tag == "pre":
                block.pre -= 1
        block.add(el.tail, at)
    text = block.take()
    if text.strip():
        yield block.line, 0, text


# Dropped elements without an end tag: they hide no text.
_VOID = frozenset({"embed", "br", "hr", "img", "input", "meta", "link", "wbr"})


def _flat_blocks(text: str) -> tuple[str | None, Iterator[tuple[int, int, str]]]:
    """(title, blocks) of a page nested too deep for libxml2, read by the
    standard library's streaming parser, which keeps no tree: the same blocks,
    headings and source lines, without the chrome rules that need ancestors
    (classes, roles, a page header) and without the main-content choice."""
    from html.parser import HTMLParser

    blocks: list[tuple[int, int, str]] = []
    title: list[str] = []

    class _Flat(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.pieces: list[str] = []
            self.line = 0
            self.skip = 0
            self.in_title = False
            self.level = 0

        def flush(self) -> None:
            block = " ".join("".join(self.pieces).split())
            self.pieces.clear()
            if block:
                blocks.append((self.line, self.level, block))
            self.level = 0

        def handle_starttag(self, tag: str, attrs: object) -> None:
            if tag == "title":
                self.in_title = True
            elif tag in DROP_TAGS and tag not in _VOID:
                self.skip += 1
            elif not self.skip and (tag in BLOCK_TAGS or tag in _HEADINGS):
                self.flush()
                self.level = _HEADINGS.get(tag, 0)
            elif not self.skip and tag in _CELLS and self.pieces:
                self.pieces.append(" | ")

        def handle_endtag(self, tag: str) -> None:
            if tag == "title":
                self.in_title = False
            elif tag in DROP_TAGS and tag not in _VOID:
                self.skip = max(0, self.skip - 1)
            elif not self.skip and (tag in BLOCK_TAGS or tag in _HEADINGS):
                self.flush()

        def handle_data(self, data: str) -> None:
            if self.in_title:
                title.append(data)
            elif not self.skip and data:
                if not "".join(self.pieces).strip() and not data.isspace():
                    lead = len(data) - len(data.lstrip())
                    self.line = self.getpos()[0] + data.count("\n", 0, lead)
                self.pieces.append(data)

    flat = _Flat()
    flat.feed(text)
    flat.close()
    flat.flush()
    name = " ".join("".join(title).split()) or None
    return name, iter(blocks)


def _dropped(el: HtmlElement, tag: str) -> bool:
    """True for boilerplate: chrome tags, hidden elements, navigation landmarks."""
    if tag in DROP_TAGS:
        return True
    get = el.get
    if get("hidden") is not None or get("aria-hidden") == "true":
        return True
    role = get("role")
    if role is not None and role.lower() in DROP_ROLES:
        return True
    if tag == "header":
        # A page header is site chrome; an article's header holds its title.
        return not any(
            a.tag in ("article", "main", "section") for a in el.iterancestors()
        )
    style = get("style")
    if style is not None and "display:none" in style.replace(" ", "").lower():
        return True
    names = f"{get('class') or ''} {get('id') or ''}".lower().split()
    return bool(names) and not DROP_CLASSES.isdisjoint(names)


def escape_markdown(line: str) -> str:
    """``line`` with a backslash before Markdown structure (``#``, fences, rules)."""
    match = _MD_STRUCTURE.match(line)
    if match is None:
        return line
    indent = match.group(1)
    return indent + "\\" + line[len(indent) :]
