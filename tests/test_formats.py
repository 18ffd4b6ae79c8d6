"""HTML, EPUB, OpenDocument, RTF, legacy Office and big PDFs (issue #23).

Every document is built here (``_formats``) with the formats' real layouts and
extracted, then scanned and queried through the CLI like a user would.
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from pathlib import Path
from typing import Any

import _formats
import pytest
from click.testing import CliRunner

from docindex.cli.main import cli
from docindex.errors import ExtractionError
from docindex.ingest.extract import ExtractLimits, get_extractor, kind_for

LIMITS = ExtractLimits()


def run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result


def extract(name: str, data: bytes, limits: ExtractLimits = LIMITS) -> Any:
    kind = kind_for(name)
    assert kind is not None
    return get_extractor(kind)(data, name, limits)


def source_line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# -- HTML -----------------------------------------------------------------------


def test_html_main_text_headings_and_source_lines() -> None:
    got = extract("page.html", _formats.HTML_PAGE.encode())
    assert got.kind == "html" and got.title == "Kettle manual"
    (unit,) = got.units
    lines = unit.text.split("\n")
    for word in ("scriptword", "navword", "headerword", "asideword", "footerword"):
        assert word not in unit.text
    page = _formats.HTML_PAGE
    h1 = source_line(page, "<h1>Descaling")
    assert lines[h1 - 1] == "# Descaling the kettle"
    fill = source_line(page, "Fill the kettle")
    assert lines[fill - 1] == (
        "Fill the kettle with water and add a spoon of citric acid."
    )
    assert lines[source_line(page, "<h2>Safety") - 1] == "## Safety"
    assert lines[source_line(page, "# is not") - 1] == "\\# is not a heading here"
    assert lines[source_line(page, "<td>Boil") - 1] == "Boil | 5"


def test_html_charset_minified_and_empty_pages() -> None:
    latin = "<html><head><meta charset=iso-8859-1><title>Caf\xe9</title></head>"
    got = extract(
        "a.htm", (latin + "<body><p>cr\xe8me</p></body></html>").encode("cp1252")
    )
    assert got.title == "Café" and "crème" in got.units[0].text
    one_line = "<h1>A</h1><p>one</p><h2>B</h2><p>two</p>"
    assert extract("m.html", one_line.encode()).units[0].text.split("\n") == [
        "# A", "one", "## B", "two",
    ]  # fmt: skip
    assert extract("e.html", b"   ").units[0].text == ""


def test_html_in_the_index_cites_source_lines_and_headings(tmp_path: Path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    (root / "page.html").write_text(_formats.HTML_PAGE, encoding="utf-8")
    db = str(tmp_path / "i.db")
    run("scan", str(root), "--db", db, "--json")
    hit = run("query", "citric acid", "--db", db, "--json")["hits"][0]
    assert hit["heading_path"] == ["Descaling the kettle"]
    assert hit["line"] == source_line(_formats.HTML_PAGE, "Fill the kettle")
    assert hit["title"] == "Kettle manual"
    assert (
        run("query", "footerword", "--db", db, "--json", "--mode", "lexical")["hits"]
        == []
    )


# -- EPUB -----------------------------------------------------------------------


def test_epub_chapters_in_spine_order_with_toc_titles() -> None:
    data = _formats.epub(_formats.THREE_CHAPTERS)
    got = extract("book.epub", data)
    assert got.kind == "epub" and got.title == "Three Chapters"
    assert [u.sheet for u in got.units] == ["ch1.xhtml", "ch2.xhtml", "ch3.xhtml"]
    storm = got.units[1].text.split("\n")
    # ch2 opens without its TOC title: "The Storm" heads it, its h2 goes one down
    assert "# The Storm" in storm and "### Night watch" in storm
    # ch1 starts with its own h1, which is its TOC title: nothing added
    assert got.units[0].text.count("# Departure") == 1
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        chapter = zf.read("OEBPS/ch2.xhtml").decode()
    assert storm.index("lanternword glowed.") + 1 == source_line(chapter, "lanternword")


def test_epub_in_the_index_cites_chapter_file_and_heading_path(tmp_path: Path) -> None:
    root = tmp_path / "books"
    root.mkdir()
    (root / "voyage.epub").write_bytes(_formats.epub(_formats.THREE_CHAPTERS))
    db = str(tmp_path / "i.db")
    run("scan", str(root), "--db", db, "--json")
    hit = run("query", "lanternword", "--db", db, "--json")["hits"][0]
    assert hit["heading_path"] == ["The Storm", "Night watch"]
    assert hit["sheet"] == "ch2.xhtml"
    shown = run("query", "lanternword", "--db", db).output
    assert "voyage.epub:" in shown and "ch2.xhtml" in shown


def test_epub_refuses_entities_and_drm() -> None:
    chapters = [("c.xhtml", "C", "<p>x</p>")]
    data = _formats.epub(chapters)
    entity = b'<!DOCTYPE html [<!ENTITY a "aaaaaaaa">]>\n<html><body>&a;</body></html>'
    bomb = _replace(data, "OEBPS/c.xhtml", entity)
    with pytest.raises(ExtractionError) as info:
        extract("b.epub", bomb)
    assert info.value.reason == "corrupt"
    enc = (
        b'<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        b'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
        b'<enc:CipherData><enc:CipherReference URI="OEBPS/c.xhtml"/>'
        b"</enc:CipherData></enc:EncryptedData></encryption>"
    )
    drm = _add(data, "META-INF/encryption.xml", enc)
    with pytest.raises(ExtractionError) as info:
        extract("d.epub", drm)
    assert info.value.reason == "encrypted"
    with pytest.raises(ExtractionError) as info:
        extract("n.epub", _formats.ods())  # a ZIP, but no EPUB container
    assert info.value.reason == "corrupt"


# -- OpenDocument ---------------------------------------------------------------


def test_odt_headings_paragraphs_and_table() -> None:
    got = extract("notes.odt", _formats.odt())
    assert got.kind == "odt" and got.title == "Garden notes"
    (unit,) = got.units
    assert unit.markdown
    assert unit.text.split("\n") == [
        "# Planting", "Tomatoes need sun.", "## Watering",
        "\\# twice a week, not a heading", "Plant | Month", "Basil | May",
    ]  # fmt: skip


def test_ods_sheets_rows_and_cell_refs() -> None:
    got = extract("budget.ods", _formats.ods())
    assert got.kind == "ods"
    assert [(u.sheet, u.text, u.line_cells) for u in got.units] == [
        ("Budget", "Item | Cost\nsheetword", ("A1", "C3")),
        ("Notes", "hello", ("A1",)),
    ]
    assert "truncated" not in got.meta
    capped = extract("budget.ods", _formats.ods(), ExtractLimits(max_sheet_rows=1))
    assert capped.meta["truncated"] == "Budget:1"


def test_odp_slides_titles_and_notes() -> None:
    got = extract("talk.odp", _formats.odp())
    assert got.kind == "odp" and got.title == "Roadmap"
    assert [(u.slide, u.text) for u in got.units] == [
        (1, "Roadmap\nShip in spring\nnotesword say it slowly"),
        (2, "Budget\nCosts are flat"),
    ]


def test_odf_type_comes_from_the_mimetype_entry() -> None:
    assert extract("misnamed.odt", _formats.ods()).kind == "ods"


def test_odf_refuses_encrypted_and_entities() -> None:
    data = _formats.odt()
    manifest = (
        b'<?xml version="1.0"?><manifest:manifest xmlns:manifest="urn:oasis:names:'
        b'tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry manifest:full-'
        b'path="content.xml"><manifest:encryption-data/></manifest:file-entry>'
        b"</manifest:manifest>"
    )
    with pytest.raises(ExtractionError) as info:
        extract("secret.odt", _replace(data, "META-INF/manifest.xml", manifest))
    assert info.value.reason == "encrypted"
    dtd = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>'
    with pytest.raises(ExtractionError) as info:
        extract("bomb.odt", _replace(data, "content.xml", dtd))
    assert info.value.reason == "corrupt"


# -- RTF and legacy Office --------------------------------------------------------


def test_rtf_text_code_page_and_title() -> None:
    got = extract("minutes.rtf", _formats.RTF)
    assert got.kind == "rtf" and got.title == "Minutes of the meeting"
    assert got.units[0].text.split("\n") == [
        "Minutes of the meeting",
        "The café budget rose by 5€ this year.",
        "Action: rtfword review.",
    ]
    with pytest.raises(ExtractionError) as info:
        extract("fake.rtf", b"just text")
    assert info.value.reason == "corrupt"


@pytest.mark.parametrize(
    ("name", "needle"),
    [("a.doc", ".docx"), ("b.xls", ".xlsx"), ("c.ppt", ".pptx")],
)
def test_legacy_binary_office_is_unsupported_with_a_hint(
    name: str, needle: str
) -> None:
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)
    with pytest.raises(ExtractionError) as info:
        extract(name, ole)
    assert info.value.reason == "unsupported"
    assert needle in str(info.value) and "97-2003" in str(info.value)


def test_legacy_suffix_on_rtf_html_or_text_is_read() -> None:
    assert extract("minutes.doc", _formats.RTF).kind == "rtf"
    assert extract("export.xls", _formats.HTML_PAGE.encode()).kind == "html"
    assert extract("readme.doc", b"plain words").units[0].text == "plain words"


# -- PDF: per-page bounds -----------------------------------------------------------


def test_pdf_every_page_of_a_generated_book() -> None:
    got = extract("book.pdf", _formats.pdf(120))
    assert [u.page for u in got.units] == list(range(1, 121))
    assert "pagemark120" in got.units[-1].text and not got.meta


def test_pdf_slow_page_is_left_out_and_the_rest_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pypdf import PageObject

    real = PageObject.extract_text

    def slow_on_page_two(self: Any, *args: Any, **kwargs: Any) -> str:
        text: str = real(self, *args, **kwargs)
        if "pagemark2\n" in text + "\n" and "pagemark2" in text.split()[2]:
            time.sleep(5)
        return text

    monkeypatch.setattr(PageObject, "extract_text", slow_on_page_two)
    got = extract("b.pdf", _formats.pdf(4), ExtractLimits(page_timeout_s=0.3))
    assert [u.page for u in got.units] == [1, 3, 4]
    assert got.meta["page_errors"] == "1 over 0.3 s"


def test_pdf_over_its_file_budget_keeps_the_pages_read() -> None:
    # 3,000 pages take seconds; half a second reads hundreds, and at least one
    # even on a loaded machine (a 0.05 s budget failed this test at load 6).
    got = extract("b.pdf", _formats.pdf(3000), ExtractLimits(pdf_timeout_s=0.5))
    pages = [u.page for u in got.units]
    assert 1 <= len(pages) < 3000 and pages == list(range(1, len(pages) + 1))
    assert got.meta["truncated"].startswith("time:0.5s at page ")


def test_pdf_pages_sharing_a_16_mb_stream_are_refused_unparsed(
    tmp_path: Path,
) -> None:
    # 2,000 pages drawing one 16 MB stream: ~360 KB on disk, 530 s of parsing
    # before the bytes budget (issue #33); now no page is parsed at all.
    root = tmp_path / "docs"
    root.mkdir()
    (root / "shared.pdf").write_bytes(_formats.shared_stream_pdf(2000, 16 * 2**20))
    (root / "note.md").write_text("# Note\n\nneighbourword\n", encoding="utf-8")
    db = str(tmp_path / "i.db")
    run("scan", str(root), "--db", db, "--json")
    assert run("query", "neighbourword", "--db", db, "--json")["hits"]
    skipped = json.dumps(run("skipped", "--db", db, "--json"))
    assert "too-large" in skipped and "2000 over 4 MB of content" in skipped


def test_pdf_over_its_content_bytes_keeps_the_pages_read() -> None:
    data = _formats.shared_stream_pdf(50, 100_000)
    limits = ExtractLimits(pdf_content_bytes=350_000)
    got = extract("shared.pdf", data, limits)
    assert [u.page for u in got.units] == [1, 2, 3]
    assert got.meta["truncated"] == "content:0.334 MB at page 4/50"


def test_pdf_page_alarm_lets_an_outer_deadline_fire() -> None:
    import gc
    import signal

    class Outer(BaseException):
        pass

    def fire(signum: int, frame: object) -> None:
        raise Outer

    # No garbage collection while the alarm may fire: a Python gc callback
    # (hypothesis installs one once any of its tests ran) would swallow the
    # exception as "unraisable" instead of letting it reach the extractor.
    gc.disable()
    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    try:
        with pytest.raises(Outer):
            extract("b.pdf", _formats.pdf(3000))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        gc.enable()


@pytest.mark.slow
def test_a_1000_page_pdf_indexes_completely(tmp_path: Path) -> None:
    root = tmp_path / "manuals"
    root.mkdir()
    (root / "manual.pdf").write_bytes(_formats.pdf(1000))
    db = str(tmp_path / "i.db")
    out = run("scan", str(root), "--db", db, "--json")
    assert out["indexed"] == 1 and out["skipped"] == {}
    hit = run("query", "pagemark1000", "--db", db, "--json", "--mode", "lexical")
    assert hit["hits"][0]["page"] == 1000


# -- helpers ------------------------------------------------------------------------


def _replace(data: bytes, name: str, content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, content if info.filename == name else src.read(info))
    return out.getvalue()


def _add(data: bytes, name: str, content: bytes) -> bytes:
    out = io.BytesIO(data)
    with zipfile.ZipFile(out, "a") as zf:
        zf.writestr(name, content)
    return out.getvalue()


# -- robustness --------------------------------------------------------------------


def format_samples() -> dict[str, bytes]:
    return {
        "page.html": _formats.HTML_PAGE.encode(),
        "book.epub": _formats.epub(_formats.THREE_CHAPTERS),
        "notes.odt": _formats.odt(),
        "budget.ods": _formats.ods(),
        "talk.odp": _formats.odp(),
        "minutes.rtf": _formats.RTF,
    }


def test_new_extractors_survive_mutated_files() -> None:
    """Seeded mutations of each format: a result or a skip reason, never a crash."""
    import random

    from test_fuzz import extract_bounded, mutate

    rng = random.Random(23)
    outcomes: dict[str, int] = {}
    for name, data in sorted(format_samples().items()) * 8:
        got = extract_bounded(mutate(data, rng), name)
        outcomes[got] = outcomes.get(got, 0) + 1
    assert sum(outcomes.values()) == 48 and outcomes.get("ok")


def test_deeply_nested_html_and_xml_do_not_overflow() -> None:
    deep = "<div>" * 100_000 + "deepword" + "</div>" * 100_000
    got = extract("deep.html", deep.encode())
    assert "deepword" in got.units[0].text
    rtf = b"{\\rtf1 " + b"{" * 50_000 + b"x" + b"}" * 50_000 + b"}"
    try:
        extract("deep.rtf", rtf)
    except ExtractionError as exc:
        assert exc.reason == "corrupt"


@pytest.mark.parametrize("depth", [300, pytest.param(180_000, marks=pytest.mark.slow)])
def test_html_nested_past_the_parser_limit_is_read_whole(
    tmp_path: Path, depth: int
) -> None:
    """Issue #33: libxml2 stops at 256 levels and the rest of the page was lost."""
    page = _formats.HTML_PAGE.replace(
        "<body>", "<body>" + "<div>" * depth + "\n<p>nestedword here</p>\n", 1
    ).replace("</body>", "</div>" * depth + "</body>", 1)
    assert page != _formats.HTML_PAGE
    shallow = extract("page.html", _formats.HTML_PAGE.encode()).units[0].text
    deep = extract("page.html", page.encode()).units[0].text
    assert "nestedword here" in deep
    # every block of the page is read, on its source line
    for needle in ("Fill the kettle", "Unplug before", "Boil | 5"):
        assert source_line(deep, needle) == source_line(page, needle.split(" |")[0])
    assert "citric acid" in deep and "# Descaling the kettle" in deep
    assert "footerword" not in deep and "footerword" not in shallow
    root = tmp_path / "site"
    root.mkdir()
    (root / "deep.html").write_text(page, encoding="utf-8")
    db = str(tmp_path / "i.db")
    run("scan", str(root), "--db", db, "--json")
    assert run("skipped", "--db", db, "--json")["files"] == []
    hit = run("query", "citric acid", "--db", db, "--json")["hits"][0]
    assert hit["line"] == source_line(page, "Fill the kettle")
    assert hit["title"] == "Kettle manual"


