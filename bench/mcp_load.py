"""Many pipelined MCP tool calls against one real ``docindex mcp`` server (issue #17).

Builds an index of a slice of the shared docs corpus, starts ``docindex mcp``
as a subprocess and writes ``--clients`` interleaved streams of tool calls
(queries, chunk lookups, outlines, listings, batches) to its stdin without
waiting for answers, then reads every answer. Prints the number of calls,
errors, wall time and the server's peak RSS (VmHWM, read before it exits).

    python bench/mcp_load.py [--clients 8] [--calls 128] [--files 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import SHARED_DIR

CORPUS = SHARED_DIR / "corpus" / "docs"
WORDS = ["install", "configuration", "配置", "error handling", "deploy the service",
         "authentication token", "升级", "database migration", "logging", "cache"]  # fmt: skip


PARAGRAPH = " ".join(
    f"{w} step {i} of the guide explains how the service handles requests"
    for i, w in enumerate(WORDS * 3)
)


def build(root: Path, db: Path, files: int) -> None:
    """Copy ``files`` corpus files under ``root`` and index them."""
    sources = sorted(p for p in CORPUS.rglob("*.md") if p.is_file())
    step = max(1, len(sources) // files)
    for i, src in enumerate(sources[::step][:files]):
        dst = root / f"{i:04d}-{src.name}"
        dst.write_bytes(src.read_bytes())
    subprocess.run([sys.executable, "-m", "docindex", "scan", str(root), "--db",
                    str(db), "-q"], check=True)  # fmt: skip


def calls(clients: int, per_client: int, names: list[str]) -> list[tuple[str, Any]]:
    """Interleaved tool calls of ``clients`` imaginary agents."""
    out = []
    for i in range(per_client):
        for c in range(clients):
            word = WORDS[(i + c) % len(WORDS)]
            name = names[(i * clients + c) % len(names)]
            kind = (i + c) % 6
            if kind == 0:
                out.append(("get_outline", {"path": name}))
            elif kind == 1:
                out.append(("get_doc", {"chunk_id": name}))
            elif kind == 2:
                out.append(("list_documents", {"limit": 20, "offset": i % 50}))
            elif kind == 3:
                out.append(("search_batch", {"queries": [{"query": word},
                                                         {"query": WORDS[c]}]}))  # fmt: skip
            elif kind == 4:
                out.append(("doc_query", {"query": f"{word} {c}"}))
            else:  # a pasted paragraph: long enough for the embedder's array path
                out.append(("doc_query", {"query": PARAGRAPH[(i * 37) % 400 :]}))
    return out


def run_load(db: Path, root: Path, clients: int, per_client: int) -> dict[str, Any]:
    """Start the server, pipeline every call, collect answers; return the figures."""
    names = sorted(p.name for p in root.iterdir())
    todo = calls(clients, per_client, names)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "docindex", "mcp", "--db", str(db), "--root", str(root)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None

    def send(obj: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(obj).encode() + b"\n")

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "load", "version": "1"}}})  # fmt: skip
    proc.stdin.flush()
    json.loads(proc.stdout.readline())
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    started = time.perf_counter()

    def writer() -> None:
        for i, (name, args) in enumerate(todo, 1):
            send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                  "params": {"name": name, "arguments": args}})  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.flush()

    thread = threading.Thread(target=writer)
    thread.start()
    errors: list[str] = []
    seen = set()
    while len(seen) < len(todo):
        line = proc.stdout.readline()
        if not line:
            errors.append("server closed its stdout")
            break
        msg = json.loads(line)
        seen.add(msg.get("id"))
        result = msg.get("result")
        if result is None or result.get("isError"):
            errors.append(json.dumps(msg)[:200])
    took = time.perf_counter() - started
    thread.join()
    peak = _hwm_kib(proc.pid) / 1024
    proc.stdin.close()
    proc.wait(timeout=30)
    proc.stdout.close()
    return {"calls": len(todo), "answered": len(seen), "errors": errors,
            "seconds": round(took, 2), "peak_rss_mib": round(peak, 1),
            "exit": proc.returncode}  # fmt: skip


def _hwm_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM"):
                return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=128, help="calls per client")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="docindex-mcp-load-") as tmp:
        root, db = Path(tmp) / "docs", Path(tmp) / "index.db"
        root.mkdir()
        build(root, db, args.files)
        for _ in range(args.runs):
            got = run_load(db, root, args.clients, args.calls)
            print(json.dumps({**got, "errors": len(got["errors"]),
                              "first_errors": got["errors"][:3]}))  # fmt: skip


if __name__ == "__main__":
    main()
