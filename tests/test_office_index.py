"""Office files end to end: scan real documents, find text with its location (#4)."""

import shutil
from pathlib import Path

from conftest import run_json
from test_extract_office import _build_docx, _build_pptx, _build_xlsx


def _scan_office(tmp_path: Path) -> Path:
    root = tmp_path / "office"
    root.mkdir()
    _build_docx(root / "report.docx")
    _build_pptx(root / "launch.pptx")
    _build_xlsx(root / "book.xlsx")
    (root / "fake.docx").write_text("just text, not a zip")
    (root / "mentions.md").write_text("# Note\n\nThe header said %PDF-1.7 here.\n")
    out = run_json("scan", str(root))
    assert out["indexed"] == 4, out
    assert out["skipped"] == {"corrupt": 1}
    assert out["errors"][0]["path"].endswith("fake.docx")
    return root


def _top(query: str, **expect: object) -> dict:
    hits = run_json("query", query)["hits"]
    assert hits, query
    hit = hits[0]
    for key, value in expect.items():
        assert hit.get(key) == value, (key, hit)
    return hit


def test_office_hits_carry_locations(tmp_path: Path) -> None:
    _scan_office(tmp_path)
    _top("Region Sales North", rel_path="report.docx")  # a table cell
    _top("footnote about sources", rel_path="report.docx")  # a footnote
    hit = _top("speaker budget", rel_path="launch.pptx", slide=1)  # a slide note
    assert "slide" in hit and "page" not in hit
    _top("Grouped note", rel_path="launch.pptx", slide=1)
    hit = _top("alpha", rel_path="book.xlsx", sheet="Data", cell="A2")
    assert hit["line"] == 2
    _top("%PDF-1.7", rel_path="mentions.md")  # Markdown stays Markdown


def test_docx_headings_become_heading_path(tmp_path: Path) -> None:
    _scan_office(tmp_path)
    hit = _top("Hello world from the body", rel_path="report.docx")
    assert hit["heading_path"][-1] == "Intro"
    assert hit["title"] == "Quarterly report"


def test_pdf_page_and_line_within_page(tmp_path: Path, shared: Path) -> None:
    sample = (
        shared / "samples/py-pdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf"
    )
    root = tmp_path / "pdfs"
    root.mkdir()
    shutil.copy(sample, root / "four.pdf")
    run_json("scan", str(root))
    hits = run_json("query", "Huardest gefburn Kjift", "--top", "3")["hits"]
    assert all("page" in h for h in hits) and {h["page"] for h in hits} <= {1, 2, 3, 4}
    assert hits[0]["chunk_id"].startswith(f"four.pdf#p{hits[0]['page']}")
    # The cited line, within the cited page, holds the matched words.
    from docindex.ingest.extract import ExtractLimits
    from docindex.ingest.extract.pdf import extract

    units = extract(sample.read_bytes(), "four.pdf", ExtractLimits()).units
    page = next(u for u in units if u.page == hits[0]["page"])
    assert "Huardest" in page.text.split("\n")[hits[0]["line"] - 1]


def test_every_shared_sample_is_indexed_or_skipped(
    tmp_path: Path, shared: Path
) -> None:
    root = tmp_path / "samples"
    shutil.copytree(shared / "samples", root)
    out = run_json("scan", str(root))
    total = out["indexed"] + sum(out["skipped"].values())
    assert out["indexed"] > 60
    assert total >= out["scanned"]
    allowed = {"no-text-layer", "encrypted", "corrupt", "unsupported", "empty",
               "ignored", "hidden", "binary"}  # fmt: skip
    assert set(out["skipped"]) <= allowed, out["skipped"]


def test_capped_sheet_is_reported(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "big"
    root.mkdir()
    _build_xlsx(root / "big.xlsx", big_rows=500)
    monkeypatch.setenv("DOCINDEX_MAX_SHEET_ROWS", "100")
    out = run_json("scan", str(root))
    assert out["indexed"] == 1 and out["skipped"] == {"truncated": 1}
    assert "Big:100" in out["errors"][0]["message"]
