"""PDF, DOCX, PPTX and XLSX extraction: text you can cite to the page, slide, sheet
and cell, and hostile files that end as an ExtractionError with a skip reason.

Office documents are built with the real libraries in ``tmp_path``; PDFs come from
the shared py-pdf sample files (tests skip when ``../shared`` beside the checkout is absent).
"""

from __future__ import annotations

import datetime as dt
import io
import time
import zipfile
from pathlib import Path

import pytest
from conftest import SHARED

from docindex.errors import ExtractionError
from docindex.ingest.extract import ExtractLimits, get_extractor
from docindex.ingest.extract._zipguard import check_xml_parts, check_zip
from docindex.ingest.extract.docx import extract as extract_docx
from docindex.ingest.extract.pdf import extract as extract_pdf
from docindex.ingest.extract.pdf import normalize_text
from docindex.ingest.extract.pptx import extract as extract_pptx
from docindex.ingest.extract.xlsx import extract as extract_xlsx

LIMITS = ExtractLimits()
PDF_SAMPLES = SHARED / "samples/py-pdf-sample-files"
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _pdf(rel: str) -> bytes:
    path = PDF_SAMPLES / rel
    if not path.is_file():
        # Name the folder the tests really read (../shared beside the checkout).
        pytest.skip(f"PDF sample {path} not available (needs {PDF_SAMPLES})")
    return path.read_bytes()


# --- builders ---------------------------------------------------------------------


def _build_docx(path: Path) -> bytes:
    import docx
    from docx.opc.constants import CONTENT_TYPE as CT
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part

    document = docx.Document()
    document.core_properties.title = "Quarterly report"
    document.add_heading("Report", 0)
    document.add_heading("Intro", 1)
    para = document.add_paragraph("Hello\tworld from the body.")
    document.add_comment(para.runs, text="Check this figure.", author="Ann")
    document.add_paragraph("# not a heading")
    document.add_heading("Numbers", 2)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Region"
    table.cell(0, 1).text = "Sales"
    table.cell(1, 0).text = "North"
    table.cell(1, 1).add_table(rows=1, cols=2).cell(0, 0).text = "nested 42"
    document.add_paragraph("After the table.")
    section = document.sections[0]
    section.header.paragraphs[0].text = "ACME confidential"
    section.footer.paragraphs[0].text = "Page footer text"
    # python-docx cannot write footnotes; add the part the way Word stores it.
    footnotes = (
        f'<w:footnotes xmlns:w="{W_NS}">'
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r>'
        "</w:p></w:footnote>"
        '<w:footnote w:id="1"><w:p><w:r><w:t>A footnote about sources.</w:t></w:r>'
        "</w:p></w:footnote></w:footnotes>"
    ).encode()
    part = Part(
        PackURI("/word/footnotes.xml"),
        CT.WML_FOOTNOTES,
        footnotes,
        document.part.package,
    )
    document.part.relate_to(part, RT.FOOTNOTES)
    document.save(path)
    return path.read_bytes()


def _build_pptx(path: Path) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[5])  # title only
    slide.shapes.title.text = "Launch plan"
    box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(4), Inches(1))
    box.text_frame.text = "Ship in March"
    rows = slide.shapes.add_table(2, 2, Inches(1), Inches(3), Inches(4), Inches(1))
    rows.table.cell(0, 0).text = "Owner"
    rows.table.cell(0, 1).text = "Task"
    rows.table.cell(1, 0).text = "Bea"
    rows.table.cell(1, 1).text = "Docs"
    group = slide.shapes.add_group_shape()
    inner = group.shapes.add_textbox(Inches(5), Inches(5), Inches(2), Inches(1))
    inner.text_frame.text = "Grouped note"
    slide.notes_slide.notes_text_frame.text = "Speaker: mention the budget"
    blank = prs.slides.add_slide(prs.slide_layouts[6])
    blank.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1)).text = "Q&A"
    prs.slides.add_slide(prs.slide_layouts[6])  # a third slide without text
    prs.core_properties.title = ""
    prs.save(path)
    return path.read_bytes()


def _build_xlsx(path: Path, big_rows: int = 0) -> bytes:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Data"
    ws.append(["Name", "When", "Amount"])
    ws.append(["alpha", dt.datetime(2024, 1, 31), 3.0])
    ws.append([])
    ws["B4"] = "two\nlines"
    ws["C4"] = 2.5
    ws["D2"] = "=C2*2"  # no cached value: data_only reads None, never the formula
    other = wb.create_sheet("Other")
    other["C12"] = dt.datetime(2024, 1, 31, 14, 5)
    other["D12"] = True
    if big_rows:
        big = wb.create_sheet("Big")
        for n in range(big_rows):
            big.append([n])
    wb.save(path)
    return path.read_bytes()