def test_outline_of_html_and_odt_lists_their_headings(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "page.html").write_text(_formats.HTML_PAGE, encoding="utf-8")
    (root / "notes.odt").write_bytes(_formats.odt())
    db = str(tmp_path / "i.db")
    run("scan", str(root), "--db", db, "--json")
    page = run("outline", "page.html", "--db", db, "--json")
    assert [(e["text"], e["line"]) for e in page["outline"]] == [
        ("Descaling the kettle", source_line(_formats.HTML_PAGE, "<h1>Descaling")),
        ("Safety", source_line(_formats.HTML_PAGE, "<h2>Safety")),
    ]
    notes = run("outline", "notes.odt", "--db", db, "--json")
    assert [e["text"] for e in notes["outline"]] == ["Planting", "Watering"]


def test_outline_and_section_of_an_epub_name_each_chapter(tmp_path: Path) -> None:
    # An EPUB's chapters each count their own lines: the outline says which
    # chapter file a line is in, and a section is read from its chunks.
    root = tmp_path / "docs"
    root.mkdir()
    (root / "book.epub").write_bytes(_formats.epub(_formats.THREE_CHAPTERS))
    db = str(tmp_path / "i.db")
    run("scan", str(root), "--db", db, "--json")
    book = run("outline", "book.epub", "--db", db, "--json")
    assert [(e["level"], e["text"], e["unit"]) for e in book["outline"]] == [
        (1, "Departure", "ch1.xhtml"),
        (1, "The Storm", "ch2.xhtml"),
        (2, "Night watch", "ch2.xhtml"),
        (1, "Arrival", "ch3.xhtml"),
    ]
    assert all(e["chunk_id"].startswith("book.epub#") for e in book["outline"])
    storm = run("section", "book.epub", "the storm", "--db", db, "--json")
    assert storm["unit"] == "ch2.xhtml"
    assert "Night watch" in storm["text"] and "harbour" not in storm["text"]
    alone = run(
        "section", "book.epub", "the storm", "--no-subsections", "--db", db, "--json"
    )
    assert "Night watch" not in alone["text"] and "Storm" in alone["text"]
    shown = CliRunner().invoke(cli, ["outline", "book.epub", "--db", db])
    assert "ch2.xhtml:" in shown.output


def test_html_sphinx_like_chrome_is_dropped() -> None:
    page = (
        '<html><body><div class="related" role="navigation">relatedword</div>\n'
        '<div class="document"><h2>Intro<a class="headerlink" href="#i">¶</a></h2>\n'
        "<p>bodyword</p></div>\n"
        '<div class="sphinxsidebar">sidebarword</div>\n'
        '<div class="footer">footerclassword</div></body></html>'
    )
    text = extract("s.html", page.encode()).units[0].text
    assert text.split("\n") == ["", "## Intro", "bodyword"]


def test_html_text_after_a_hidden_element_appears_once() -> None:
    # mdBook's table of contents: a hidden section number before each title.
    page = (
        "<html><body><ol><li><a href='a.html'><strong aria-hidden='true'>12.2."
        "</strong> Reading a File</a></li></ol>\n<nav>menu</nav>after nav\n"
        "<p>kept <span hidden>gone</span> too</p></body></html>"
    )
    lines = extract("toc.html", page.encode()).units[0].text.split("\n")
    assert [line for line in lines if line] == [
        "Reading a File",
        "after nav",
        "kept too",
    ]
