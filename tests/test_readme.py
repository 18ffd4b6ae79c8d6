"""The README's quick start is run as written and its output checked (issue #38).

The commands of the ``console`` block under "Quick start" run on a copy of
``example/``; their output must match the block once timings, sizes, the folder
and column padding are set aside.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from conftest import run

ROOT = Path(__file__).resolve().parents[1]
SHOWN_HOME = "/home/me/docindex/example"


def quick_start() -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for each ``$`` line of the quick start."""
    text = (ROOT / "README.md").read_text("utf-8")
    block = text.split("## Quick start", 1)[1].split("```console\n", 1)[1]
    block = block.split("```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def normalise(text: str, root: Path) -> list[str]:
    text = text.replace(str(root), SHOWN_HOME)
    # piped, hits print absolute paths; the README shows a terminal's
    text = re.sub(
        rf"^(\d\.\d{{3}} (?:\d+% )?){re.escape(SHOWN_HOME)}/", r"\1", text, flags=re.M
    )
    text = re.sub(r"in \d+(\.\d+)? (s|ms)\b", r"in N \2", text)
    text = re.sub(r"(size\s+)[\d.]+ [KMG]?B", r"\1N", text)
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def copy_example(source: Path, dest: Path) -> None:
    """A copy of ``source`` as a clone has it: the index "Try it" leaves is not copied."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(".docindex"))


def check_quick_start(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run the quick start on a copy of ``source`` (an ``example/``) and compare."""
    monkeypatch.delenv("DOCINDEX_DB", raising=False)
    example = tmp_path / "example"
    copy_example(source, example)
    monkeypatch.chdir(tmp_path)
    steps = quick_start()
    assert steps[0][0] == "cd example" and len(steps) >= 3
    for command, shown in steps:
        words = shlex.split(command)
        if words[0] == "cd":
            monkeypatch.chdir(tmp_path / words[1])
            continue
        assert words[0] == "docindex", command
        result = run(*words[1:])
        got = normalise(result.output, example)
        want = normalise("\n".join(shown), Path(SHOWN_HOME))
        assert got == want, (command, got, want)


def test_the_quick_start_prints_what_the_readme_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_quick_start(ROOT / "example", tmp_path, monkeypatch)
