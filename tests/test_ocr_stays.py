"""OCR that stays (#45): remembered by the index, a private and bounded cache,
messages that state the real limit, and a bound on a whole scan's OCR time.

On the real tesseract, like tests/test_ocr.py (skipped without it, except
under CI=true, where that is a failure).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import _scans  # noqa: E402
from conftest import run_json  # noqa: E402

from docindex.errors import ExtractionError, without_addresses  # noqa: E402
from docindex.ingest.extract import ocr  # noqa: E402

pytest.importorskip("PIL")


def _shots() -> dict[str, str | bytes]:
    one = _scans.strip(["Settings", "Enable the kaleidoscope renderer"])
    two = _scans.strip(["Billing", "The quarterly zephyrine invoice"])
    return {"one.png": _scans.encode(one, "PNG"), "two.png": _scans.encode(two, "PNG"),
            "notes.md": "# Notes\n\nplain text\n"}  # fmt: skip


def _indexed() -> set[str]:
    return {d["rel_path"] for d in run_json("list")["documents"]}


def _cache() -> Path:
    return Path(os.environ["XDG_CACHE_HOME"]) / "docindex" / "ocr"


def test_a_plain_scan_after_scan_ocr_keeps_the_ocr_files(
    tesseract: ocr.Engine, ocr_english: None, tree: Callable[..., Path]
) -> None:
    root = tree(_shots())
    run_json("scan", "--ocr", str(root))
    assert _indexed() == {"one.png", "two.png", "notes.md"}
    again = run_json("scan")  # the choice is remembered, like the other settings
    assert again["removed"] == 0 and _indexed() == {"one.png", "two.png", "notes.md"}
    (root / "three.png").write_bytes(
        _scans.encode(_scans.strip(["Nebula", "A new marmalade page"]), "PNG")
    )
    assert run_json("scan")["indexed"] == 1
    assert "three.png" in _indexed()
    shown = run_json("config")
    # remembered for this user on this machine (issue #44: the index's own
    # row may narrow what a scan reads, never widen it)
    assert shown["settings"]["ocr"] == {
        "value": True,
        "source": "this machine (a flag given before)",
    }
    off = run_json("scan", "--no-ocr")  # turned off explicitly, and remembered
    assert off["removed"] == 3 and _indexed() == {"notes.md"}
    assert run_json("scan")["indexed"] == 0 and _indexed() == {"notes.md"}


def _cli(*args: str, cache: Path, **env: str) -> dict[str, object]:
    """``docindex ARGS --json`` in its own process: the scan's workers then see
    this test's cache folder (a worker keeps the environment it started with)."""
    import json
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "docindex", *args, "--json"], capture_output=True,
        text=True, timeout=300, check=False,
        env={**os.environ, "XDG_CACHE_HOME": str(cache), "DOCINDEX_WATCHER": "off",
             **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout)
    return out


def test_the_ocr_cache_is_private_bounded_and_prunable(
    tesseract: ocr.Engine, ocr_english: None, tree: Callable[..., Path], tmp_path: Path
) -> None:
    base = tmp_path / "cache"
    cache = base / "docindex" / "ocr"
    cache.mkdir(parents=True)  # as a scan before #45 left it: 0755
    os.chmod(base / "docindex", 0o755)
    os.chmod(cache, 0o755)
    root = tree(_shots())
    _cli("scan", "--ocr", str(root), cache=base)
    entries = sorted(cache.glob("*/*.json"))
    assert len(entries) == 2
    for folder in (cache.parent, cache, *{e.parent for e in entries}):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    # the cap: after a scan, least recently used entries go first
    os.utime(entries[0], (1, 1))
    smaller = str(entries[1].stat().st_size)
    (root / "new.md").write_text("# New\n\nchanged tree\n")
    _cli("scan", cache=base, DOCINDEX_OCR_CACHE_MAX_BYTES=smaller)
    assert sorted(cache.glob("*/*.json")) == [entries[1]]
    done = _cli("vacuum", "--ocr-cache", cache=base)
    assert done["ocr_cache_removed"] == 1 and not list(cache.glob("*/*.json"))


def test_messages_carry_no_memory_address(tree: Callable[..., Path]) -> None:
    pytest.importorskip("pypdfium2")
    assert without_addresses("cannot identify image file <_io.BytesIO object at "
                             "0x7f3a2b1c0d90>") == "cannot identify image file"  # fmt: skip
    err = ExtractionError("corrupt", "bad <PIL.Image object at 0xDEADbeef> here")
    assert "0x" not in str(err)
    root = tree({"broken.png": b"\x89PNG\r\n\x1a\n" + b"\x00" * 64})
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCINDEX_OCR", "true")
        run_json("scan", str(root))
    files = run_json("skipped")["files"]
    assert files and all(" at 0x" not in f["message"] for f in files), files


def test_a_file_stopped_at_its_limit_says_which_limit_and_when(
    tesseract: ocr.Engine, ocr_english: None, tree: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The file's 1 s budget stops its first page: not "over 60 s" (the page limit)."""
    lines = [f"line {n} of a dense page about kaleidoscopes and marmalade" for n in
             range(40)]  # fmt: skip
    root = tree({"dense.png": _scans.encode(_scans.page(lines), "PNG")})
    monkeypatch.setenv("DOCINDEX_OCR_TIMEOUT_S", "1")
    run_json("scan", "--ocr", str(root))
    (record,) = run_json("skipped")["files"]
    assert record["reason"] == "timeout", record
    message = record["message"]
    assert "60 s" not in message and "ocr_timeout_s" in message, message
    assert "stopped after 1 s" in message or "stopped after 2 s" in message, message


def test_a_scans_ocr_time_is_bounded_and_the_next_scan_goes_on(
    tesseract: ocr.Engine, ocr_english: None, tree: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    root = tree(_shots())
    monkeypatch.setenv("DOCINDEX_OCR_SCAN_TIMEOUT_S", "0.001")
    first = run_json("scan", "--ocr", str(root))
    assert first["skipped"] == {"no-text-layer": 2}
    listed = run_json("skipped", "--reason", "no-text-layer")["files"]
    assert all("ocr_scan_timeout_s" in f["message"] and "next scan" in f["message"]
               for f in listed), listed  # fmt: skip
    monkeypatch.delenv("DOCINDEX_OCR_SCAN_TIMEOUT_S")
    second = run_json("scan")  # OCR is remembered; the waiting files are read
    assert second["indexed"] == 2 and {"one.png", "two.png"} <= _indexed()