def _replace_part(data: bytes, name: str, content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = content if info.filename == name else src.read(info)
            dst.writestr(info.filename, body, zipfile.ZIP_DEFLATED)
    return out.getvalue()


# --- DOCX -------------------------------------------------------------------------


def test_docx_body_headings_tables_and_extras(tmp_path: Path) -> None:
    result = extract_docx(_build_docx(tmp_path / "r.docx"), "r.docx", LIMITS)
    assert result.kind == "docx"
    assert result.title == "Quarterly report"
    (unit,) = result.units
    assert unit.markdown and unit.page is None
    assert unit.text.split("\n") == [
        "# Report",
        "# Intro",
        "Hello\tworld from the body.",
        "\\# not a heading",
        "## Numbers",
        "Region | Sales",
        "North | nested 42",
        "After the table.",
        "ACME confidential",
        "Page footer text",
        "A footnote about sources.",
        "Check this figure.",
    ]


def test_docx_empty_document_is_one_empty_unit(tmp_path: Path) -> None:
    import docx

    docx.Document().save(tmp_path / "e.docx")
    result = extract_docx((tmp_path / "e.docx").read_bytes(), "e.docx", LIMITS)
    assert [u.text for u in result.units] == [""]
    assert result.title is None


def test_docx_through_registry(tmp_path: Path) -> None:
    data = _build_docx(tmp_path / "r.docx")
    assert get_extractor("docx")(data, "r.docx", LIMITS).units[0].text.startswith("#")


# --- PPTX -------------------------------------------------------------------------


def test_pptx_units_per_slide_in_shape_order(tmp_path: Path) -> None:
    result = extract_pptx(_build_pptx(tmp_path / "d.pptx"), "d.pptx", LIMITS)
    assert result.kind == "pptx"
    assert result.title == "Launch plan"  # no core title: first slide's title
    assert [u.slide for u in result.units] == [1, 2]  # slide 3 has no text
    assert result.units[0].text.split("\n") == [
        "Launch plan",
        "Ship in March",
        "Owner | Task",
        "Bea | Docs",
        "Grouped note",
        "Speaker: mention the budget",
    ]
    assert result.units[1].text == "Q&A"


# --- XLSX -------------------------------------------------------------------------


def test_pptx_chart_text_is_cited_to_its_slide(tmp_path: Path) -> None:
    """Issue #38: a slide whose only text is a chart was "no text found"."""
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[6])  # slide 1: blank, no text at all
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    data = CategoryChartData()
    data.categories = ["Albany", "Glasgow", "Edinburgh"]
    data.add_series("Rainfall", (1.0, 2.0, 3.0))
    data.add_series("Sunshine", (3.0, 2.0, 1.0))
    frame = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1), Inches(6), Inches(4),
        data,
    )  # fmt: skip
    frame.chart.has_title = True
    frame.chart.chart_title.text_frame.text = "Weather by city"
    out = io.BytesIO()
    prs.save(out)
    result = extract_pptx(out.getvalue(), "c.pptx", LIMITS)
    (unit,) = result.units
    assert unit.slide == 2
    lines = unit.text.splitlines()
    assert lines[0] == "Weather by city"
    assert "Rainfall | Sunshine" in lines
    assert "Albany | Glasgow | Edinburgh" in lines
    assert "1.0" not in unit.text


def test_pptx_chart_samples_have_text(shared: Path) -> None:
    folder = shared / "samples/python-pptx/features/steps/test_files"
    charts = sorted(folder.glob("cht-*.pptx"))
    if not charts:
        pytest.skip(f"no cht-*.pptx under {folder}")
    empty = [
        p.name
        for p in charts
        if not any(
            u.text.strip() for u in extract_pptx(p.read_bytes(), p.name, LIMITS).units
        )
    ]
    assert not empty


