"""Issue #33 item 0: no code from the scanned or the current folder, ever.

A folder being scanned (a cloned repository, a download) may hold a
``docindex/`` package or modules named like docindex's lazily imported
dependencies. Scanning it from inside, with enough files for the process
pool, must import none of them: each planted module appends to a marker file.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import _formats
import pytest

from docindex.ingest.pool import POOL_THRESHOLD

# Every module docindex imports lazily while preparing a file, its own package,
# and stdlib modules the forkserver imports after its `python -c` start.
PLANTED = (
    "docindex", "pypdf", "docx", "pptx", "openpyxl", "lxml", "numpy", "Stemmer",
    "striprtf", "zlib_ng", "yaml", "pathspec", "odf", "multiprocessing",
    "selectors",
)  # fmt: skip


def _plant(folder: Path, marker: Path) -> None:
    code = f"open({str(marker)!r}, 'a').write(__name__ + ' from ' + __file__ + '\\n')\n"
    for name in PLANTED:
        package = folder / name
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text(code)


def _docx() -> bytes:
    import docx

    doc = docx.Document()
    doc.add_paragraph("isolationword in a Word file")
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def _xlsx() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = "isolationword in a sheet"  # type: ignore[index]
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def test_scan_from_inside_a_hostile_folder_runs_none_of_its_code(
    tmp_path: Path,
) -> None:
    script = Path(sys.executable).parent / "docindex"
    if not script.is_file():
        pytest.skip(f"no installed `docindex` entry point beside {sys.executable}")
    marker = tmp_path / "MARKER"
    root = tmp_path / "clone"
    root.mkdir()
    _plant(root, marker)  # the current folder is the scanned root
    sub = root / "notes"
    sub.mkdir()
    _plant(sub, marker)  # and a folder below it
    n = POOL_THRESHOLD + 20
    for i in range(n):
        (sub / f"note{i}.md").write_text(f"# Note {i}\n\nisolationword number {i}\n")
    (root / "report.docx").write_bytes(_docx())
    (root / "sheet.xlsx").write_bytes(_xlsx())
    (root / "paper.pdf").write_bytes(_formats.pdf(2))
    (root / "memo.rtf").write_bytes(_formats.RTF)
    (root / "config.yaml").write_text("title: isolationword\n")
    db = tmp_path / "index.db"
    done = subprocess.run(
        [str(script), "scan", ".", "--db", str(db), "--json"],
        cwd=root, capture_output=True, text=True, timeout=300,
        env={**os.environ, "DOCINDEX_WORKERS": "2"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), marker.read_text()
    result = json.loads(done.stdout)
    assert result["indexed"] >= n + 3, result
    found = subprocess.run(
        [str(script), "query", "isolationword", "--db", str(db), "--json", "-n", "200"],
        cwd=root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert not marker.exists(), marker.read_text()
