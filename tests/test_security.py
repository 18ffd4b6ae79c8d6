"""Issue #33: nothing runs or reads what it may not.

Each test replays one attack from the issue against the real CLI and real
SQLite files, and fails on the code the issue was filed against.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from docindex.ingest.pool import POOL_THRESHOLD
from tests.conftest import write_tree

# Every module a worker or the forkserver imports lazily, plus the package
# itself and the stdlib module the forkserver's command line imports first.
PLANTED = [
    "docindex",
    "multiprocessing",
    "pypdf",
    "docx",
    "lxml",
    "numpy",
    "yaml",
    "zlib_ng",
    "onnxruntime",
    "watchdog",
    "odf",
    "ebooklib",
    "charset_normalizer",
    "markdown_it",
    "bs4",
    "openpyxl",
    "pptx",
    "pytesseract",
    "tokenizers",
]


def _plant(folder: Path, marker: Path) -> None:
    """A package per name in ``PLANTED`` that records its import in ``marker``."""
    for name in PLANTED:
        code = (
            "import os\n"
            f"with open({str(marker)!r}, 'a') as f:\n"
            f"    f.write({name!r} + ' from ' + __file__ + chr(10))\n"
        )
        write_tree(folder, {f"{name}/__init__.py": code})


def _console_script() -> Path:
    script = Path(sys.executable).parent / "docindex"
    if not script.exists():
        pytest.skip(f"the docindex console script is not installed beside {sys.executable}")
    return script


@pytest.mark.parametrize("cwd_is_root", [True, False])
def test_scan_runs_no_code_from_the_current_or_scanned_folder(
    tmp_path: Path, cwd_is_root: bool
) -> None:
    """Item 0: workers and the forkserver import nothing from cwd or a root."""
    marker = tmp_path / "marker.txt"
    root = tmp_path / "root"
    files = {f"doc{i:03}.md": f"# Title {i}\n\nsome words {i}\n" for i in range(2 * POOL_THRESHOLD)}
    write_tree(root, files)
    _plant(root, marker)
    cwd = root if cwd_is_root else tmp_path / "elsewhere"
    cwd.mkdir(exist_ok=True)
    _plant(cwd, marker)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    env["DOCINDEX_WORKERS"] = "2"
    env["PYTHONPATH"] = ""  # an empty entry: the current folder, for a naive child
    result = subprocess.run(
        [str(_console_script()), "scan", "--db", str(tmp_path / "db" / "index.db"),
         "--root", str(root)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), marker.read_text()
