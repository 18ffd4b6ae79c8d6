"""Hostile input (issue #8): every case is built here, then scanned for real.

Each file must be skipped with a reason or indexed, in bounded time, and the
scan must complete. The builders are shared with ``bench/hostile_table.py``,
which records time and peak memory per case.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from docindex.config import Config
from docindex.errors import ExtractionError
from docindex.ingest.extract import ExtractLimits, get_extractor

# -- builders -------------------------------------------------------------------

MIB = 1024 * 1024


def _ooxml_base(kind: str) -> bytes:
    """A small valid document of ``kind`` made with the real library."""
    buf = io.BytesIO()
    if kind == "docx":
        import docx

        document = docx.Document()
        document.add_paragraph("harmless body text")
        document.save(buf)
    elif kind == "xlsx":
        from openpyxl import Workbook

        workbook = Workbook()
        workbook.active["A1"] = "harmless cell text"
        workbook.save(buf)
    else:  # pptx
        from pptx import Presentation

        prs = Presentation()
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = "harmless slide"
        prs.save(buf)
    return buf.getvalue()


def _replace_parts(
    data: bytes, parts: dict[str, bytes | Callable[[Any], None]]
) -> bytes:
    """Copy an OOXML zip, replacing (or adding) parts; a callable streams a part."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            if info.filename not in parts:
                dst.writestr(info, src.read(info))
        for name, content in parts.items():
            if callable(content):
                with dst.open(name, "w", force_zip64=True) as fh:
                    content(fh)
            else:
                dst.writestr(name, content)
    return out.getvalue()


def _main_part(kind: str) -> str:
    return {"docx": "word/document.xml", "xlsx": "xl/sharedStrings.xml",
            "pptx": "ppt/slides/slide1.xml"}[kind]  # fmt: skip


def zip_bomb(kind: str, size: int = 64 * MIB) -> bytes:
    """A real document whose main part inflates ``size`` bytes of zeros (~1000:1)."""
    block = b"\x00" * MIB

    def write(fh: Any) -> None:
        for _ in range(size // MIB):
            fh.write(block)

    return _replace_parts(_ooxml_base(kind), {_main_part(kind): write})


def zip_lying_sizes(kind: str, real: int = 8 * MIB, declared: int = 2000) -> bytes:
    """A zip bomb whose headers declare a tiny part that really inflates to ``real``."""
    data = bytearray(
        _replace_parts(_ooxml_base(kind), {_main_part(kind): b"<" + b"a" * real})
    )
    name = _main_part(kind).encode()
    # Local header: uncompressed size at +22; central directory entry: at +24.
    local = 0
    while True:
        local = data.find(b"PK\x03\x04", local)
        n = struct.unpack_from("<H", data, local + 26)[0]
        if data[local + 30 : local + 30 + n] == name:
            break
        local += 4
    struct.pack_into("<I", data, local + 22, declared)
    central = 0
    while True:
        central = data.find(b"PK\x01\x02", central)
        n = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46 : central + 46 + n] == name:
            break
        central += 4
    struct.pack_into("<I", data, central + 24, declared)
    return bytes(data)


def zip_many_entries(kind: str, n: int = 12_000) -> bytes:
    """A document padded with more archive entries than the limit."""
    out = io.BytesIO(_ooxml_base(kind))
    with zipfile.ZipFile(out, "a", zipfile.ZIP_STORED) as zf:
        for i in range(n):
            zf.writestr(f"customXml/pad{i}.bin", b"")
    return out.getvalue()


BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + b"".join(
        b' <!ENTITY lol%d "%s">\n'
        % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
        for i in range(1, 10)
    )
    + b"]>\n<lolz>&lol9;</lolz>\n"
)


def billion_laughs(kind: str) -> bytes:
    """A document whose main part declares exponentially nested entities."""
    return _replace_parts(_ooxml_base(kind), {_main_part(kind): BILLION_LAUGHS})


def deep_xml_docx(depth: int = 20_000) -> bytes:
    """A DOCX whose body nests ``depth`` content controls."""
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = (
        b"<w:sdt><w:sdtContent>" * depth
        + b"<w:p><w:r><w:t>deep</w:t></w:r></w:p>"
        + b"</w:sdtContent></w:sdt>" * depth
    )
    xml = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<w:document xmlns:w="{w}"><w:body>'.encode()
        + body
        + b"</w:body></w:document>"
    )
    return _replace_parts(_ooxml_base("docx"), {"word/document.xml": xml})


