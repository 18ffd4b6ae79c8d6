"""Speed and scale of docindex beside the SQLite floor, in one command (#7, #22).

On ``../shared/corpus/docs`` (skipped with a message when absent) and on 4x,
10x ... copies of it (hard links under /tmp/docindex-bench/scale, distinct
paths; the 10x is ~300 MB in 21,660 files),
this measures, runs interleaved with a FLOOR measured in the same run (a fresh
Python process that walks, reads and inserts each file's raw text into an FTS5
table in a fresh SQLite file, timed around its loop):

- full ``docindex scan`` (default settings, vectors included), whole process,
  with peak RSS: the largest single process (``ru_maxrss`` of children, read
  in a fresh helper process) and the whole process tree (VmRSS polled);
- index size against the corpus bytes, and that every segment has a vector;
- no-op rescan and rescan after replacing one file, whole process;
- ``docindex query`` whole process (and the same queries served by a
  running ``docindex watch``, issue #24), ``docindex --help``, and in-process
  ``api.query`` in auto mode (a fresh process, one warm-up per query);
- at the first scale only (issue #22): ``reindex`` against ``reindex --full``
  (interleaved), and the index size after two ``scan --force`` with no change.

Each figure is min / median / max over repeated runs; ratios divide by the
floor's median of the same scale. The last table checks every target of
issue #22 (linear scan time and size: the per-MB cost of each scale within
15% of the first; peak RSS; no-op rescan; query; scan/floor). The machine's
cores may be shared, so runs are noisy: read the medians, and compare A/B
figures only when they were measured in one run.

Usage: python bench/speed.py [--quick] [--scales 1,4,10] [--runs N]
       [--scale-runs N] [--query-runs N] [--json FILE] [--exe PATH]

A full ``--scales 1,4,10`` run takes about 10 minutes on 2 idle cores
(each 10x scan ~1 minute); ``--quick`` runs each scan once.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    SHARED_DIR,
    corpus_copies,
    docindex_cmd,
    measure,
    mmm,
    start_watcher,
    wall,
)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = SHARED_DIR / "corpus" / "docs"
WORK = Path(tempfile.gettempdir()) / "docindex-bench" / "scale"
BIG_CAPS = ("MAX_DOCS", "MAX_SEGMENTS", "MAX_EMBEDDED")
QUERIES = [
    "how to configure an upstream health check",
    "useEffect cleanup function",
    "lifetime elision rules",
    "路由 插件 配置",
    "计算属性",
    "动态规划",
]

FLOOR = r"""
import os, sqlite3, sys, time
root, db = sys.argv[1], sys.argv[2]
started, cpu = time.perf_counter(), time.process_time()
conn = sqlite3.connect(db, isolation_level=None)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("PRAGMA synchronous = NORMAL")
conn.execute("CREATE VIRTUAL TABLE fts USING fts5(path, body)")
conn.execute("BEGIN")
for folder, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(files):
        path = os.path.join(folder, name)
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
        conn.execute("INSERT INTO fts (path, body) VALUES (?, ?)", (path, text))
conn.execute("COMMIT")
conn.close()
print(time.perf_counter() - started, time.process_time() - cpu)
"""

INPROC = r"""
import json, sys, time
import docindex
db, runs, queries = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
out = []
for q in queries:
    docindex.open(db).query(q, mode="auto")
    for _ in range(runs):
        t = time.perf_counter()
        docindex.open(db).query(q, mode="auto")
        out.append((time.perf_counter() - t) * 1000)
print(json.dumps(out))
"""


def _env() -> dict[str, str]:
    """No DOCINDEX_* from the caller; every command runs in its own process
    unless a figure asks for a watcher's server (DOCINDEX_WATCHER=require)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    return {**env, "DOCINDEX_WATCHER": "off"}


EXE: list[str] = []  # --exe: another installation's console script


def _docindex() -> list[str]:
    return EXE or docindex_cmd()


def _python() -> str:
    """The interpreter of the docindex being timed (for the in-process figure)."""
    beside = Path(_docindex()[0]).with_name("python")
    return str(beside) if EXE and beside.is_file() else sys.executable


