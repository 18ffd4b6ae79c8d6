"""Issue #33: nothing runs or reads what it may not.

Each test replays one attack from the issue against the real CLI and real
SQLite files, and fails on the code the issue was filed against.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
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
        pytest.skip(
            f"the docindex console script is not installed beside {sys.executable}"
        )
    return script


@pytest.mark.parametrize("cwd_is_root", [True, False])
def test_scan_runs_no_code_from_the_current_or_scanned_folder(
    tmp_path: Path, cwd_is_root: bool
) -> None:
    """Item 0: workers and the forkserver import nothing from cwd or a root."""
    marker = tmp_path / "marker.txt"
    root = tmp_path / "root"
    files = {
        f"doc{i:03}.md": f"# Title {i}\n\nsome words {i}\n"
        for i in range(2 * POOL_THRESHOLD)
    }
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


def test_a_new_index_is_private(tmp_path: Path) -> None:
    """Item 2: ``.docindex/`` 0700, index files 0600, whatever the umask."""
    root = write_tree(tmp_path / "notes", {"secret.md": "# Diary\n\nTOPSECRET\n"})
    db = root / ".docindex" / "index.db"
    old = os.umask(0o022)
    try:
        _scan(root, db)
    finally:
        os.umask(old)
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    for path in db.parent.iterdir():
        if path.name.startswith("index.db"):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def _scan(root: Path, db: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(_console_script()), "scan", "--db", str(db), "--root", str(root)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


def test_an_existing_wide_index_is_tightened_on_the_next_write(tmp_path: Path) -> None:
    """Item 2: an index left 0644 by an older version becomes 0600, saying so once."""
    root = write_tree(tmp_path / "notes", {"secret.md": "# Diary\n\nTOPSECRET\n"})
    db = root / ".docindex" / "index.db"
    _scan(root, db)
    os.chmod(db.parent, 0o755)
    os.chmod(db, 0o644)
    result = _scan(root, db)
    assert "private" in result.stderr
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    assert "private" not in _scan(root, db).stderr


@pytest.fixture
def other_user() -> Iterator[str]:
    """A second real local user (created when run as root, as CI is)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second local user (CI runs as root)")
    name = f"dxsec{os.getpid() % 100000}"
    made = (
        subprocess.run(["useradd", "-M", "-N", name], capture_output=True).returncode
        == 0
    )
    yield name if made else "nobody"
    if made:
        subprocess.run(["userdel", name], capture_output=True)


def test_another_user_cannot_read_a_private_files_text_from_the_index(
    other_user: str,
) -> None:
    """Item 2, the attack: ``chmod 600 secret.md``, then another user reads the index."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="dxsec-"))
    try:
        os.chmod(base, 0o755)
        root = write_tree(base / "notes", {"secret.md": "# Diary\n\nTOPSECRET\n"})
        os.chmod(root, 0o755)
        os.chmod(root / "secret.md", 0o600)
        db = root / ".docindex" / "index.db"
        old = os.umask(0o022)
        try:
            _scan(root, db)
        finally:
            os.umask(old)
        # Any byte of the index or its log the other user can read is a leak;
        # the text itself is there in plain UTF-8 (FTS5 content, bodies).
        read = subprocess.run(
            ["runuser", "-u", other_user, "--", "/bin/sh", "-c",
             'for p in "$1"*; do grep -il topsecret "$p" 2>/dev/null; done; true',
             "sh", str(db)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert read.returncode == 0, read.stderr
        assert read.stdout == "", read.stdout
    finally:
        shutil.rmtree(base, ignore_errors=True)