def deep_group_pptx(depth: int = 120) -> bytes:
    """A PPTX slide whose one text box sits inside ``depth`` nested group shapes."""
    base = _ooxml_base("pptx")
    with zipfile.ZipFile(io.BytesIO(base)) as zf:
        slide = zf.read("ppt/slides/slide1.xml")
    a = b'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
    group = (
        b'<p:grpSp><p:nvGrpSpPr><p:cNvPr id="%d" name="G"/><p:cNvGrpSpPr/><p:nvPr/>'
        b"</p:nvGrpSpPr><p:grpSpPr/>"
    )
    text = (
        b'<p:sp><p:nvSpPr><p:cNvPr id="9999" name="T"/><p:cNvSpPr/><p:nvPr/>'
        b"</p:nvSpPr><p:spPr/><p:txBody><a:bodyPr " + a + b"/><a:p " + a + b">"
        b"<a:r><a:t>deep text</a:t></a:r></a:p></p:txBody></p:sp>"
    )
    nested = b"".join(group % (100 + i) for i in range(depth)) + text
    nested += b"</p:grpSp>" * depth
    slide = slide.replace(b"</p:spTree>", nested + b"</p:spTree>")
    return _replace_parts(base, {"ppt/slides/slide1.xml": slide})


def raw_pdf(objects: list[bytes], root: int = 1) -> bytes:
    """A PDF from numbered object bodies, with a correct xref table."""
    out = b"%PDF-1.7\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, root, xref,
    )  # fmt: skip
    return out


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
_TEXT = b"BT /F1 12 Tf 72 712 Td (hostile pdf text) Tj ET"


def _page(contents: int, font: int, extra: bytes = b"") -> bytes:
    return (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
        b"/Resources << /Font << /F1 %d 0 R >> %s >> >>" % (contents, font, extra)
    )


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def pdf_kids_loop() -> bytes:
    """A page tree whose Kids array contains the Pages node itself."""
    return raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>",
        _page(4, 5), _stream(_TEXT), _FONT,
    ])  # fmt: skip


def pdf_self_reference() -> bytes:
    """An object whose value is a reference to itself."""
    return raw_pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"2 0 R"])


def pdf_xobject_loop() -> bytes:
    """A form XObject that draws itself."""
    form = _stream(b"/X1 Do", b"/Type /XObject /Subtype /Form /BBox [0 0 9 9] "
                   b"/Resources << /XObject << /X1 6 0 R >> >>")  # fmt: skip
    return raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        _page(4, 5, b"/XObject << /X1 6 0 R >>"), _stream(_TEXT + b" /X1 Do"), _FONT,
        form,
    ])  # fmt: skip


def pdf_deep_array(depth: int = 100_000) -> bytes:
    """A catalog entry nested ``depth`` arrays deep."""
    deep = b"[" * depth + b"]" * depth
    return raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R /Deep " + deep + b" >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", _page(4, 5), _stream(_TEXT), _FONT,
    ])  # fmt: skip


def pdf_deep_dict(depth: int = 50_000) -> bytes:
    """A page resource nested ``depth`` dictionaries deep."""
    deep = b"<< /A " * depth + b"1" + b" >>" * depth
    return raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        _page(4, 5, b"/Deep " + deep), _stream(_TEXT), _FONT,
    ])  # fmt: skip


def pdf_deep_pages(depth: int = 3000) -> bytes:
    """A page tree ``depth`` Pages nodes deep."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    objects += [
        b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % (3 + i) for i in range(depth)
    ]
    n = len(objects)
    objects.append(
        b"<< /Type /Page /MediaBox [0 0 612 792] /Contents %d 0 R "
        b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (n + 2, n + 3)
    )
    objects += [_stream(_TEXT), _FONT]
    return raw_pdf(objects)


def pdf_flate_bomb(size: int = 128 * MIB) -> bytes:
    """A page whose content stream inflates ``size`` bytes of zeros."""
    co = zlib.compressobj(9)
    block = b"\x00" * MIB
    comp = b"".join(co.compress(block) for _ in range(size // MIB)) + co.flush()
    return raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        _page(4, 5), _stream(comp, b"/Filter /FlateDecode"), _FONT,
    ])  # fmt: skip


_CMAP = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
/CMapName /Adobe-Identity-UCS def
/CMapType 2 def
1 begincodespacerange
<00> <FF>
endcodespacerange
3 beginbfchar
<01> <D83D>
<02> <0000>
<03> <001B>
endbfchar
1 beginbfrange
<20> <7E> <0020>
endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end"""


