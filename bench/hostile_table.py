"""Time and peak memory of a real scan for each hostile case of issue #8.

The hostile inputs of issue #17 come first (``--inputs-only`` for just them):
CLI calls and single MCP calls with arguments far past the limits; the time
is the call's (for MCP, from request to reply on a started server) and the
memory the process's peak RSS.

Each case is built alone (beside one ordinary file) in a fresh folder and
scanned by ``docindex scan --json --follow-symlinks`` in a child process; the
table shows what docindex did with the file, the scan's wall time (including
interpreter start-up, ~0.5 s) and the child's peak RSS (its VmHWM at exit).
The machine is shared: run it a few times and read medians.

    python bench/hostile_table.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_hostile import Case, build_tree, cases, outcome  # noqa: E402

# The child reports its own VmHWM at exit: ru_maxrss from wait4() would carry
# this (big, case-building) process's RSS over fork+exec on Linux.
_WRAPPER = (
    "import atexit, sys\n"
    "def _hwm():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM'):\n"
    "            sys.stderr.write('\\nVMHWM ' + line.split()[1] + '\\n')\n"
    "atexit.register(_hwm)\n"
    "from docindex.cli.main import cli\n"
    "cli(prog_name='docindex')\n"
)


def run_case(case: Case | None) -> tuple[str, float, float]:
    """Scan a tree holding ``case``; return (outcome, seconds, peak RSS MiB)."""
    with tempfile.TemporaryDirectory(prefix="docindex-hostile-") as tmp:
        root = build_tree(Path(tmp) / "docs", [case] if case else [])
        db = Path(tmp) / "db" / "index.db"
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _WRAPPER, "scan", str(root), "--db", str(db),
             "--json", "--follow-symlinks"],
            capture_output=True, env=env, timeout=300,
        )  # fmt: skip
        took = time.perf_counter() - started
        err = proc.stderr.decode(errors="replace")
        hwm = [ln.split()[1] for ln in err.splitlines() if ln.startswith("VMHWM ")]
        peak = int(hwm[-1]) / 1024 if hwm else float("nan")
        if proc.returncode != 0:
            return f"scan failed: {err.strip()[-80:]}", took, peak
        result = json.loads(proc.stdout)
        if case is None:
            return "ordinary file indexed", took, peak
        got = outcome(result, db, root, case)
        if got == "none":
            extra = list(result["skipped"])
            got = "skipped: " + ", ".join(extra) if extra else "left out by the walk"
        elif got != "indexed":
            msg = next(
                (
                    e["message"]
                    for e in result["errors"]
                    if e["reason"] == got and "normal" not in e["path"]
                ),
                "",
            )
            got = f"skipped: {got} ({msg[:70]})" if msg else f"skipped: {got}"
        else:
            got = f"indexed ({result['segments'] - 1} segments)"
        return got, took, peak


_HWM = _WRAPPER.split("from docindex.cli")[0]
_VANISH = _HWM + (
    "import dataclasses, json, os, sys\n"
    "from pathlib import Path\n"
    "from docindex.config import Config\n"
    "from docindex.ingest.indexer import scan\n"
    "from docindex.store import Store\n"
    "root, db = Path(sys.argv[1]), Path(sys.argv[2])\n"
    "def hook(event):\n"
    "    if event.phase == 'walk' and event.path == 'stays.md':\n"
    "        (root / 'gone.md').unlink()\n"
    "        (root / 'fifo.md').unlink()\n"
    "        os.mkfifo(root / 'fifo.md')\n"
    "cfg = Config(roots=(str(root.resolve()),), workers=1)\n"
    "with Store.open(db, create=True) as store:\n"
    "    print(json.dumps(dataclasses.asdict(scan(store, cfg, on_progress=hook))))\n"
)


def _child(cmd: list[str]) -> tuple[dict | None, str, float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=env, timeout=300)
    took = time.perf_counter() - started
    err = proc.stderr.decode(errors="replace")
    hwm = [ln.split()[1] for ln in err.splitlines() if ln.startswith("VMHWM ")]
    peak = int(hwm[-1]) / 1024 if hwm else float("nan")
    data = json.loads(proc.stdout) if proc.returncode == 0 else None
    return data, err, took, peak


def run_vanish() -> tuple[str, float, float]:
    """A walk hook deletes one file and swaps another for a FIFO before reading."""
    with tempfile.TemporaryDirectory(prefix="docindex-hostile-") as tmp:
        root = Path(tmp) / "docs"
        root.mkdir()
        for name in ("gone.md", "fifo.md", "stays.md"):
            (root / name).write_text(f"# {name}\n\ntext\n")
        cmd = [sys.executable, "-c", _VANISH, str(root), str(Path(tmp) / "i.db")]
        data, err, took, peak = _child(cmd)
        if data is None:
            return f"scan failed: {err.strip()[-80:]}", took, peak
        what = "; ".join(
            f"{Path(e['path']).name}: {e['reason']} ({e['message']})"
            for e in data["errors"]
        )
        return f"skipped {what}; scan completed", took, peak


def run_permission() -> tuple[str, float, float]:
    """An unreadable file and directory (as root: CAP_DAC_* dropped via setpriv)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return "not measured (root without setpriv)", float("nan"), float("nan")
        prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
    with tempfile.TemporaryDirectory(prefix="docindex-hostile-") as tmp:
        root = build_tree(Path(tmp) / "docs", [])
        (root / "locked").mkdir()
        (root / "locked" / "inner.md").write_text("# inner\n\nhidden\n")
        (root / "secret.md").write_text("# secret\n\nhidden\n")
        os.chmod(root / "secret.md", 0)
        os.chmod(root / "locked", 0)
        try:
            cmd = [*prefix, sys.executable, "-c", _WRAPPER, "scan", str(root),
                   "--db", str(Path(tmp) / "i.db"), "--json"]  # fmt: skip
            data, err, took, peak = _child(cmd)
        finally:
            os.chmod(root / "locked", 0o755)
            os.chmod(root / "secret.md", 0o644)
        if data is None:
            return f"scan failed: {err.strip()[-80:]}", took, peak
        what = "; ".join(
            f"{Path(e['path']).name}: {e['reason']} ({e['message']})"
            for e in data["errors"]
        )
        return f"skipped {what}; scan completed", took, peak