def test_xlsx_rows_values_and_cell_refs(tmp_path: Path) -> None:
    result = extract_xlsx(_build_xlsx(tmp_path / "b.xlsx"), "b.xlsx", LIMITS)
    assert result.kind == "xlsx" and result.meta == {}
    data, other = result.units
    assert data.sheet == "Data"
    assert data.text.split("\n") == [
        "Name | When | Amount",
        "alpha | 2024-01-31 | 3",
        "two lines | 2.5",
    ]
    assert data.line_cells == ("A1", "A2", "B4")
    assert "C2*2" not in data.text
    assert other.sheet == "Other"
    assert other.text == "2024-01-31 14:05 | TRUE"
    assert other.line_cells == ("C12",)


def test_xlsx_row_cap_is_recorded(tmp_path: Path) -> None:
    data = _build_xlsx(tmp_path / "big.xlsx", big_rows=50)
    result = extract_xlsx(data, "big.xlsx", ExtractLimits(max_sheet_rows=10))
    big = next(u for u in result.units if u.sheet == "Big")
    assert big.text.split("\n") == [str(n) for n in range(10)]
    assert big.line_cells == tuple(f"A{n}" for n in range(1, 11))
    assert result.meta == {"truncated": "Big:10"}


def test_xlsx_wide_rows_hit_the_cell_budget(tmp_path: Path) -> None:
    # One value in the last column (XFD) makes openpyxl pad 16,384 cells per row.
    from openpyxl import Workbook

    wb = Workbook()
    for row in range(1, 6):
        wb.active.cell(row=row, column=16384, value=row)
    wb.save(tmp_path / "wide.xlsx")
    data = (tmp_path / "wide.xlsx").read_bytes()
    result = extract_xlsx(data, "wide.xlsx", ExtractLimits(max_sheet_rows=10))
    assert result.units[0].line_cells == ("XFD1",)
    assert result.meta == {"truncated": "Sheet:1"}


# --- PDF --------------------------------------------------------------------------


def test_pdf_pages_are_numbered() -> None:
    data = _pdf("004-pdflatex-4-pages/pdflatex-4-pages.pdf")
    result = extract_pdf(data, "four.pdf", LIMITS)
    assert result.kind == "pdf"
    assert [u.page for u in result.units] == [1, 2, 3, 4]
    assert all(u.text and "\r" not in u.text for u in result.units)


def test_pdf_title_and_page_cap() -> None:
    data = _pdf("011-google-doc-document/google-doc-document.pdf")
    assert extract_pdf(data, "g.pdf", LIMITS).title == "PDF Example Document"
    four = _pdf("004-pdflatex-4-pages/pdflatex-4-pages.pdf")
    capped = extract_pdf(four, "four.pdf", ExtractLimits(max_pages=2))
    assert [u.page for u in capped.units] == [1, 2]
    assert capped.meta == {"truncated": "pages:2/4"}


@pytest.mark.parametrize(
    ("rel", "reason"),
    [
        (
            "005-libreoffice-writer-password/libreoffice-writer-password.pdf",
            "encrypted",
        ),
        ("019-grayscale-image/grayscale-image.pdf", "no-text-layer"),
    ],
)
def test_pdf_refusals(rel: str, reason: str) -> None:
    with pytest.raises(ExtractionError) as info:
        extract_pdf(_pdf(rel), rel, LIMITS)
    assert info.value.reason == reason


