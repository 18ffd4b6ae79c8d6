"""Builders of real-shaped documents for issue #23 (shared with bench/big_pdf.py).

HTML, EPUB and RTF are text formats written here as their specifications lay
them out (EPUB 3 with an EPUB 2 NCX, as real books carry both); ODT, ODS and
ODP are written with odfpy, the reference Python writer of OpenDocument; PDFs
are written byte by byte with a Helvetica text layer and a correct xref table,
so pypdf reads them without repairs.
"""

from __future__ import annotations

import io
import zipfile

HTML_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Kettle manual</title>
<script>var tracking = "scriptword";</script>
<style>.x { color: red }</style>
</head>
<body>
<nav><a href="/">Home</a> <a href="/products">navword products</a></nav>
<header><p>Site banner headerword</p></header>
<article>
<h1>Descaling the kettle</h1>
<p>Fill the kettle with water and
add a spoon of <b>citric acid</b>.</p>
<h2>Safety</h2>
<ul>
<li>Unplug before cleaning.</li>
<li># is not a heading here</li>
</ul>
<table>
<tr><th>Step</th><th>Minutes</th></tr>
<tr><td>Boil</td><td>5</td></tr>
</table>
</article>
<aside>asideword related links</aside>
<footer>Copyright footerword 2026</footer>
</body>
</html>
"""


def epub(chapters: list[tuple[str, str, str]], title: str = "Three Chapters") -> bytes:
    """An EPUB 3 book; ``chapters`` are (file name, TOC label, body HTML)."""
    manifest, spine, nav, ncx = [], [], [], []
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(
            zipfile.ZipInfo("mimetype"), "application/epub+zip",
            compress_type=zipfile.ZIP_STORED,
        )  # fmt: skip
        zf.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?>\n<container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container">\n<rootfiles>'
            '<rootfile full-path="OEBPS/content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles>\n</container>',
        )
        for n, (name, label, body) in enumerate(chapters, start=1):
            zf.writestr(
                f"OEBPS/{name}",
                '<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
                '<html xmlns="http://www.w3.org/1999/xhtml" '
                'xmlns:epub="http://www.idpf.org/2007/ops">\n'
                f"<head>\n<title>{label}</title>\n</head>\n<body>\n{body}\n"
                "</body>\n</html>\n",
            )
            manifest.append(
                f'<item id="c{n}" href="{name}" media-type="application/xhtml+xml"/>'
            )
            spine.append(f'<itemref idref="c{n}"/>')
            nav.append(f'<li><a href="{name}">{label}</a></li>')
            ncx.append(
                f'<navPoint id="n{n}" playOrder="{n}"><navLabel><text>{label}'
                f'</text></navLabel><content src="{name}"/></navPoint>'
            )
        zf.writestr(
            "OEBPS/nav.xhtml",
            '<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
            '<html xmlns="http://www.w3.org/1999/xhtml" '
            'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Contents'
            '</title></head><body><nav epub:type="toc"><ol>'
            + "".join(nav) + "</ol></nav></body></html>",
        )  # fmt: skip
        zf.writestr(
            "OEBPS/toc.ncx",
            '<?xml version="1.0" encoding="utf-8"?>\n<ncx '
            'xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">'
            f"<docTitle><text>{title}</text></docTitle><navMap>"
            + "".join(ncx) + "</navMap></ncx>",
        )  # fmt: skip
        zf.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0" encoding="utf-8"?>\n<package '
            'xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            'unique-identifier="id"><metadata '
            'xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:identifier id="id">urn:uuid:1</dc:identifier><dc:title>{title}'
            "</dc:title><dc:language>en</dc:language></metadata><manifest>"
            '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" '
            'properties="nav"/><item id="ncx" href="toc.ncx" '
            'media-type="application/x-dtbncx+xml"/>'
            + "".join(manifest) + '</manifest><spine toc="ncx">'
            + "".join(spine) + "</spine></package>",
        )  # fmt: skip
    return buf.getvalue()


THREE_CHAPTERS = [
    ("ch1.xhtml", "Departure", "<h1>Departure</h1>\n<p>The ship left harbour.</p>"),
    (
        "ch2.xhtml",
        "The Storm",
        "<p>Clouds gathered fast.</p>\n<h2>Night watch</h2>\n<p>lanternword glowed.</p>",
    ),
    ("ch3.xhtml", "Arrival", "<h1>Arrival</h1>\n<p>Land was sighted at dawn.</p>"),
]


def odt() -> bytes:
    """A text document with a title, two heading levels, a paragraph and a table."""
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, P

    doc = OpenDocumentText()
    doc.meta.addElement(_dc_title("Garden notes"))
    doc.text.addElement(H(outlinelevel=1, text="Planting"))
    doc.text.addElement(P(text="Tomatoes need sun."))
    doc.text.addElement(H(outlinelevel=2, text="Watering"))
    doc.text.addElement(P(text="# twice a week, not a heading"))
    table = Table(name="Plan")
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    for a, b in (("Plant", "Month"), ("Basil", "May")):
        row = TableRow()
        for value in (a, b):
            cell = TableCell()
            cell.addElement(P(text=value))
            row.addElement(cell)
        table.addElement(row)
    doc.text.addElement(table)
    return _save(doc)


def ods() -> bytes:
    """A workbook of two sheets; a value in C3, a repeated empty tail of rows."""
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    for name, rows in (
        ("Budget", [["Item", "Cost"], [], ["", "", "sheetword"]]),
        ("Notes", [["hello"]]),
    ):
        table = Table(name=name)
        for values in rows:
            row = TableRow()
            for value in values or [""]:
                cell = TableCell()
                if value:
                    cell.addElement(P(text=value))
                row.addElement(cell)
            table.addElement(row)
        filler = TableRow(numberrowsrepeated=1048000)
        filler.addElement(TableCell(numbercolumnsrepeated=1024))
        table.addElement(filler)
        doc.spreadsheet.addElement(table)
    return _save(doc)


def odp() -> bytes:
    """A presentation of two slides with titles, body text and speaker notes."""
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.presentation import Notes
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    doc = OpenDocumentPresentation()
    layout = PageLayout(name="L")
    doc.automaticstyles.addElement(layout)
    master = MasterPage(name="M", pagelayoutname=layout)
    doc.masterstyles.addElement(master)
    for n, (title, body, note) in enumerate(
        [("Roadmap", "Ship in spring", "notesword say it slowly"),
         ("Budget", "Costs are flat", "")], start=1,
    ):  # fmt: skip
        page = Page(name=f"page{n}", masterpagename=master)
        for cls, text in (("title", title), ("outline", body)):
            frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
            frame.setAttribute("class", cls)
            box = TextBox()
            box.addElement(P(text=text))
            frame.addElement(box)
            page.addElement(frame)
        if note:
            notes = Notes()
            frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
            box = TextBox()
            box.addElement(P(text=note))
            frame.addElement(box)
            notes.addElement(frame)
            page.addElement(notes)
        doc.presentation.addElement(page)
    return _save(doc)


def _dc_title(text: str) -> object:
    from odf.dc import Title

    return Title(text=text)


def _save(doc: object) -> bytes:
    buf = io.BytesIO()
    doc.write(buf)  # type: ignore[attr-defined]
    return buf.getvalue()


RTF = (
    rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Times New Roman;}}"
    rb"{\info{\title Minutes of the meeting}}"
    rb"{\*\generator handmade;}\f0\fs24 Minutes of the meeting\par "
    rb"The caf\'e9 budget rose by 5\u8364? this year.\par "
    rb"{\pict\pngblip 89504e470d0a1a0a}Action: rtfword review.\par }"
)


def _pdf_file(objects: list[bytes], kids: list[int]) -> bytes:
    """A PDF file of ``objects`` (1-based object numbers; object 2, the page
    tree, is filled in here with ``kids``), with its cross-reference table."""
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids), len(kids)
    )  # fmt: skip
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref
    )  # fmt: skip
    return bytes(out)


def pdf(pages: int, words: int = 60) -> bytes:
    """A text PDF of ``pages`` pages, page ``n`` saying ``pagemark<n>`` and filler."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, filled in below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    filler = [f"word{i % 97}" for i in range(words)]
    for n in range(1, pages + 1):
        lines = [f"Page {n} pagemark{n}"] + [
            " ".join(filler[i : i + 12]) for i in range(0, words, 12)
        ]
        ops = "BT /F1 11 Tf 72 720 Td 14 TL " + " ".join(
            f"({line}) Tj T*" for line in lines
        ) + " ET"  # fmt: skip
        stream = ops.encode("latin-1")
        objects.append(
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
        )
        content = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % content
        )
        kids.append(len(objects))
    return _pdf_file(objects, kids)


