"""Many users of one PostgreSQL index at once (issue #34, item 3).

Real processes against a real server (conftest ``pg_url``): MCP servers
answering queries over stdio while another process scans, and a ``watch``
on one root while another process scans a different root of the same index;
``roots remove`` on one host removes the root for every host.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import write_tree
from test_postgres import DOCS, _consistent, _hits, invoke

pytestmark = pytest.mark.usefixtures("pg_server")

WORDS = ["rate limit", "redis", "auth plugins", "限流", "containers scale",
         "leaky bucket", "credentials", "caching retries"]  # fmt: skip


def _big_root(base: Path, n: int) -> Path:
    return write_tree(base, {
        f"bulk/b{i:03d}.md": f"# Bulk {i}\n\nbulkword {i} about gateways and "
        f"{WORDS[i % len(WORDS)]}.\n\n## Part\n\n" + "more text here. " * 40
        for i in range(n)
    })  # fmt: skip


def _scan_new_root(root: Path, url: str) -> subprocess.Popen[str]:
    """``docindex scan --root`` in another process (a root new to the index)."""
    return subprocess.Popen(
        [sys.executable, "-m", "docindex", "scan", "--root", str(root), "--db", url,
         "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _mcp_lines(server: int, queries: int) -> str:
    pytest.importorskip("mcp")
    import mcp.types as types

    init = {"protocolVersion": types.LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": f"agent{server}", "version": "1"}}  # fmt: skip
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    lines += [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call",
         "params": {"name": "doc_query",
                    "arguments": {"query": WORDS[(i + server) % len(WORDS)]}}}
        for i in range(1, queries + 1)
    ]  # fmt: skip
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def _mcp_servers_during_scan(tmp_path: Path, url: str, servers: int, each: int,
                             bulk: int) -> None:  # fmt: skip
    docs = write_tree(tmp_path / "docs", DOCS)
    assert invoke(["scan", str(docs), "--db", url, "-q"]).exit_code == 0
    scan = _scan_new_root(_big_root(tmp_path / "more", bulk), url)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "docindex", "mcp", "--db", url, "--root", str(docs)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )  # fmt: skip
        for _ in range(servers)
    ]
    with ThreadPoolExecutor(servers) as pool:
        outputs = list(pool.map(
            lambda ip: ip[1].communicate(_mcp_lines(ip[0], each), timeout=600),
            enumerate(procs),
        ))  # fmt: skip
    _, scan_err = scan.communicate(timeout=600)
    assert scan.returncode == 0, scan_err
    answered = 0
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        answers = {m["id"]: m for m in map(json.loads, out.splitlines())}
        assert set(answers) == set(range(each + 1)), err
        for i in range(1, each + 1):
            assert "error" not in answers[i], answers[i]
            assert not answers[i]["result"].get("isError"), answers[i]
            answered += 1
    assert answered == servers * each
    assert _consistent(url)[0] == len(DOCS) + bulk


def test_mcp_servers_answer_while_a_scan_runs(tmp_path: Path, pg_url: str) -> None:
    _mcp_servers_during_scan(tmp_path, pg_url, servers=2, each=10, bulk=40)


@pytest.mark.slow
def test_eight_mcp_servers_answer_1000_queries_during_a_scan(
    tmp_path: Path, pg_url: str
) -> None:
    _mcp_servers_during_scan(tmp_path, pg_url, servers=8, each=125, bulk=300)


def test_watch_on_one_root_while_another_process_scans_another(
    tmp_path: Path, pg_url: str
) -> None:
    watched = write_tree(tmp_path / "watched", DOCS)
    other = _big_root(tmp_path / "other", 150)
    assert invoke(["scan", str(watched), "--db", pg_url, "-q"]).exit_code == 0
    watch = subprocess.Popen(
        [sys.executable, "-m", "docindex", "watch", "--root", str(watched), "--db",
         pg_url, "--debounce-ms", "50"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert watch.stdout is not None
        assert "catch-up" in watch.stdout.readline()
        scan = _scan_new_root(other, pg_url)
        # Edits while the scan writes: a new file, a changed one, a removed one.
        (watched / "zebra.md").write_text("# Zebra\n\nstripes everywhere\n")
        (watched / "ops" / "deploy.md").write_text("# Deploying\n\nUse zeppelins.\n")
        (watched / "notes.txt").unlink()
        _, err = scan.communicate(timeout=300)
        assert scan.returncode == 0, err
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            _hits(pg_url, "stripes") and _hits(pg_url, "zeppelins")
            and not _hits(pg_url, "windows")
        ):  # fmt: skip
            time.sleep(0.2)
    finally:
        watch.send_signal(signal.SIGINT)
        watch.communicate(timeout=30)
    assert _hits(pg_url, "stripes")[0][0].startswith("zebra.md")
    assert _hits(pg_url, "zeppelins")[0][0].startswith("ops/deploy.md")
    assert not _hits(pg_url, "windows")  # notes.txt is gone ("rate windows")
    assert not _hits(pg_url, "horizontally")  # the old deploy.md text too
    # No lost update, no duplicate: every file of both roots once.
    assert _consistent(pg_url)[0] == len(DOCS) + 150
    assert len(_hits(pg_url, "bulkword")) == 10


def test_roots_remove_on_one_host_removes_the_root_for_every_host(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = write_tree(tmp_path / "h1" / "docs", DOCS)
    two = write_tree(tmp_path / "h2" / "mnt" / "docs", DOCS)
    for root, host in ((one, "h1"), (two, "h2")):
        monkeypatch.setenv("DOCINDEX_HOST", host)
        assert invoke(["scan", str(root), "--db", pg_url, "-q"]).exit_code == 0
    monkeypatch.setenv("DOCINDEX_HOST", "h1")
    gone = invoke(["roots", "remove", str(one), "--db", pg_url])
    assert gone.exit_code == 0, gone.output
    monkeypatch.setenv("DOCINDEX_HOST", "h2")
    listed = json.loads(invoke(["roots", "--db", pg_url, "--json"]).stdout)
    assert listed["roots"] == []
    assert _consistent(pg_url)[0] == 0
