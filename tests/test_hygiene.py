"""Text hygiene and the per-file failure barrier (issue #17).

Every extractor's output passes one function (``clean_extracted``), so a lone
UTF-16 surrogate from a PDF's ToUnicode map, a NUL or an escape byte costs a
character, never the file or the scan.
"""

from __future__ import annotations

import json
from pathlib import Path

import _formats
from conftest import run, run_json
from hypothesis import given
from hypothesis import strategies as st
from test_extract_office import _build_docx, _build_pptx, _build_xlsx
from test_hostile import surrogate_pdf

from docindex.ingest.extract import MARKDOWN_SUFFIXES, OFFICE_SUFFIXES, kind_for
from docindex.ingest.extract.hygiene import clean_text


@given(st.text())
def test_clean_text_is_valid_utf8_without_controls_and_idempotent(text: str) -> None:
    out = clean_text(text)
    out.encode("utf-8")  # never raises
    assert not any(ord(c) < 0x20 and c not in "\t\n" for c in out)
    assert clean_text(out) == out
    if not any("\ud800" <= c <= "\udfff" for c in text):
        assert len(out) == len(text)  # a control becomes one space
    if out == text:
        assert clean_text(text) is text


def test_clean_text_joins_pairs_and_replaces_halves() -> None:
    assert clean_text("a\ud83d\ude00b") == "a\U0001f600b"
    assert clean_text("a\ud83db\udc00") == "a\ufffdb\ufffd"
    assert clean_text("x\x00y\x1bz\r\tw\n") == "x y z \tw\n"


def test_every_extractor_feeds_clean_text_and_the_tree_indexes(
    tmp_path: Path,
) -> None:
    """A lone-surrogate PDF (with NUL and ESC glyphs), controls in text files, and one file of every
    other extractor kind: the scan indexes all of them and stays searchable."""
    root = tmp_path / "docs"
    root.mkdir()
    files = {
        "lone.pdf": surrogate_pdf(),
        # (a NUL in a text file makes it "binary": the PDF brings one instead)
        "notes.md": b"# Notes\n\nmarmot \x1b[31m escape \x07 bell \x0c feed\n",
        "log.txt": b"wombat \x01\x02 controls \x7f line\nsecond line\n",
        "report.docx": _build_docx(tmp_path / "b.docx"),
        "deck.pptx": _build_pptx(tmp_path / "b.pptx"),
        "sheet.xlsx": _build_xlsx(tmp_path / "b.xlsx"),
        # issue #23's formats: control bytes in the two that can carry them raw
        "page.html": b"<html><title>Page</title><body><p>numbat \x01\x1b mark</p></body>",
        "minutes.rtf": _formats.RTF.replace(b"Action:", b"Action \\'07 bilby:"),
        "book.epub": _formats.epub(_formats.THREE_CHAPTERS),
        "text.odt": _formats.odt(),
        "cells.ods": _formats.ods(),
        "slides.odp": _formats.odp(),
    }
    for i in range(20):
        files[f"more/f{i:02d}.md"] = f"# File {i}\n\nordinary text {i}\n".encode()
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    kinds = {kind_for(rel) for rel in files}
    # legacy .doc/.xls/.ppt are skipped as unsupported: no text to clean;
    # images need OCR (tests/test_ocr.py)
    assert kinds >= {"md", "txt", *OFFICE_SUFFIXES.values()} - {"legacy", "image"}
    assert any(rel.endswith(tuple(MARKDOWN_SUFFIXES)) for rel in files)
    db = tmp_path / "index.db"
    result = run_json("scan", str(root), "--db", str(db))
    assert result["errors"] == [] and result["indexed"] == len(files), result
    for word, rel in (("quokka", "lone.pdf"), ("marmot", "notes.md"),
                      ("wombat", "log.txt"), ("numbat", "page.html"),
                      ("bilby", "minutes.rtf")):  # fmt: skip
        hits = run_json("query", word, "--db", str(db))["hits"]
        assert hits and hits[0]["rel_path"] == rel, (word, hits)
        shown = run_json("show", hits[0]["chunk_id"], "--db", str(db))
        text = json.dumps(shown, ensure_ascii=False)
        assert "\\u0000" not in text and "\\u001b" not in text
    pdf_hit = run_json("query", "zebrafish", "--db", str(db))["hits"][0]
    assert "\ufffd" in pdf_hit["snippet"] or "lone" in pdf_hit["snippet"]
    out = run("query", "zebrafish", "--db", str(db)).stdout
    assert "lone.pdf" in out
