"""Issue #33 item 5: names printed to a terminal are escaped everywhere.

A file name (or a heading, a title) can hold terminal escapes: an OSC 52
clipboard write, a screen clear. Every command's human output shows them as
visible escapes (``\\x1b``), coloured or piped; ``--json`` keeps them exact.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

OSC52 = "\x1b]52;c;cHduZWQ=\x07"
CLEAR = "\x1b[2J"
EVIL = f"evil{OSC52}{CLEAR}.md"
BROKEN = f"bad{OSC52}.pdf"


def _run(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "docindex", *args, "--db", str(db)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, (args, done.stderr)
    return done


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("escapes")
    root = tmp / "docs"
    root.mkdir()
    (root / EVIL).write_text(
        f"# Title {CLEAR}here\n\nescapeword intro text\n\n"
        f"## Part {OSC52}two\n\nescapeword more text in part two\n"
    )
    (root / "plain.md").write_text("# Plain\n\nescapeword a plain neighbour\n")
    (root / BROKEN).write_bytes(b"%PDF-1.4\nnot really a pdf\n")
    db = tmp / "index.db"
    subprocess.run(
        [sys.executable, "-m", "docindex", "scan", str(root), "--db", str(db), "-q"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return root, db


COMMANDS = {
    "list": ["list"],
    "outline": ["outline", EVIL],
    "section": ["section", EVIL, "Title"],
    "show": ["show", f"{EVIL}:3"],
    "query": ["query", "escapeword"],
    "query-files": ["query", "escapeword", "--files"],
    "skipped": ["skipped"],
    "related": ["related", EVIL],
}


@pytest.mark.parametrize("color", ["never", "always"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_raw_escape_reaches_the_terminal(
    hostile: tuple[Path, Path], name: str, color: str
) -> None:
    root, db = hostile
    args = COMMANDS[name]
    if name not in ("list", "skipped", "query", "query-files"):
        args = [args[0], str(root / args[1]), *args[2:]]
    done = _run(db, *args, "--color", color)
    out = done.stdout + done.stderr
    for raw in ("\x1b]", "\x07", "\x1b[2J"):
        assert raw not in out, (name, out)
    if name != "related":  # related lists the neighbours, not the file itself
        assert "\\x1b" in out, (name, out)  # shown, escaped


def test_json_keeps_names_exact(hostile: tuple[Path, Path]) -> None:
    _, db = hostile
    listed = json.loads(_run(db, "list", "--json").stdout)
    names = {Path(d["path"]).name for d in listed["documents"]}
    assert EVIL in names
    skipped = json.loads(_run(db, "skipped", "--json").stdout)
    assert any(Path(f["path"]).name == BROKEN for f in skipped["files"]), skipped