def test_pdf_truncated_is_corrupt() -> None:
    data = _pdf("004-pdflatex-4-pages/pdflatex-4-pages.pdf")
    with pytest.raises(ExtractionError) as info:
        extract_pdf(data[: len(data) // 2], "half.pdf", LIMITS)
    assert info.value.reason == "corrupt"


def test_pdf_not_a_pdf_is_corrupt() -> None:
    with pytest.raises(ExtractionError) as info:
        extract_pdf(b"hello, I am text", "fake.pdf", LIMITS)
    assert info.value.reason == "corrupt"


def test_pdf_timeout_from_the_indexer_is_not_swallowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The indexer's SIGALRM handler raises ExtractionError("timeout") wherever the
    # extractor happens to be; the per-page recovery must let it through.
    from pypdf import PageObject

    def _alarm(self: object, *args: object, **kwargs: object) -> str:
        raise ExtractionError("timeout", "extraction took over 30 s")

    monkeypatch.setattr(PageObject, "extract_text", _alarm)
    data = _pdf("004-pdflatex-4-pages/pdflatex-4-pages.pdf")
    with pytest.raises(ExtractionError) as info:
        extract_pdf(data, "four.pdf", LIMITS)
    assert info.value.reason == "timeout"


def test_normalize_text() -> None:
    raw = "a  \r\nb\rc\x00d\n\n\n\n\n\ne\vf  "
    assert normalize_text(raw) == "a\nb\ncd\n\n\ne\nf"


# --- hostile archives -------------------------------------------------------------


def test_zip_bomb_is_refused_fast(tmp_path: Path) -> None:
    # 64 MiB of zeros deflates to ~64 KiB: ratio ~1000 > 200. Streamed, so the
    # test never holds the uncompressed data.
    path = tmp_path / "bomb.docx"
    chunk = bytes(1024 * 1024)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w", force_zip64=True) as part:
            for _ in range(64):
                part.write(chunk)
    data = path.read_bytes()
    start = time.perf_counter()
    with pytest.raises(ExtractionError) as info:
        extract_docx(data, "bomb.docx", LIMITS)
    assert time.perf_counter() - start < 0.5
    assert info.value.reason == "zip-bomb"
    assert "ratio" in str(info.value)


def test_zip_limits_on_size_and_entries() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for n in range(20):
            zf.writestr(f"part{n}.xml", "<a/>" * 100)
    data = out.getvalue()
    check_zip(data, LIMITS)  # fine by default
    with pytest.raises(ExtractionError, match="entries") as info:
        check_zip(data, ExtractLimits(max_archive_entries=10))
    assert info.value.reason == "zip-bomb"
    with pytest.raises(ExtractionError, match="uncompressed") as info:
        check_zip(data, ExtractLimits(max_uncompressed_bytes=1000))
    assert info.value.reason == "zip-bomb"


def test_billion_laughs_is_refused(tmp_path: Path) -> None:
    laughs = (
        b'<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
        b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
        b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>'
        b'<w:document xmlns:w="' + W_NS.encode() + b'"><w:body><w:p><w:r>'
        b"<w:t>&lol3;</w:t></w:r></w:p></w:body></w:document>"
    )
    import docx

    docx.Document().save(tmp_path / "ok.docx")
    data = _replace_part(
        (tmp_path / "ok.docx").read_bytes(), "word/document.xml", laughs
    )
    with pytest.raises(ExtractionError, match="DTD") as info:
        extract_docx(data, "lol.docx", LIMITS)
    assert info.value.reason == "corrupt"


def test_xml_prolog_scan_accepts_comments_and_utf16() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("a.xml", b'<?xml version="1.0"?>\n<!-- <!DOCTYPE x> --><root/>')
        zf.writestr("b.xml", '<?xml version="1.0"?><root/>'.encode("utf-16"))
        zf.writestr("c.png", b"\x89PNG<!DOCTYPE")
    check_xml_parts(out.getvalue())
    evil = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e "x">]><r/>'.encode("utf-16")
    out2 = io.BytesIO()
    with zipfile.ZipFile(out2, "w") as zf:
        zf.writestr("customXml/item1.bin", evil)
    with pytest.raises(ExtractionError, match="DTD"):
        check_xml_parts(out2.getvalue())


@pytest.mark.parametrize("extract", [extract_docx, extract_pptx, extract_xlsx])
def test_text_file_renamed_is_corrupt(extract: object) -> None:
    with pytest.raises(ExtractionError, match="not a ZIP") as info:
        extract(b"just some text\n", "notes.docx", LIMITS)  # type: ignore[operator]
    assert info.value.reason == "corrupt"


def test_password_protected_office_file_is_encrypted() -> None:
    cfb = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500)
    cfb += "EncryptionInfo".encode("utf-16-le") + bytes(100)
    with pytest.raises(ExtractionError) as info:
        extract_xlsx(cfb, "locked.xlsx", LIMITS)
    assert info.value.reason == "encrypted"


def test_wrong_office_type_is_corrupt(tmp_path: Path) -> None:
    data = _build_xlsx(tmp_path / "b.xlsx")
    with pytest.raises(ExtractionError) as info:
        extract_docx(data, "b.docx", LIMITS)
    assert info.value.reason == "corrupt"


@pytest.mark.parametrize("kind", ["docx", "pptx", "xlsx"])
def test_truncated_office_files_only_raise_extraction_errors(
    tmp_path: Path, kind: str
) -> None:
    builders = {"docx": _build_docx, "pptx": _build_pptx, "xlsx": _build_xlsx}
    data = builders[kind](tmp_path / f"f.{kind}")
    extract = get_extractor(kind)
    for cut in range(1, 10):
        with pytest.raises(ExtractionError):
            extract(data[: len(data) * cut // 10], f"f.{kind}", LIMITS)
