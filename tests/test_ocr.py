"""OCR of scanned PDF pages and images on the real tesseract (issue #36).

Pages are drawn with a real font and wrapped as image-only PDFs or saved as
images; the words must be found at their page and line. Skipped when
tesseract is absent, except under CI=true, where that is a failure.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import _formats  # noqa: E402
import _scans  # noqa: E402
from conftest import run, run_json  # noqa: E402

from docindex.ingest.extract import ocr  # noqa: E402

pytest.importorskip("PIL")


def _small_page(lines: list[str]) -> Any:
    return _scans.page(lines, dpi=200, width_in=5, height_in=2.2, pt=14)


def _hits(query: str) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = run_json("query", query)["hits"]
    return hits


def test_a_scanned_pdf_is_skipped_with_a_hint_then_read_when_ocr_is_turned_on(
    tesseract: ocr.Engine,
    ocr_english: None,
    tree: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pdf = _scans.image_pdf(
        [
            _small_page(["Quarterly invoice from Zephyrine", "paid in March"]),
            _small_page(["The harbour crane", "failed its marmalade inspection"]),
        ],
        dpi=200,
    )
    root = tree({"scan.pdf": pdf, "notes.md": "# Notes\n\nplain text\n"})
    first = run_json("scan", str(root))
    assert first["skipped"] == {"no-text-layer": 1}
    listed = run("skipped", "--reason", "no-text-layer").stdout
    assert "scan.pdf" in listed and "ocr = true" in listed
    assert _hits("marmalade") == []

    again = run_json("scan", "--ocr")  # unchanged file, OCR now on: read
    assert again["skipped"] == {}
    hits = _hits("marmalade")
    assert [(h["rel_path"], h["page"], h["line"]) for h in hits] == [("scan.pdf", 2, 2)]
    assert [(h["page"], h["line"]) for h in _hits("Zephyrine")] == [(1, 1)]
    assert "scan.pdf" not in run("skipped", "--reason", "no-text-layer").stdout

    third = run_json("scan", "--ocr")  # unchanged: never OCR'd again
    assert third["unchanged"] == 2 and third["indexed"] == 0
    # re-read by force, or moved: its OCR text comes from the cache, by content
    cached = [p for p in Path(os.environ["XDG_CACHE_HOME"]).rglob("ocr/*/*.json")
              if "marmalade" in p.read_text("utf-8")]  # fmt: skip
    assert len(cached) == 1
    written = cached[0].stat().st_mtime_ns
    (root / "scan.pdf").rename(root / "moved.pdf")
    monkeypatch.setenv("DOCINDEX_OCR", "true")
    run_json("reindex")
    assert [(h["rel_path"], h["page"], h["line"]) for h in _hits("marmalade")] == [
        ("moved.pdf", 2, 2)
    ]
    assert cached[0].stat().st_mtime_ns == written  # no page was OCR'd again


def test_images_are_found_by_their_words_and_icons_are_skipped(
    tesseract: ocr.Engine, ocr_english: None, tree: Callable[..., Path]
) -> None:
    from PIL import Image

    shot = _scans.strip(["Settings", "Enable the kaleidoscope renderer"])
    root = tree({
        "shot.png": _scans.encode(shot, "PNG"),
        "photo.jpg": _scans.encode(shot, "JPEG", quality=90),
        "icon.png": _scans.encode(Image.new("RGB", (32, 32), "red"), "PNG"),
        "blank.png": _scans.encode(Image.new("L", (400, 300), 255), "PNG"),
    })  # fmt: skip
    result = run_json("scan", "--ocr", str(root))
    assert result["skipped"] == {"no-text-found": 2}
    hits = _hits("kaleidoscope")
    assert sorted((h["rel_path"], h["line"], h.get("page")) for h in hits) == [
        ("photo.jpg", 2, None),
        ("shot.png", 2, None),
    ]
    listed = run("skipped", "--reason", "no-text-found").stdout
    assert "icon.png" in listed and "blank.png" in listed


def test_without_ocr_images_are_listed_as_needing_it(tree: Callable[..., Path]) -> None:
    root = tree({"a.png": b"\x89PNG\r\n\x1a\n not read", "b.md": "# B\n\ntext\n"})
    result = run_json("scan", str(root))
    assert result["skipped"] == {"no-text-layer": 1}
    assert "docindex scan --ocr" in run("skipped").stdout


def test_a_scanned_chinese_page_is_found_by_two_characters(
    tesseract: ocr.Engine, tree: Callable[..., Path]
) -> None:
    if "chi_sim" not in tesseract.installed or _scans.font(20, cjk=True) is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI installs tesseract-ocr-chi-sim and fonts-noto-cjk")
        pytest.skip("chi_sim or a CJK font is not installed")
    shot = _scans.strip(["扫描的合同文件", "付款日期在三月"], cjk=True)
    root = tree({"合同.png": _scans.encode(shot, "PNG")})
    run_json("scan", "--ocr", str(root))
    hits = _hits("合同")
    assert [(h["rel_path"], h["line"]) for h in hits] == [("合同.png", 1)]
    assert [h["line"] for h in _hits("付款")] == [2]


def test_config_shows_the_engine_and_reads_the_ocr_table(
    tesseract: ocr.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text('[ocr]\nenabled = true\nlanguages = ["eng", "xxx"]\n')
    monkeypatch.setenv("DOCINDEX_CONFIG", str(conf))
    data = run_json("config")
    assert data["settings"]["ocr"] == {"value": True, "source": f"config file {conf}"}
    assert data["ocr"]["active"] is True
    assert data["ocr"]["engine"] == tesseract.version
    assert data["ocr"]["languages"] == ["eng"]  # xxx is not installed
    assert "ocr engine" in run("config").stdout


@pytest.mark.slow
def test_a_mixed_pdf_keeps_its_text_pages_and_reads_its_scanned_ones(
    tesseract: ocr.Engine, ocr_english: None, tree: Callable[..., Path]
) -> None:
    scanned = _scans.image_pdf(
        [_small_page(["Minutes of the board", "The budget for the lighthouse"])],
        dpi=200,
    )
    root = tree({"mixed.pdf": _scans.mixed_pdf(_formats.pdf(2), scanned)})
    off = run_json("scan", str(root))  # the text pages are indexed; the scan is listed
    assert off["indexed"] == 1 and off["skipped"] == {"no-text-layer": 1}
    listed = run("skipped", "--reason", "no-text-layer").stdout
    assert "mixed.pdf" in listed and "1 of 3 pages are scans" in listed
    assert [(h["page"], h["line"]) for h in _hits("pagemark2")] == [(2, 1)]
    assert _hits("lighthouse") == []
    on = run_json("scan", "--ocr")  # unchanged on disk, read again for its scan
    assert on["updated"] == 1 and on["skipped"] == {}
    assert [(h["page"], h["line"]) for h in _hits("pagemark2")] == [(2, 1)]
    assert [(h["page"], h["line"]) for h in _hits("lighthouse")] == [(3, 2)]
    assert "mixed.pdf" not in run("skipped").stdout
    assert run_json("scan", "--ocr")["unchanged"] == 1


@pytest.mark.slow
def test_every_tiff_frame_is_a_page(
    tesseract: ocr.Engine, ocr_english: None, tree: Callable[..., Path]
) -> None:
    frames = [_small_page([f"Frame number {w}"]) for w in ("alpha", "bravo", "tango")]
    data = _scans.encode(frames[0], "TIFF", save_all=True, append_images=frames[1:],
                         compression="tiff_lzw")  # fmt: skip
    gif = _scans.encode(_scans.strip(["Gazebo"]).convert("P"), "GIF")
    webp = _scans.encode(_scans.strip(["Xylophone quartet"]), "WEBP", lossless=True)
    root = tree({"fax.tiff": data, "a.gif": gif, "b.webp": webp})
    run_json("scan", "--ocr", str(root))
    assert [(h["page"], h["line"]) for h in _hits("tango")] == [(3, 1)]
    assert [(h["page"], h["line"]) for h in _hits("bravo")] == [(2, 1)]
    assert [h["rel_path"] for h in _hits("gazebo")] == ["a.gif"]
    assert [h["rel_path"] for h in _hits("xylophone")] == ["b.webp"]


@pytest.mark.slow
def test_huge_images_are_bounded(
    tesseract: ocr.Engine, ocr_english: None, tree: Callable[..., Path]
) -> None:
    from PIL import Image

    huge = Image.new("1", (20_000, 20_000), 1)  # 400 Mpx, a small PNG
    big = Image.new("L", (9_000, 6_000), 255)  # 54 Mpx: scaled down, then read
    big.paste(_scans.strip(["Oversized blueprint legend"], px=160).convert("L"))
    root = tree({
        "huge.png": _scans.encode(huge, "PNG"),
        "big.jpg": _scans.encode(big, "JPEG", quality=85),
    })  # fmt: skip
    result = run_json("scan", "--ocr", str(root))
    assert result["skipped"] == {"too-large": 1}
    assert [h["rel_path"] for h in _hits("blueprint")] == ["big.jpg"]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_ocr_scan_leaves_no_tesseract_behind(
    tesseract: ocr.Engine, tmp_path: Path
) -> None:
    """kill -9 of the scan alone while its workers run tesseract (issue #17's promise)."""
    import signal
    import subprocess
    import time
    import uuid

    from test_reliability import child_env, scan_cmd
    from test_signals import MARK, gone_within, marked

    root = tmp_path / "scans"
    root.mkdir()
    # A dense A4 page: seconds of OCR. Without pool.CHILDREN a tesseract that
    # was recognising outlived its killed scan by 6 s+ in a shell; here it
    # may also end at once (killed while still reading its image).
    words = "ledger entry for the harbour account".split()
    lines = [" ".join(words[(i + j) % 6] for j in range(14)) for i in range(50)]
    page = _scans.encode(_scans.page(lines, pt=10), "PNG")
    for i in range(60):  # over the pool's threshold: OCR runs in the workers
        (root / f"fax{i:03d}.png").write_bytes(page)
    tag = uuid.uuid4().hex
    env = child_env(DOCINDEX_WORKERS="2", **{MARK: tag})
    cmd = [*scan_cmd(root, tmp_path / "idx" / "index.db"), "--ocr"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not [p for p in marked(tag) if _comm(p) == "tesseract"]:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.0)  # past reading its image: recognising
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = gone_within(tag, 3.0)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, [(p, _comm(p)) for p in left]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