def _index(tmp: str) -> tuple[Path, Path]:
    root = build_tree(Path(tmp) / "docs", [])
    db = Path(tmp) / "i.db"
    subprocess.run([sys.executable, "-m", "docindex", "scan", str(root), "--db",
                    str(db), "-q"], check=True)  # fmt: skip
    return root, db


def _cli_input(args: list[str], stdin: bytes = b"") -> tuple[str, float, float]:
    """One CLI call with a hostile argument (issue #17): its exit and message."""
    with tempfile.TemporaryDirectory(prefix="docindex-hostile-") as tmp:
        _, db = _index(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _WRAPPER, *args, "--db", str(db)],
                              input=stdin, capture_output=True, env=env, timeout=300)  # fmt: skip
        took = time.perf_counter() - started
        err = proc.stderr.decode(errors="replace")
        hwm = [ln.split()[1] for ln in err.splitlines() if ln.startswith("VMHWM ")]
        msg = next((ln for ln in err.splitlines() if ln.startswith("Error")), "")
        peak = int(hwm[-1]) / 1024 if hwm else float("nan")
        return f"exit {proc.returncode}: {msg[:70]}", took, peak


def _mcp_input(name: str, args: dict[str, object]) -> tuple[str, float, float]:
    """One MCP call with a hostile argument to a fresh server: reply and its VmHWM."""
    with tempfile.TemporaryDirectory(prefix="docindex-hostile-") as tmp:
        root, db = _index(tmp)
        proc = subprocess.Popen(
            [sys.executable, "-m", "docindex", "mcp", "--db", str(db), "--root",
             str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip
        proc.stdin.write(json.dumps(hello).encode() + b"\n")
        proc.stdin.flush()
        proc.stdout.readline()
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": name, "arguments": args}}  # fmt: skip
        started = time.perf_counter()
        proc.stdin.write(json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        took = time.perf_counter() - started
        with open(f"/proc/{proc.pid}/status") as fh:
            peak = (
                next(int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM")) / 1024
            )
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
        result = reply.get("result", {})
        text = result.get("content", [{}])[0].get("text", json.dumps(reply))
        flag = "tool error" if result.get("isError") else "answered"
        return f"{flag}: {text[:70]}", took, peak


def _pipelined() -> tuple[str, float, float]:
    """1,024 MCP calls from 8 interleaved clients, pipelined (bench/mcp_load.py)."""
    from mcp_load import build, run_load

    with tempfile.TemporaryDirectory(prefix="docindex-hostile-") as tmp:
        root, db = Path(tmp) / "docs", Path(tmp) / "i.db"
        root.mkdir()
        build(root, db, 120)
        got = run_load(db, root, 8, 128)
        what = (
            f"{got['answered']} of {got['calls']} answered, {len(got['errors'])} errors"
        )
        return what, float(got["seconds"]), float(got["peak_rss_mib"])


def input_cases() -> list[tuple[str, object]]:
    """(name, thunk) for the hostile inputs of issue #17."""
    return [
        ("CLI query of 4M characters (stdin)",
         lambda: _cli_input(["query"], b"q" * 4_000_000)),
        ("CLI show, 128 KB chunk id", lambda: _cli_input(["show", "~1" * 64_000])),
        ("CLI query --path, 60,000-char glob",
         lambda: _cli_input(["query", "pip", "--path", "*" * 60_000])),
        ("MCP doc_query of 4M characters",
         lambda: _mcp_input("doc_query", {"query": "q" * 4_000_000})),
        ("MCP doc_query of 50M characters",
         lambda: _mcp_input("doc_query", {"query": "q" * 50_000_000})),
        ("MCP get_doc, 2 MB chunk id",
         lambda: _mcp_input("get_doc", {"chunk_id": "x" * 2_000_000})),
        ("MCP get_outline, 6,000-char path",
         lambda: _mcp_input("get_outline", {"path": "a" * 6000})),
        ("MCP 1,024 pipelined calls, 8 clients", _pipelined),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per case (median)")
    parser.add_argument("--inputs-only", action="store_true",
                        help="only the hostile inputs of issue #17 (not the files)")  # fmt: skip
    args = parser.parse_args()
    rows = []
    for name, fn in input_cases():
        runs = [fn() for _ in range(args.runs)]  # type: ignore[operator]
        took = statistics.median(r[1] for r in runs)
        peak = statistics.median(r[2] for r in runs)
        rows.append((name, runs[-1][0], took, peak))
        print(
            f"{name:36} {took:6.2f} s {peak:7.1f} MiB  {runs[-1][0]}", file=sys.stderr
        )
    for case in [] if args.inputs_only else [None, *cases()]:
        name = case.name if case else "(baseline: one ordinary file)"
        runs = [run_case(case) for _ in range(args.runs)]
        what = runs[-1][0]
        took = statistics.median(r[1] for r in runs)
        peak = statistics.median(r[2] for r in runs)
        rows.append((name, what, took, peak))
        print(f"{name:36} {took:6.2f} s {peak:7.1f} MiB  {what}", file=sys.stderr)
    extra = (("file vanishes / becomes a FIFO after the walk", run_vanish),
             ("permission denied on a file and a directory", run_permission))  # fmt: skip
    for name, fn in [] if args.inputs_only else extra:
        runs = [fn() for _ in range(args.runs)]
        took = statistics.median(r[1] for r in runs)
        peak = statistics.median(r[2] for r in runs)
        rows.append((name, runs[-1][0], took, peak))
        print(
            f"{name:36} {took:6.2f} s {peak:7.1f} MiB  {runs[-1][0]}", file=sys.stderr
        )
    print(
        f"\n| hostile case | what docindex did | time (s, median of {args.runs}) "
        "| peak RSS (MiB) |"
    )
    print("|---|---|---:|---:|")
    for name, what, took, peak in rows:
        print(f"| {name} | {what} | {took:.2f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