def surrogate_pdf() -> bytes:
    """A PDF whose ToUnicode map sends glyph 1 to a lone high surrogate (U+D83D),
    glyph 2 to NUL and glyph 3 to ESC, as some PDF generators write them."""
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>"
    text = b"BT /F1 12 Tf 72 712 Td (zebrafish \\001 lone \\002 nul \\003 quokka) Tj ET"
    return raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        _page(4, 5), _stream(text), font, _stream(_CMAP),
    ])  # fmt: skip


def chinese_prose(size: int = 4 * MIB) -> bytes:
    """``size`` bytes of Markdown that is mostly Chinese: the CJK n-gram path's
    worst case for memory (issue #7 builds its FTS text in numpy)."""
    han = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动"
    lines, n = [], 0
    while n < size:
        k = len(lines)
        line = "".join(han[(k * 7 + i * i) % len(han)] for i in range(60)) + "。\n"
        lines.append(f"## 第{k}节\n\n{line}" if k % 50 == 0 else line)
        n += len(lines[-1].encode())
    return "".join(lines).encode()[:size]


def huge_line(size: int = 4 * MIB) -> bytes:
    """``size`` bytes of words with no newline at all (minified-JSON style)."""
    unit = b"token%05d,"
    reps = size // len(unit % 0) + 1
    return b"".join(unit % (i % 100_000) for i in range(reps))[:size]


# -- cases ----------------------------------------------------------------------

Maker = Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    """One hostile thing in a tree: how to make it, where, and what may happen.

    ``expect`` holds the acceptable outcomes: skip reasons, ``indexed`` or
    ``none`` (the walker left it out without a message, as for a pruned loop).
    """

    name: str
    path: str
    make: Maker
    expect: frozenset[str]


def _bytes(rel: str, data: Callable[[], bytes]) -> Maker:
    def make(root: Path) -> None:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data())

    return make


