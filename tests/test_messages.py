"""Messages that say the right thing (#45), each from the first-hour walk-through."""

from __future__ import annotations

import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run, run_json, write_tree

from docindex.cli.main import cli


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_scanning_a_missing_folder_says_it_does_not_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCINDEX_DB")  # as a new user: no index anywhere
    monkeypatch.chdir(tmp_path)
    code, out = _invoke("scan", str(tmp_path / "no" / "such" / "folder"))
    assert code == 2 and "does not exist" in out, out
    (tmp_path / "a.md").write_text("# A\n")
    code, out = _invoke("scan", str(tmp_path / "a.md"))
    assert code == 2 and "is not a folder" in out, out


def test_a_query_starting_with_a_dash_is_told_to_use_double_dash(
    tmp_path: Path,
) -> None:
    root = write_tree(tmp_path / "docs", {"a.md": "# A\n\nWe yield values.\n"})
    run("scan", str(root))
    code, out = _invoke("query", "-yield")
    assert code == 2 and "No such option" in out
    shown = out.split("`")[1]
    assert shown == "docindex query -- -yield"
    again = run(*shlex.split(shown)[1:])  # the advice, run as printed: exit 0
    assert "-word" in again.output  # the query language explains itself
    both = run("query", "--", "values -yield")
    assert "no hits" in both.output  # yield is left out


def test_did_you_mean_names_a_word_of_the_index_not_a_stem(tmp_path: Path) -> None:
    pages = {f"p{i}.md": f"# Page {i}\n\nThe middleware runs before each request; "
             f"a middleware wraps the app.\n" for i in range(4)}  # fmt: skip
    root = write_tree(tmp_path / "docs", pages)
    run("scan", str(root))
    result = run_json("query", "middlware")
    assert result["corrected"] == "middleware", result["corrected"]
    assert result["did_you_mean"] == {"middlware": "middleware"}
    text = run("query", "middlware").output
    assert "showing hits for 'middleware'" in text
    weak = run_json("query", "request middlware ordering")
    assert weak["did_you_mean"] == {"middlware": "middleware"}


def test_a_cjk_question_that_is_answered_is_no_weak_match(tmp_path: Path) -> None:
    """如何设置跨域: the page on 跨域 answers it; "置跨" joins two words and
    "如何" asks, neither may count against the hit."""
    pages = {"cors.md": "# CORS（跨域资源共享）\n\n跨域请求需要在后端配置允许的源。"
             "使用 CORSMiddleware 处理跨域。\n"}  # fmt: skip
    pages |= {f"other{i}.md": f"# 其他 {i}\n\n在这里设置参数，设置完成后重启。\n"
              for i in range(30)}  # fmt: skip
    root = write_tree(tmp_path / "docs", pages)
    run("scan", str(root))
    answered = run_json("query", "如何设置跨域")
    assert answered["hits"][0]["rel_path"] == "cors.md"
    assert answered["hint"] is None, answered["hint"]
    assert answered["hits"][0]["coverage"] >= 0.5
    lacking = run_json("query", "如何安装鸿蒙")  # the index has nothing on it
    assert lacking["hint"] is not None


def test_busy_says_what_to_do(tmp_path: Path) -> None:
    """A writer that does not wait (vacuum; a scan waits, #44) says what to do."""
    root = write_tree(tmp_path / "docs", {"a.md": "# A\n\ntext\n"})
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db))
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        done = subprocess.run(
            [sys.executable, "-m", "docindex", "vacuum", "--db", str(db)],
            capture_output=True, text=True, timeout=60,
            env={**_env(), "DOCINDEX_BUSY_TIMEOUT_S": "0.2"},
        )  # fmt: skip
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "index is busy" in line and "run the command again" in line
    assert f"`DOCINDEX_BUSY_TIMEOUT_S=120 docindex vacuum --db {db}`" in line
    again = line.split("`")[1].split(" ", 1)  # the advice, run as printed
    rerun = subprocess.run(
        [sys.executable, "-m", "docindex", *shlex.split(again[1])[1:]],
        capture_output=True, text=True, timeout=120,
        env={**_env(), again[0].split("=")[0]: again[0].split("=")[1]},
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "DOCINDEX_WATCHER": "off"}


@pytest.mark.parametrize(
    "args",
    [
        ["show", "a\x1b[2Jb\x07.md"],
        ["x\x1b[31mred"],
        ["query", "--top", "x\x1b]0;title\x07"],
        ["section", "guide.md", "\x1b[31mHeading"],
    ],
)
def test_errors_that_echo_user_input_escape_terminal_controls(
    tmp_path: Path, args: list[str]
) -> None:
    root = write_tree(tmp_path / "docs", {"guide.md": "# Guide\n\ntext\n"})
    run("scan", str(root))
    code, out = _invoke(*args)
    assert code != 0
    assert "\x1b" not in out and "\x07" not in out, repr(out)
    assert "\\x1b" in out, repr(out)
