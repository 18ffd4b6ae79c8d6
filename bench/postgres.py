"""SQLite vs PostgreSQL side by side on ../shared/corpus/docs (issue #34).

One run, the two engines interleaved, medians of ``--runs`` runs:

- full index: ``docindex scan COPY --db X`` into a new file / a new schema;
- no-op rescan and a one-file edit (on a copy of the corpus: the user's files
  are never touched);
- query latency: a whole ``docindex query`` process, and in-process (one
  open index, ``search()`` per query: p50 over the query set);
- throughput: queries per second with 1, 4 and 8 concurrent client
  processes, each with its own connection, each running the query set.

The server is ``DOCINDEX_TEST_PG`` (a URL) or a throwaway cluster started
with the server's default durability settings (``tests/pgcluster.py``).

Usage: python bench/postgres.py [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "docs"
QUERIES = [
    "rate limiting", "how to configure a plugin", "useEffect cleanup",
    "server side rendering", "lifetime elision", "async await", "redis cluster",
    "component props validation", "路由 配置", "响应式", "error handling",
    "trait objects", "install", "authentication jwt", "hooks rules",
    "computed properties", "upstream health check", "memory safety",
]  # fmt: skip


def _docindex(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "docindex", *args], check=True,
                   capture_output=True, cwd=ROOT)  # fmt: skip
    return time.perf_counter() - started


def _in_process(db: str, rounds: int) -> list[float]:
    from docindex.api import workspace
    from docindex.models import QueryOptions
    from docindex.search.engine import parse, search

    ws = workspace.load(db)
    took: list[float] = []
    with ws.open() as store:
        for _ in range(rounds):
            for q in QUERIES:
                t0 = time.perf_counter()
                with store.atomic(immediate=False):
                    search(store, parse(q, ws.config), ws.config, QueryOptions())
                took.append((time.perf_counter() - t0) * 1000)
    return took


def _client(args: tuple[str, int]) -> int:
    db, rounds = args
    return len(_in_process(db, rounds))


def _throughput(db: str, clients: int, rounds: int) -> float:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(clients) as pool:
        pool.map(_client, [(db, 1)] * clients)  # warm: imports, connections
        started = time.perf_counter()
        done = sum(pool.map(_client, [(db, rounds)] * clients))
        return done / (time.perf_counter() - started)


def _engines(work: Path, server: str, run: int) -> dict[str, str]:
    sys.path.insert(0, str(ROOT / "tests"))
    import pgcluster

    return {
        "sqlite": str(work / f"run{run}" / "index.db"),
        "postgres": pgcluster.new_schema(server),
    }


def bench(server: str, runs: int, rounds: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, list[float]]] = {"sqlite": {}, "postgres": {}}
    with tempfile.TemporaryDirectory(prefix="docindex-bench-pg-") as tmp:
        work = Path(tmp)
        corpus = work / "docs"
        shutil.copytree(CORPUS, corpus)
        edited = next(iter(sorted(corpus.rglob("*.md"))))
        last: dict[str, str] = {}
        for run in range(runs):
            dbs = _engines(work, server, run)
            for name, db in dbs.items():  # interleaved, one engine after the other
                rec = out[name]
                print(f"run {run + 1}: {name} full index", file=sys.stderr, flush=True)
                rec.setdefault("full_index_s", []).append(
                    _docindex("scan", str(corpus), "--db", db, "-q")
                )
                rec.setdefault("noop_rescan_s", []).append(
                    _docindex("scan", str(corpus), "--db", db, "-q")
                )
                with edited.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n\nedited in run {run} for {name}\n")
                rec.setdefault("one_file_edit_s", []).append(
                    _docindex("scan", str(corpus), "--db", db, "-q")
                )
                rec.setdefault("query_process_ms", []).append(1000 * statistics.median(
                    _docindex("query", q, "--db", db, "--json") for q in QUERIES[:5]
                ))  # fmt: skip
                rec.setdefault("query_in_process_p50_ms", []).append(
                    statistics.median(_in_process(db, 2))
                )
                last[name] = db
        # Throughput: each count of clients ``runs`` times, the counts and
        # the engines interleaved (one short run of one client was the
        # noisiest figure of the table).
        for rep in range(runs):
            for name, db in last.items():
                for clients in (1, 4, 8):
                    print(f"{name}: {clients} clients ({rep + 1})", file=sys.stderr,
                          flush=True)  # fmt: skip
                    out[name].setdefault(f"qps_{clients}", []).append(
                        _throughput(db, clients, rounds)
                    )
    return {
        name: {k: {"median": round(statistics.median(v), 3),
                   "runs": [round(x, 3) for x in v]} for k, v in rec.items()}
        for name, rec in out.items()
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--rounds", type=int, default=3, help="query-set rounds per client"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"skipped: corpus not found at {CORPUS}", file=sys.stderr)
        return 0
    server = os.environ.get("DOCINDEX_TEST_PG")
    if server:
        result = bench(server, args.runs, args.rounds)
    else:
        sys.path.insert(0, str(ROOT / "tests"))
        import pgcluster

        bin_dir = pgcluster.binaries()
        if bin_dir is None:
            print(f"skipped: {pgcluster.MISSING}", file=sys.stderr)
            return 0
        with pgcluster.cluster(bin_dir, fast=False) as url:
            result = bench(url, args.runs, args.rounds)
    if args.json:
        print(json.dumps(result))
        return 0
    keys = list(result["sqlite"])
    print(f"{'measure':<26} {'sqlite':>10} {'postgres':>10} {'pg/sqlite':>9}")
    for key in keys:
        a = result["sqlite"][key]["median"]
        b = result["postgres"][key]["median"]
        print(f"{key:<26} {a:>10.3f} {b:>10.3f} {b / a if a else 0:>9.2f}")
    for name in ("sqlite", "postgres"):
        q1 = result[name]["qps_1"]["median"]
        q8 = result[name]["qps_8"]["median"]
        print(f"{name}: 8-client / 1-client throughput = {q8 / q1:.2f}x")
    print(json.dumps(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
