"""Issue #17: input limits, MCP argument validation and the MCP server under load.

Every hostile size must cost its own bytes and get a clear error naming the
argument: exit 2 on the CLI, a tool error over MCP, never "internal error".
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED, run

from docindex.config import Config
from docindex.embed.choice import embedder_for
from docindex.models.limits import MAX_QUERY_CHARS

BENCH = Path(__file__).resolve().parents[1] / "bench"
GUIDE = "# Install\n\nRun pip install docindex.\n\n## On Linux\n\nUse pip3.\n"


def _bench(name: str) -> Any:
    """A ``bench/`` script as a module, so tests share its helpers."""
    if str(BENCH) not in sys.path:  # the scripts import their ``_common``
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Runs the CLI and reports the child's own peak RSS (VmHWM) on stderr at exit.
_HWM: str = _bench("hostile_table")._WRAPPER


@pytest.fixture
def index(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "guide.md").write_text(GUIDE)
    (root / "sub" / "notes.txt").write_text("notes about pip install\n")
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db))
    return root, db


def test_cli_refuses_inputs_past_the_limits(index: tuple[Path, Path]) -> None:
    root, db = index
    cases = [
        (["query", "q" * (MAX_QUERY_CHARS + 1)], "query is 4,097 characters long"),
        (["query", "pip", "--path", "*" * 60_000], "path is 60,000 characters long"),
        (["query", "pip", "--min-score", "nan"], "not nan"),
        (["query", "pip", "--top", "1001"], "--top"),
        (["show", "~1" * 64_000], "chunk id is 128,000 characters long"),
        (["show", "guide.md:" + "9" * 5000], "path is 5,009 characters long"),
        (["outline", "a/" * 3000], "path is 6,000 characters long"),
        (["list", "--path", "*" * 2000], "path is 2,000 characters long"),
        (["section", "guide.md", "h" * 5000], "section is 5,000 characters long"),
    ]
    for args, message in cases:
        result = run(*args, "--db", str(db), ok=False)
        assert result.exit_code == 2, (args[:2], result.output[-200:])
        assert message in result.stderr, (args[:2], result.stderr[-200:])
        assert "Traceback" not in result.output
    lines = f"pip\n{'q' * 5000}\nusage\n"
    batch = run("query", "--queries", "-", "--db", str(db), input=lines, ok=False)
    assert batch.exit_code == 2 and "line 2: query is 5,000 characters" in batch.stderr
    assert len(batch.stdout.splitlines()) == 1  # the first query's answer came out
    # Just under the limits is fine; FILE:LINE still resolves.
    run("query", "q" * MAX_QUERY_CHARS, "--db", str(db))
    shown = json.loads(run("show", "guide.md:7", "--db", str(db), "--json").stdout)
    assert shown["chunk"]["chunk_id"] == "guide.md#install/on-linux"
    run("show", "guide.md#install~2", "--db", str(db), ok=False)


def _child(args: list[str], stdin: bytes) -> tuple[int, str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    proc = subprocess.run([sys.executable, "-c", _HWM, *args], input=stdin,
                          capture_output=True, env=env, timeout=120)  # fmt: skip
    err = proc.stderr.decode()
    hwm = [ln.split()[1] for ln in err.splitlines() if ln.startswith("VMHWM ")]
    return proc.returncode, err, int(hwm[-1]) / 1024


def test_four_million_character_query_is_refused_in_bounded_memory(
    index: tuple[Path, Path],
) -> None:
    _, db = index
    code, err, small = _child(["query", "--db", str(db)], b"pip install\n")
    assert code == 0
    code, err, big = _child(["query", "--db", str(db)], b"q" * 4_000_000)
    assert code == 2 and "query is 4,000,000 characters long" in err
    # The query costs its own bytes (a few copies of 4 MB), not ~250 per character.
    assert big - small < 60, (small, big)


def test_embedders_are_per_thread() -> None:
    """Threads embedding at once (MCP calls) must not share work buffers."""
    corpus = SHARED / "corpus" / "docs" / "en"
    texts = [p.read_text("utf-8")[:8000] for p in sorted(corpus.rglob("*.md"))[:48]]
    if len(texts) < 48:
        pytest.skip(f"needs the shared corpus at {corpus} (set DOCINDEX_SHARED)")
    cfg = Config()
    want = embedder_for(cfg).embed(texts).tolist()
    failures: list[str] = []

    def work() -> None:
        try:
            for _ in range(2):
                if embedder_for(cfg).embed(texts).tolist() != want:
                    failures.append("different vectors")
        except Exception as exc:  # the shared embedder raised ValueError here
            failures.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


class _Server:
    """A real ``docindex mcp`` subprocess spoken to in raw JSON-RPC lines."""

    def __init__(self, db: Path, root: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "docindex", "mcp", "--db", str(db), "--root",
             str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}})  # fmt: skip
        assert "result" in self.receive()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.next_id = 1

    def send(self, message: dict[str, Any] | str) -> None:
        assert self.proc.stdin is not None
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read().decode() if self.proc.stderr else ""
        return dict(json.loads(line))

    def call(self, name: str, args: Any) -> tuple[bool, dict[str, Any]]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                   "params": {"name": name, "arguments": args}})  # fmt: skip
        result = self.receive()["result"]
        return bool(result.get("isError")), json.loads(result["content"][0]["text"])

    def peak_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=30)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code


HOSTILE = [
    ("doc_reindex", {"full": "false"}, "full must be of type boolean"),
    ("doc_scan", {"force": "no"}, "force must be of type boolean"),
    ("doc_query", {"query": "pip", "top_k": 2.5}, "top_k must be of type integer"),
    ("doc_query", {"query": "pip", "top_k": 0}, "top_k must be in 1..100"),
    ("doc_query", {"query": "pip", "topK": 2}, "unknown argument 'topK'"),
    ("doc_query", {"query": "pip", "snippetChars": 50}, "unknown argument"),
    ("doc_query", {"query": ""}, "query must not be empty"),
    ("doc_query", {}, "query is required"),
    ("doc_query", {"query": 5}, "query must be of type string"),
    ("doc_query", {"query": "pip", "mode": "fast"}, "mode must be one of"),
    ("doc_query", {"query": "pip", "where": {"k": 5}}, "where/k must be of type"),
    ("doc_query", {"query": "pip", "path": "*" * 60_000}, "path is 60,000 characters"),
    ("doc_query", {"query": "q" * 4_000_000}, "query is 4,000,000 characters"),
    ("get_outline", {"path": "a" * 6000}, "path is 6,000 characters long"),
    ("get_outline", {"path": "a\x00b"}, "path must not contain a NUL"),
    ("get_outline", {"path": "n" * 1000}, "does not exist"),  # ENAMETOOLONG
    ("doc_scan", {"path": "\x00"}, "path must not contain a NUL"),
    ("get_doc", {"chunk_id": "guide.md\x00#x"}, "path must not contain a NUL"),
    ("get_doc", {"chunk_id": "x" * 2_000_000}, "chunk_id is 2,000,000 characters"),
    ("list_documents", {"limit": True}, "limit must be of type integer"),
    ("list_documents", {"offset": -1}, "offset must be in 0.."),
    ("search_batch", {"queries": [{"query": "a", "top_k": 1000}]}, "queries/0/top_k"),
    ("search_batch", {"queries": [{"query": "a", "x": 1}]}, "'x' in queries/0"),
    ("search_batch", {"queries": []}, "queries: at least 1 item"),
    ("no_such_tool", {}, "unknown tool"),
]


def test_mcp_rejects_hostile_arguments_by_name(index: tuple[Path, Path]) -> None:
    root, db = index
    server = _Server(db, root)
    try:
        for name, args, message in HOSTILE:
            error, payload = server.call(name, args)
            assert error, (name, payload)
            assert message in payload["error"], (name, payload)
            assert "internal error" not in payload["error"]
        # 1e400 is not JSON's business to overflow: it is a float, not an integer.
        server.send('{"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": '
                    '{"name": "doc_query", "arguments": {"query": "pip", '
                    '"top_k": 1e400}}}')  # fmt: skip
        reply = server.receive()["result"]
        assert reply["isError"] and "top_k must be" in reply["content"][0]["text"]
        server.send("{not json")
        assert server.receive() == {"jsonrpc": "2.0", "id": None,
                                    "error": {"code": -32700, "message": "Parse error"}}  # fmt: skip
        server.send('{"hello": 1}')
        assert server.receive()["error"]["code"] == -32600
        # Nulls mean "not given"; 2.0 is an integer; the session goes on.
        error, result = server.call("doc_query", {"query": "pip", "top_k": 2.0,
                                                  "mode": None})  # fmt: skip
        assert not error and len(result["hits"]) == 2
        assert server.peak_mib() < 250  # a 4M query and a 2M id held once, briefly
    finally:
        assert server.close() == 0


def test_mcp_line_over_the_cap_is_a_parse_error_not_a_memory_hog(
    index: tuple[Path, Path],
) -> None:
    from docindex.models.limits import MAX_MCP_LINE_BYTES

    root, db = index
    server = _Server(db, root)
    try:
        # A JSON string one byte over the cap: valid JSON-RPC but for its size.
        pad = MAX_MCP_LINE_BYTES
        server.send(
            '{"jsonrpc": "2.0", "id": 7, "method": "ping", "x": "' + "a" * pad + '"}'
        )
        assert server.receive() == {"jsonrpc": "2.0", "id": None,
                                    "error": {"code": -32700, "message": "Parse error"}}  # fmt: skip
        error, result = server.call("doc_query", {"query": "pip", "top_k": 1})
        assert not error and len(result["hits"]) == 1  # the session goes on
        assert server.peak_mib() < 200  # read in pieces, never held whole
    finally:
        assert server.close() == 0


@pytest.mark.slow
def test_mcp_server_answers_1024_pipelined_calls_without_error(tmp_path: Path) -> None:
    load = _bench("mcp_load")
    if not load.CORPUS.is_dir():
        pytest.skip(f"needs the shared corpus at {load.CORPUS} (set DOCINDEX_SHARED)")
    root, db = tmp_path / "docs", tmp_path / "i.db"
    root.mkdir()
    load.build(root, db, 120)
    got = load.run_load(db, root, clients=8, per_client=128)
    assert got["calls"] == got["answered"] == 1024
    assert got["errors"] == [] and got["exit"] == 0
    assert got["peak_rss_mib"] < 300, got


@pytest.mark.slow
def test_mcp_cancelled_or_abandoned_scan_stops(tmp_path: Path) -> None:
    """A full-corpus doc_scan (5 s or more) cancelled after 1 s: nothing committed."""
    import shutil
    import time

    corpus = SHARED / "corpus" / "docs"
    if not corpus.is_dir():
        pytest.skip(f"needs the shared corpus at {corpus} (set DOCINDEX_SHARED)")
    root, db = tmp_path / "docs", tmp_path / "i.db"
    shutil.copytree(corpus, root)
    server = _Server(db, root)
    try:
        server.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                     "params": {"name": "doc_scan", "arguments": {}}})  # fmt: skip
        time.sleep(1.0)
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 50}})  # fmt: skip
        error, stats = server.call("doc_stats", {})  # answered, not queued behind it
        assert not error and stats["documents"] == 0
        # The cancelled scan let go of the write lock: a small scan goes through
        # at once instead of waiting for the big one (or failing as busy).
        one = sorted((root / "zh").rglob("*.md"))[0].relative_to(root).as_posix()
        before = time.monotonic()
        error, small = server.call("doc_scan", {"path": one})
        assert not error and small["indexed"] == 1, small
        assert time.monotonic() - before < 3
        server.send({"jsonrpc": "2.0", "id": 60, "method": "tools/call",
                     "params": {"name": "doc_scan", "arguments": {}}})  # fmt: skip
        time.sleep(1.0)
    finally:
        started = time.monotonic()
        assert server.close() == 0  # the client goes away mid-scan
    assert time.monotonic() - started < 20


def test_mcp_answers_the_id_of_a_request_with_a_malformed_field(
    index: tuple[Path, Path],
) -> None:
    """Issue #33: a lone surrogate or 100k-deep nesting costs the caller an error
    reply with its own id (was ``id: null``: the call waited forever)."""
    root, db = index
    server = _Server(db, root)
    try:
        server.send('{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": '
                    '{"name": "doc_query", "arguments": {"query": "\\ud800"}}}')  # fmt: skip
        reply = server.receive()
        assert reply["id"] == 41 and reply["error"]["code"] == -32700, reply
        deep = "[" * 100_000 + "]" * 100_000
        server.send('{"jsonrpc": "2.0", "id": "call-42", "method": "tools/call", '
                    '"params": {"name": "doc_query", "arguments": {"query": "pip", '
                    f'"where": {deep}}}}}}}')  # fmt: skip
        reply = server.receive()
        assert reply["id"] == "call-42" and reply["error"]["code"] == -32700, reply
        server.send('{"jsonrpc": "2.0", "id": 43, "method": 5}')  # not a request
        reply = server.receive()
        assert reply["id"] == 43 and reply["error"]["code"] == -32600, reply
        error, result = server.call("doc_query", {"query": "pip", "top_k": 1})
        assert not error and len(result["hits"]) == 1  # the session goes on
    finally:
        assert server.close() == 0


# The budget's signal can land in a gc callback (hypothesis installs one), where
# Python reports its exception as unraisable and goes on: expected, and handled.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_markdown_indexing_has_a_time_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #33: extraction and segmentation of Markdown ran unbounded."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "many.md").write_text(
        "".join(f"## heading {i}\nword{i} text\n" for i in range(60_000))
    )
    (root / "small.md").write_text("# Small\nsmallword here\n")
    monkeypatch.setenv("DOCINDEX_EXTRACT_TIMEOUT_S", "0.05")
    db = str(tmp_path / "i.db")
    run("scan", str(root), "--db", db, "-q")
    skipped = json.loads(run("skipped", "--db", db, "--json").stdout)["files"]
    assert [(f["path"].rsplit("/", 1)[-1], f["reason"]) for f in skipped] == [
        ("many.md", "timeout")
    ]
    # a CPU budget (issue #46), 0.05 s per MiB of the file
    assert "took over 0.0" in skipped[0]["message"]
    assert "CPU-s" in skipped[0]["message"]
    hits = json.loads(run("query", "smallword", "--db", db, "--json").stdout)["hits"]
    assert [h["path"].rsplit("/", 1)[-1] for h in hits] == ["small.md"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_cpu_budget_holds_when_its_signal_lands_in_a_gc_callback() -> None:
    """A file's CPU budget raised once, from SIGPROF: when the signal landed in
    a gc callback (hypothesis keeps one) Python swallowed the exception and the
    file was indexed past its budget (seen in CI). The deadline fires again
    until its block ends."""
    import gc
    import time

    from docindex.ingest.pool import ExtractTimeout, deadline

    def slow(phase: str, info: dict[str, int]) -> None:
        if phase == "start":  # most of the CPU time goes here
            started = time.process_time()
            while time.process_time() - started < 0.02:
                pass

    gc.callbacks.append(slow)
    try:
        with pytest.raises(ExtractTimeout), deadline(0.05):
            started = time.process_time()
            while time.process_time() - started < 1.0:
                [[] for _ in range(1000)]  # the collector, and its callback, run
    finally:
        gc.callbacks.remove(slow)