def _fifo(rel: str) -> Maker:
    def make(root: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(root / rel)

    return make


def _symlink_loops(root: Path) -> None:
    (root / "loops").mkdir(parents=True, exist_ok=True)
    (root / "loops" / "inner.md").write_text("# inside the loop\n\nloop text\n")
    os.symlink("..", root / "loops" / "up")  # a directory cycle
    os.symlink("self.txt", root / "loops" / "self.txt")  # ELOOP
    os.symlink("b.txt", root / "loops" / "a.txt")
    os.symlink("a.txt", root / "loops" / "b.txt")


def _bad_name(root: Path) -> None:
    with open(os.path.join(os.fsencode(root), b"bad-\xff\xfe-name.txt"), "wb") as fh:
        fh.write(b"a file whose name is not UTF-8\n")


def _device_link(root: Path) -> None:
    os.symlink("/dev/zero", root / "zero.txt")


def _gitignore_fifo(root: Path) -> None:
    (root / "gi").mkdir(parents=True, exist_ok=True)
    (root / "gi" / "kept.md").write_text("# kept\n\nbeside a fifo gitignore\n")
    os.mkfifo(root / "gi" / ".gitignore")


def cases() -> list[Case]:
    """Every hostile case of issue #8 that one scan can hold."""
    f = frozenset
    return [
        Case(
            "zip bomb .docx",
            "bomb.docx",
            _bytes("bomb.docx", lambda: zip_bomb("docx")),
            f({"zip-bomb"}),
        ),
        Case(
            "zip bomb .xlsx",
            "bomb.xlsx",
            _bytes("bomb.xlsx", lambda: zip_bomb("xlsx")),
            f({"zip-bomb"}),
        ),
        Case(
            "zip bomb, lying sizes .docx",
            "lying.docx",
            _bytes("lying.docx", lambda: zip_lying_sizes("docx")),
            f({"corrupt"}),
        ),
        Case(
            "zip 12k entries .xlsx",
            "many.xlsx",
            _bytes("many.xlsx", lambda: zip_many_entries("xlsx")),
            f({"zip-bomb"}),
        ),
        Case(
            "billion laughs .docx",
            "laughs.docx",
            _bytes("laughs.docx", lambda: billion_laughs("docx")),
            f({"corrupt"}),
        ),
        Case(
            "billion laughs .xlsx",
            "laughs.xlsx",
            _bytes("laughs.xlsx", lambda: billion_laughs("xlsx")),
            f({"corrupt"}),
        ),
        Case(
            "billion laughs .pptx",
            "laughs.pptx",
            _bytes("laughs.pptx", lambda: billion_laughs("pptx")),
            f({"corrupt"}),
        ),
        Case(
            "billion laughs .xml (text)",
            "laughs.xml",
            _bytes("laughs.xml", lambda: BILLION_LAUGHS),
            f({"indexed"}),
        ),
        Case(
            "XML nested 20k deep .docx",
            "deep.docx",
            _bytes("deep.docx", deep_xml_docx),
            f({"corrupt", "indexed"}),
        ),
        Case(
            "PPTX group shapes 120 deep",
            "groups.pptx",
            _bytes("groups.pptx", deep_group_pptx),
            f({"corrupt", "indexed"}),
        ),
        Case(
            "PDF page-tree loop",
            "kids-loop.pdf",
            _bytes("kids-loop.pdf", pdf_kids_loop),
            f({"corrupt"}),
        ),
        Case(
            "PDF self reference",
            "self-ref.pdf",
            _bytes("self-ref.pdf", pdf_self_reference),
            f({"corrupt"}),
        ),
        Case(
            "PDF XObject draws itself",
            "xobject-loop.pdf",
            _bytes("xobject-loop.pdf", pdf_xobject_loop),
            f({"corrupt", "indexed"}),
        ),
        Case(
            "PDF arrays 100k deep",
            "deep-array.pdf",
            _bytes("deep-array.pdf", pdf_deep_array),
            f({"corrupt", "indexed"}),
        ),
        Case(
            "PDF dicts 50k deep",
            "deep-dict.pdf",
            _bytes("deep-dict.pdf", pdf_deep_dict),
            f({"corrupt", "indexed"}),
        ),
        Case(
            "PDF page tree 3000 deep",
            "deep-pages.pdf",
            _bytes("deep-pages.pdf", pdf_deep_pages),
            f({"corrupt"}),
        ),
        Case(
            "PDF flate bomb 128 MiB",
            "flate-bomb.pdf",
            _bytes("flate-bomb.pdf", pdf_flate_bomb),
            f({"corrupt", "too-large"}),
        ),
        Case(
            "4 MiB single line",
            "huge-line.txt",
            _bytes("huge-line.txt", huge_line),
            f({"indexed"}),
        ),
        Case(
            "4 MiB of Chinese prose",
            "chinese.md",
            _bytes("chinese.md", chinese_prose),
            f({"indexed"}),
        ),
        Case(
            "PDF ToUnicode lone surrogate (#17)",
            "surrogate.pdf",
            _bytes("surrogate.pdf", surrogate_pdf),
            f({"indexed"}),
        ),
        Case(
            "0-byte file",
            "empty.txt",
            _bytes("empty.txt", lambda: b""),
            f({"empty", "none"}),
        ),
        Case(
            "invalid UTF-8 content",
            "invalid.txt",
            _bytes("invalid.txt", lambda: b"caf\xe9 \xff\xfe broken \xc3\x28 bytes\n"),
            f({"indexed"}),
        ),
        Case(
            "non-UTF-8 file name",
            "bad-\udcff\udcfe-name.txt",
            _bad_name,
            f({"bad-name"}),
        ),
        Case(
            "newline in file name",
            "new\nline.md",
            _bytes("new\nline.md", lambda: b"# newline\n\nname with a newline\n"),
            f({"indexed"}),
        ),
        Case("FIFO in the tree", "fifo.txt", _fifo("fifo.txt"), f({"unsupported"})),
        Case("FIFO named .gitignore", "gi/kept.md", _gitignore_fifo, f({"indexed"})),
        Case("symlink to /dev/zero", "zero.txt", _device_link, f({"symlink"})),
        Case(
            "symlink loops (--follow-symlinks)",
            "loops/self.txt",
            _symlink_loops,
            f({"error"}),
        ),
    ]


def build_tree(root: Path, selected: list[Case]) -> Path:
    """Make ``selected`` cases plus one ordinary file under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "normal.md").write_text("# Normal\n\nan ordinary document\n")
    for case in selected:
        case.make(root)
    return root


def outcome(result: dict[str, Any], index: Path, root: Path, case: Case) -> str:
    """What the scan did with ``case``: a skip reason, ``indexed`` or ``none``."""
    from docindex.models import printable

    full = printable(os.path.join(str(root), case.path))
    for err in result["errors"]:
        if err["path"] == full:
            return str(err["reason"])
    if printable(case.path) != case.path:
        return "none"  # an undecodable name cannot be a rel_path
    conn = sqlite3.connect(index)
    try:
        row = conn.execute(
            "SELECT 1 FROM documents WHERE rel_path = ?", (case.path,)
        ).fetchone()
    finally:
        conn.close()
    return "indexed" if row else "none"


def scan_subprocess(
    root: Path, db: Path, *extra: str, timeout: float = 120
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """Run ``python -m docindex scan`` for real; return the process and its JSON."""
    proc = subprocess.run(
        [sys.executable, "-m", "docindex", "scan", str(root), "--db", str(db),
         "--json", *extra],
        capture_output=True, text=True, timeout=timeout, errors="backslashreplace",
    )  # fmt: skip
    data = json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout else None
    return proc, data


# -- tests ----------------------------------------------------------------------

EXTRACTOR_CASES = [
    ("docx", lambda: zip_bomb("docx"), {"zip-bomb"}),
    ("xlsx", lambda: zip_bomb("xlsx"), {"zip-bomb"}),
    ("pptx", lambda: zip_bomb("pptx"), {"zip-bomb"}),
    ("docx", lambda: zip_lying_sizes("docx"), {"corrupt"}),
    ("xlsx", lambda: zip_lying_sizes("xlsx"), {"corrupt"}),
    ("xlsx", lambda: zip_many_entries("xlsx"), {"zip-bomb"}),
    ("docx", lambda: billion_laughs("docx"), {"corrupt"}),
    ("xlsx", lambda: billion_laughs("xlsx"), {"corrupt"}),
    ("pptx", lambda: billion_laughs("pptx"), {"corrupt"}),
    ("docx", deep_xml_docx, {"corrupt", "ok"}),
    ("pptx", deep_group_pptx, {"corrupt", "ok"}),
    ("pdf", pdf_kids_loop, {"corrupt"}),
    ("pdf", pdf_self_reference, {"corrupt"}),
    ("pdf", pdf_xobject_loop, {"corrupt", "ok"}),
    ("pdf", pdf_deep_array, {"corrupt", "ok"}),
    ("pdf", pdf_deep_dict, {"corrupt", "ok"}),
    ("pdf", pdf_deep_pages, {"corrupt"}),
    ("pdf", pdf_flate_bomb, {"corrupt", "too-large"}),
]


@pytest.mark.parametrize(
    ("kind", "build", "expected"),
    EXTRACTOR_CASES,
    ids=[
        f"{k}-{getattr(b, '__name__', 'lambda')}-{i}"
        for i, (k, b, _) in enumerate(EXTRACTOR_CASES)
    ],  # fmt: skip
)
def test_extractor_refuses_hostile_file_quickly(
    kind: str, build: Callable[[], bytes], expected: set[str]
) -> None:
    data = build()
    started = time.perf_counter()
    try:
        extracted = get_extractor(kind)(data, f"hostile.{kind}", ExtractLimits())
    except ExtractionError as exc:
        got = exc.reason
    else:
        got = "ok"
        assert sum(len(u.text) for u in extracted.units) < 50 * MIB
    assert got in expected
    assert time.perf_counter() - started < 10


def _check_scan_over(tmp_path: Path, selected: list[Case]) -> None:
    """One real scan (subprocess, so a hang is a timeout) over ``selected`` at once."""
    root = build_tree(tmp_path / "hostile", selected)
    db = tmp_path / "db" / "index.db"
    started = time.perf_counter()
    proc, result = scan_subprocess(root, db, "--follow-symlinks", timeout=120)
    took = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert result is not None
    assert took < 60
    wrong = {}
    for case in selected:
        got = outcome(result, db, root, case)
        if got not in case.expect:
            wrong[case.name] = got
    assert not wrong, (wrong, result["errors"])
    assert result["skipped"].get("empty") == 1
    normal = Case("ordinary", "normal.md", _fifo("unused"), frozenset())
    assert outcome(result, db, root, normal) == "indexed"
    if any(c.path.startswith("loops/") for c in selected):
        # The loop's target was walked once, not forever.
        conn = sqlite3.connect(db)
        try:
            inner = conn.execute(
                "SELECT count(*) FROM documents WHERE rel_path LIKE '%inner.md'"
            ).fetchone()[0]
        finally:
            conn.close()
        assert inner == 1


def test_scan_completes_over_hostile_cases(tmp_path: Path) -> None:
    """Every case but the two 4 MiB texts (seconds each; see the slow test)."""
    big = ("huge-line.txt", "chinese.md")
    _check_scan_over(tmp_path, [c for c in cases() if c.path not in big])


@pytest.mark.slow
def test_scan_completes_over_every_hostile_case(tmp_path: Path) -> None:
    _check_scan_over(tmp_path, cases())


def test_file_that_vanishes_between_walk_and_read(tmp_path: Path) -> None:
    """A walk hook (the progress callback) deletes one file and swaps another for a FIFO."""
    from docindex.ingest.indexer import Progress, scan
    from docindex.store import Store

    root = tmp_path / "docs"
    root.mkdir()
    for name in ("gone.md", "fifo.md", "stays.md"):
        (root / name).write_text(f"# {name}\n\nsome text\n")
    cfg = Config(roots=(str(root.resolve()),), workers=1)

    def hook(event: Progress) -> None:
        if event.phase == "walk" and event.path == "stays.md":  # walk is over
            (root / "gone.md").unlink()
            (root / "fifo.md").unlink()
            os.mkfifo(root / "fifo.md")

    started = time.perf_counter()
    with Store.open(tmp_path / "i.db", create=True) as store:
        result = scan(store, cfg, on_progress=hook)
        docs = {r[0] for r in store.conn.execute("SELECT rel_path FROM documents")}
    assert time.perf_counter() - started < 10
    assert docs == {"stays.md"}
    reasons = {Path(e["path"]).name: (e["reason"], e["message"]) for e in result.errors}
    assert reasons["gone.md"] == ("error", "file vanished before it was read")
    assert reasons["fifo.md"] == ("unsupported", "not a regular file")


def test_prepare_on_missing_path_and_fifo(tmp_path: Path) -> None:
    from docindex.ingest.indexer import Job, prepare

    cfg = Config()
    missing = prepare(Job(str(tmp_path / "nope.md"), "nope.md", str(tmp_path), 1, 1,
                           None), cfg)  # fmt: skip
    assert missing.skip == "error"
    os.mkfifo(tmp_path / "p.md")
    started = time.perf_counter()
    fifo = prepare(Job(str(tmp_path / "p.md"), "p.md", str(tmp_path), 1, 1, None), cfg)
    assert fifo.skip == "unsupported"
    assert time.perf_counter() - started < 2


def _unprivileged() -> list[str]:
    """A command prefix under which permission bits apply, or skip.

    Root ignores permission bits; dropping CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH from the bounding set makes root obey them.
    """
    if not hasattr(os, "geteuid"):
        pytest.skip("POSIX permissions only")
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv is missing: permission bits ignored")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]


def test_permission_denied_file_and_directory(tmp_path: Path) -> None:
    """Unreadable file and directory: skipped with a reason, the scan completes."""
    prefix = _unprivileged()
    root = tmp_path / "docs"
    (root / "locked").mkdir(parents=True)
    (root / "ok.md").write_text("# ok\n\nreadable\n")
    (root / "secret.md").write_text("# secret\n\nunreadable\n")
    (root / "locked" / "inner.md").write_text("# inner\n\nunreachable\n")
    os.chmod(root / "secret.md", 0o000)
    os.chmod(root / "locked", 0o000)
    try:
        proc = subprocess.run(
            [*prefix, sys.executable, "-m", "docindex", "scan", str(root), "--db",
             str(tmp_path / "db" / "i.db"), "--json"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        os.chmod(root / "locked", 0o755)
        os.chmod(root / "secret.md", 0o644)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    errors = {Path(e["path"]).name: e for e in result["errors"]}
    assert errors["secret.md"]["reason"] == "error"
    assert "ermission" in errors["secret.md"]["message"]
    assert errors["locked"]["reason"] == "error"
    assert result["indexed"] == 1


def test_fifo_named_gitignore_does_not_block_the_walk(tmp_path: Path) -> None:
    from docindex.ingest.walker import FileEntry, WalkOptions, walk

    root = tmp_path / "docs"
    _gitignore_fifo(root)
    started = time.perf_counter()
    found = [e.rel_path for e in walk([root.resolve()], WalkOptions())
             if isinstance(e, FileEntry)]  # fmt: skip
    assert found == ["gi/kept.md"]
    assert time.perf_counter() - started < 2