if __name__ == "__main__":  # write one of each into a folder, to look at them
    import sys
    from pathlib import Path

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "formats")
    out.mkdir(parents=True, exist_ok=True)
    (out / "page.html").write_text(HTML_PAGE, encoding="utf-8")
    (out / "book.epub").write_bytes(epub(THREE_CHAPTERS))
    (out / "notes.odt").write_bytes(odt())
    (out / "budget.ods").write_bytes(ods())
    (out / "talk.odp").write_bytes(odp())
    (out / "minutes.rtf").write_bytes(RTF)
    (out / "big.pdf").write_bytes(pdf(1000))
    print(f"wrote 7 files to {out}")


def shared_stream_pdf(pages: int, stream_bytes: int) -> bytes:
    """``pages`` pages that all draw one Flate content stream of ``stream_bytes``.

    The attack of issue #33: 2,000 pages and 16 MB of decoded content make a
    ~340 KB file whose text extraction decodes and parses 32 GB.
    """
    import zlib

    line = b"BT /F1 11 Tf 72 720 Td (sharedword filler text) Tj ET\n"
    packed = zlib.compress(line * (stream_bytes // len(line)), 9)
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, filled in below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed)
        + packed
        + b"\nendstream",
    ]
    kids = []
    for _ in range(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
        )
        kids.append(len(objects))
    return _pdf_file(objects, kids)