def make_tree(scale: int) -> Path:
    """``scale`` copies of the corpus under distinct paths (hard links, else copies)."""
    return corpus_copies(CORPUS, WORK / f"x{scale}", scale)


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()
               and p.name != ".complete")  # fmt: skip


def _fresh(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def floor(tree: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of the floor loop, in a fresh process and SQLite file."""
    db = WORK / "floor.db"
    _fresh(db)
    out = subprocess.run([sys.executable, "-c", FLOOR, str(tree), str(db)],
                         capture_output=True, text=True, check=True)  # fmt: skip
    _fresh(db)
    wall_s, cpu_s = out.stdout.split()
    return float(wall_s), float(cpu_s)


def _bytes(db: Path) -> int:
    """The index file with its -wal."""
    return sum(
        Path(f"{db}{s}").stat().st_size
        for s in ("", "-wal")
        if Path(f"{db}{s}").exists()
    )


def rewrites(tree: Path, db: Path, runs: int, env: dict[str, str]) -> dict[str, object]:
    """``reindex`` vs ``reindex --full`` (interleaved) and size after ``scan --force``.

    Issue #22: two ``scan --force`` with no change grew the index 59 -> 87 MB,
    and ``reindex`` took 10.0 s where ``reindex --full`` took 6.0 s.
    """
    di = _docindex()
    before = _bytes(db)
    sizes = []
    for _ in range(2):
        subprocess.run([*di, "scan", str(tree), "--db", str(db), "-q", "--force"],
                       env=env, check=True)  # fmt: skip
        sizes.append(_bytes(db))
    plain, full = [], []
    for _ in range(runs):
        plain.append(wall([*di, "reindex", "--db", str(db), "-q"], env))
        full.append(wall([*di, "reindex", "--full", "--db", str(db), "-q"], env))
    return {"size_before": before, "force_sizes": sizes, "after_reindex": _bytes(db),
            "reindex_s": plain, "reindex_full_s": full}  # fmt: skip


def _edit_target(tree: Path) -> Path:
    return next(p for p in sorted(tree.rglob("*.md")) if "/en/" in str(p))


def bench_scale(
    scale: int, runs: int, query_runs: int, rewrite_runs: int = 0
) -> dict[str, object]:
    """Every figure for one scale; see the module docstring."""
    env = _env()
    if scale > 1:
        # The default caps (300k segments and vectors) would stop a 4x copy
        # part-way; raise them so every scale indexes every file.
        env.update({f"DOCINDEX_{k}": "10000000" for k in BIG_CAPS})
    di = _docindex()
    tree = make_tree(scale)
    db = WORK / f"x{scale}.db"
    floors: list[float] = []
    floor_cpu: list[float] = []
    scans: list[float] = []
    scan_cpu: list[float] = []
    rss: list[float] = []
    tree_rss: list[float] = []
    for _ in range(runs):
        f = floor(tree)
        floors.append(f[0])
        floor_cpu.append(f[1])
        _fresh(db)
        m = measure([*di, "scan", str(tree), "--db", str(db), "-q"], env=env)
        scans.append(float(m["wall_s"]))
        scan_cpu.append(float(m["cpu_s"]))
        rss.append(m["max_rss_kb"] / 1024)
        tree_rss.append(m["tree_rss_kb"] / 1024)
    stats = json.loads(subprocess.run([*di, "stats", "--db", str(db), "--json"],
                                      capture_output=True, text=True, env=env,
                                      check=True).stdout)  # fmt: skip
    index_bytes = sum(
        Path(f"{db}{s}").stat().st_size
        for s in ("", "-wal")
        if Path(f"{db}{s}").exists()
    )
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    pages, free, page_size = (
        conn.execute(f"PRAGMA {x}").fetchone()[0]
        for x in ("page_count", "freelist_count", "page_size")
    )
    conn.close()
    noop = [wall([*di, "scan", str(tree), "--db", str(db), "-q"], env)
            for _ in range(max(runs, 3))]  # fmt: skip
    target = _edit_target(tree)
    original = target.read_bytes()
    edits = []
    try:
        for i in range(max(runs, 3)):
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_bytes(original + f"\n\nedited {i} {time.time()}\n".encode())
            os.replace(tmp, target)  # never write through a hard link
            edits.append(wall([*di, "scan", str(tree), "--db", str(db), "-q"], env))
    finally:
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(original)
        os.replace(tmp, target)
    queries = []
    for _ in range(max(1, query_runs // len(QUERIES))):
        for q in QUERIES:
            queries.append(wall([*di, "query", q, "--db", str(db), "--json"], env))
    # The same queries answered by a running `docindex watch`'s server (#24).
    watcher = start_watcher(di, str(db), env)
    served_env = {**env, "DOCINDEX_WATCHER": "require"}
    try:
        served = [
            wall([*di, "query", q, "--db", str(db), "--json"], served_env)
            for _ in range(max(1, query_runs // len(QUERIES)))
            for q in QUERIES
        ]
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=120)
    helps = [wall([*di, "--help"], env) for _ in range(query_runs)]
    inproc_out = subprocess.run(
        [_python(), "-c", INPROC, str(db), str(query_runs), json.dumps(QUERIES)],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    inproc = json.loads(inproc_out.stdout)
    extra = rewrites(tree, db, rewrite_runs, env) if rewrite_runs else {}
    return {
        **extra,
        "scale": scale,
        "files": int(stats["documents"]),
        "corpus_bytes": _size(tree),
        "segments": int(stats["segments"]),
        "embedded": int(stats["embedded"]),
        "index_bytes": index_bytes,
        "free_bytes": free * page_size,
        "page_bytes": pages * page_size,
        "floor_s": floors,
        "floor_cpu_s": floor_cpu,
        "scan_s": scans,
        "scan_cpu_s": scan_cpu,
        "rss_mb": rss,
        "tree_rss_mb": tree_rss,
        "noop_s": noop,
        "edit_s": edits,
        "query_s": queries,
        "served_query_s": served,
        "help_s": helps,
        "inproc_ms": inproc,
    }


def _fmt(values: list[float], unit: str, digits: int = 2) -> str:
    lo, med, hi = mmm(values)
    return f"{lo:.{digits}f} / **{med:.{digits}f}** / {hi:.{digits}f} {unit}"


def _ratio(values: list[float], base: float) -> str:
    lo, med, hi = mmm(values)
    return f"{lo / base:.1f} / **{med / base:.1f}** / {hi / base:.1f}x"


def print_table(r: dict[str, object]) -> None:
    """The main table for one scale (Markdown)."""
    floor_med = mmm(r["floor_s"])[1]  # type: ignore[arg-type]
    rows = [
        ("floor: walk + read + FTS5 insert", _fmt(r["floor_s"], "s"), "1.0x", ""),
        ("full scan, vectors (whole process)", _fmt(r["scan_s"], "s"),
         _ratio(r["scan_s"], floor_med), "<= 5x floor"),  # type: ignore[arg-type]
        ("floor CPU (user + sys)", _fmt(r["floor_cpu_s"], "s"), "1.0x", ""),
        ("full scan CPU, all processes", _fmt(r["scan_cpu_s"], "s"),
         _ratio(r["scan_cpu_s"], mmm(r["floor_cpu_s"])[1]), ""),  # type: ignore[arg-type]
        ("peak RSS, largest process", _fmt(r["rss_mb"], "MB", 0), "", "<= 150 MB"),
        ("peak RSS, process tree (sum)", _fmt(r["tree_rss_mb"], "MB", 0), "", ""),
        ("index size", f"{r['index_bytes'] / 1e6:.1f} MB",
         f"{r['index_bytes'] / r['corpus_bytes']:.2f}x corpus", "<= 2x corpus"),  # type: ignore[operator]
        ("index size without free pages",
         f"{(r['page_bytes'] - r['free_bytes']) / 1e6:.1f} MB",  # type: ignore[operator]
         f"{(r['page_bytes'] - r['free_bytes']) / r['corpus_bytes']:.2f}x corpus", ""),  # type: ignore[operator]
        ("segments with a vector", f"{r['embedded']} / {r['segments']}", "", "all"),
        ("no-op rescan (whole process)", _fmt(r["noop_s"], "s", 3),
         _ratio(r["noop_s"], floor_med), "<= 0.25 s"),  # type: ignore[arg-type]
        ("rescan after one edit", _fmt(r["edit_s"], "s", 3),
         _ratio(r["edit_s"], floor_med), "<= 0.30 s"),  # type: ignore[arg-type]
        ("`docindex query` (whole process)", _fmt(r["query_s"], "s", 3),
         _ratio(r["query_s"], floor_med), "<= 0.10 s"),  # type: ignore[arg-type]
        ("`docindex query` served by `watch` (whole process)",
         _fmt(r["served_query_s"], "s", 3),  # type: ignore[arg-type]
         _ratio(r["served_query_s"], floor_med), "<= 0.10 s"),  # type: ignore[arg-type]
        ("`docindex --help`", _fmt(r["help_s"], "s", 3), "", "<= 0.15 s"),
        ("in-process query, auto mode", _fmt(r["inproc_ms"], "ms", 1), "", "< 15 ms"),
    ]  # fmt: skip
    caps = " (caps raised: DOCINDEX_MAX_*=10000000)" if int(r["scale"]) > 1 else ""  # type: ignore[call-overload]
    print(f"\n### {r['scale']}x corpus: {r['files']} files, "
          f"{r['corpus_bytes'] / 1e6:.1f} MB, {r['segments']} segments{caps}\n")  # fmt: skip
    if "reindex_s" in r:
        mb = [n / 1e6 for n in (r["size_before"], *r["force_sizes"])]  # type: ignore[misc]
        rows += [
            ("index after 2x `scan --force`, no change",
             " -> ".join(f"{m:.1f}" for m in mb) + " MB",
             f"{mb[-1] / mb[0]:.3f}x", "within 1%"),
            ("`reindex` (WAL, readers keep answering)", _fmt(r["reindex_s"], "s"),
             _ratio(r["reindex_s"], floor_med), "<= reindex --full"),  # type: ignore[arg-type]
            ("`reindex --full` (new file, swapped in)", _fmt(r["reindex_full_s"], "s"),
             _ratio(r["reindex_full_s"], floor_med), ""),  # type: ignore[arg-type]
        ]  # fmt: skip
    print("| figure | min / **median** / max | vs floor median | target |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def print_scale(results: list[dict[str, object]]) -> None:
    """Growth of each median against the smallest scale."""
    base = results[0]

    def med(r: dict[str, object], key: str) -> float:
        return mmm(r[key])[1]  # type: ignore[arg-type]

    print("\n### Scale (medians; growth vs the first scale)\n")
    print("| scale | files | floor s | scan s | scan/floor | index MB | peak RSS MB "
          "| no-op s | query s | in-process ms |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        k = int(r["scale"]) / int(base["scale"])  # type: ignore[call-overload]

        def g(key: str, r: dict[str, object] = r) -> str:
            return f"{med(r, key):.3g} ({med(r, key) / med(base, key):.2f}x)"

        size = int(r["index_bytes"])  # type: ignore[call-overload]
        print(f"| {r['scale']}x ({k:.0f}x) | {r['files']} | {g('floor_s')} | "
              f"{g('scan_s')} | {med(r, 'scan_s') / med(r, 'floor_s'):.1f} | "
              f"{size / 1e6:.0f} ({size / int(base['index_bytes']):.2f}x) | "  # type: ignore[call-overload]
              f"{g('rss_mb')} | {g('noop_s')} | {g('query_s')} | {g('inproc_ms')} |")  # fmt: skip


def print_targets(results: list[dict[str, object]]) -> None:
    """Each target of issue #22, met or missed, from the medians above."""
    base, top = results[0], results[-1]

    def med(r: dict[str, object], key: str) -> float:
        return mmm(r[key])[1]  # type: ignore[arg-type]

    def per_mb(r: dict[str, object], key: str) -> float:
        value = med(r, key) if isinstance(r[key], list) else float(r[key])  # type: ignore[arg-type]
        return value / (int(r["corpus_bytes"]) / 1e6)  # type: ignore[call-overload]

    checks: list[tuple[str, str, bool]] = []
    for r in results:
        ratio = med(r, "scan_s") / med(r, "floor_s")
        checks.append(
            (f"{r['scale']}x full scan <= 5x floor", f"{ratio:.2f}x", ratio <= 5)
        )
    for r in results[1:]:
        for key, what in (("scan_s", "scan s/MB"), ("index_bytes", "index bytes/MB")):
            g = per_mb(r, key) / per_mb(base, key)
            checks.append((f"{r['scale']}x {what} within 15% of {base['scale']}x",
                           f"{g:.2f}x", g <= 1.15))  # fmt: skip
    rss = med(top, "rss_mb")
    checks.append((f"{top['scale']}x peak RSS <= 150 MB", f"{rss:.0f} MB", rss <= 150))
    noop = med(base, "noop_s")
    checks.append(
        (f"{base['scale']}x no-op rescan <= 0.25 s", f"{noop:.3f} s", noop <= 0.25)
    )
    for r in results[1:]:
        grow = med(r, "noop_s") / noop
        files = int(r["files"]) / int(base["files"])  # type: ignore[call-overload]
        checks.append((f"{r['scale']}x no-op grows no faster than files",
                       f"{grow:.2f}x vs {files:.2f}x", grow <= files))  # fmt: skip
    q = med(top, "query_s")
    checks.append(
        (f"{top['scale']}x query whole process <= 0.10 s", f"{q:.3f} s", q <= 0.10)
    )
    q = med(top, "served_query_s")
    checks.append((f"{top['scale']}x query whole process <= 0.10 s, served by `watch`",
                   f"{q:.3f} s", q <= 0.10))  # fmt: skip
    if "reindex_s" in base:
        sizes = [base["size_before"], *base["force_sizes"]]  # type: ignore[list-item]
        g = int(sizes[-1]) / int(sizes[0])  # type: ignore[call-overload]
        checks.append(("2x scan --force: size within 1%", f"{g:.3f}x", g <= 1.01))
        a, b = med(base, "reindex_s"), med(base, "reindex_full_s")
        checks.append(("reindex <= reindex --full", f"{a:.2f} vs {b:.2f} s", a <= b))
    print("\n### Targets (issue #22; medians)\n")
    print("| target | measured | |")
    print("|---|---|---|")
    for what, value, ok in checks:
        print(f"| {what} | {value} | {'met' if ok else '**missed**'} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print Markdown tables; 0 on success, 0 when skipped."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 scan run, 6 queries")
    parser.add_argument("--scales", default="1,4,10", help="corpus copies, e.g. 1,4,10")
    parser.add_argument("--runs", type=int, help="scan runs at 1x (default 3)")
    parser.add_argument("--scale-runs", type=int, default=1,
                        help="scan runs at the larger scales (default 1)")  # fmt: skip
    parser.add_argument("--query-runs", type=int, help="query runs (default 12)")
    parser.add_argument("--rewrite-runs", type=int,
                        help="reindex / reindex --full pairs at the first scale "
                        "(default 3, 1 with --quick, 0 to skip)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write raw figures here")
    parser.add_argument(
        "--exe", type=Path,
        help="the docindex to time, e.g. .venv/bin/docindex of a README install "
        "(default: beside this Python; an editable install adds its import hook "
        "to every start-up)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.exe:
        EXE.append(str(args.exe.resolve()))
    if not CORPUS.is_dir():
        print(f"skipped: no corpus at {CORPUS} (see ../shared/README.md)")
        return 0
    runs = args.runs or (1 if args.quick else 3)
    query_runs = args.query_runs or (6 if args.quick else 12)
    scales = [int(s) for s in args.scales.split(",") if s.strip()]
    WORK.mkdir(parents=True, exist_ok=True)
    print(f"docindex speed bench: corpus {CORPUS}, cpus {os.cpu_count()}, "
          f"load {os.getloadavg()[0]:.1f}, docindex {' '.join(_docindex())}; "
          "min / median / max over runs")  # fmt: skip
    results = []
    rewrite_runs = (
        (1 if args.quick else 3) if args.rewrite_runs is None else args.rewrite_runs
    )
    for i, scale in enumerate(scales):
        r = bench_scale(scale, runs if i == 0 else args.scale_runs, query_runs,
                        rewrite_runs if i == 0 else 0)  # fmt: skip
        results.append(r)
        print_table(r)
        sys.stdout.flush()
    if len(results) > 1:
        print_scale(results)
    print_targets(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
