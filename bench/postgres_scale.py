"""The server engine at 1x, 5x and 10x the corpus, with a hot standby (issue #48).

Starts a primary with the server's default durability settings and a hot
standby made from it with ``pg_basebackup -R`` (a replication slot keeps the
WAL it still needs), both on this machine (``tests/pgcluster.py``). For each
scale (``../shared/corpus/docs`` copied N times under renamed folders, hard
links, as ``bench/scan_cost.py`` builds them) and each run, the scales'
order rotating every run:

- full index: ``docindex scan TREE`` into a new schema (caps raised), wall
  seconds, while the standby streams; then the seconds until the standby
  has replayed it (``pg_last_wal_replay_lsn()`` past the primary's insert
  position) and the index's bytes (every table with its indexes and TOAST);
  then ``docindex vacuum`` (not timed: what autovacuum does a minute later,
  so that the query figures are those of a settled index);
- query latency: the query set of ``bench/postgres.py`` in one process with
  one open index and a read transaction per query, ``--rounds`` times,
  p50 and p95, for three readers interleaved round by round: the owner on
  the primary (no row-level security), a reader role on the primary (the
  policies and per-root statistics of #48 apply), the reader on the standby;
- throughput: queries per second of 1 and 8 client processes (each its own
  connection, each running the query set ``--rounds`` times) as the reader:
  all on the primary, all on the standby, and half on each.

Every figure records the load average before and after it. Prints one table
per scale (median over runs, then the runs) and, with ``--json FILE``, all of
it. The machine's cores are shared by the clients, both servers and the
scan: say so next to any figure.

Usage: python bench/postgres_scale.py [--scales 1,5,10] [--runs 2] [--rounds 3]
                                      [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import corpus_copies  # noqa: E402
from postgres import QUERIES  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "docs"
WORK = Path(tempfile.gettempdir()) / "docindex-bench" / "scan_cost"
CAPS = ("MAX_DOCS", "MAX_SEGMENTS", "MAX_EMBEDDED", "MAX_WALKED_FILES")
READER, READER_PW = "bench_reader", "bench reader pw"
TABLES = ("docindex_meta", "roots", "root_paths", "root_grants", "documents",
          "segments", "facets", "skipped", "vocab", "postings")  # fmt: skip


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _latencies(url: str, rounds: int) -> list[float]:
    """ms per query of the query set, ``rounds`` times, one open index."""
    from docindex.api import workspace
    from docindex.models import QueryOptions
    from docindex.search.engine import parse, search
    from docindex.store.location import ServerUrl

    ws = workspace.load(ServerUrl(url), reading=True, every_root=True)
    took: list[float] = []
    with ws.open(readonly=True) as store:
        for _ in range(rounds):
            for q in QUERIES:
                t0 = time.perf_counter()
                with store.atomic(immediate=False):
                    search(store, parse(q, ws.config), ws.config, QueryOptions())
                took.append((time.perf_counter() - t0) * 1000)
    return took


def _client(args: tuple[str, int]) -> int:
    url, rounds = args
    return len(_latencies(url, rounds))


def _throughput(urls: list[str], clients: int, rounds: int) -> float:
    """Queries per second of ``clients`` processes, client i reading urls[i % n]."""
    ctx = multiprocessing.get_context("spawn")
    jobs = [(urls[i % len(urls)], rounds) for i in range(clients)]
    with ctx.Pool(clients) as pool:
        pool.map(_client, [(u, 1) for u, _ in jobs])  # warm: imports, connections
        started = time.perf_counter()
        done = sum(pool.map(_client, jobs))
        return done / (time.perf_counter() - started)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _bytes(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0) "
            "FROM unnest(%s::text[]) t",
            (list(TABLES),),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _docindex(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "docindex", *args], check=True,
                   capture_output=True, cwd=ROOT, env=env)  # fmt: skip
    return time.perf_counter() - started


def measure(
    scale: int, tree: Path, primary: Any, standby: Any, rounds: int
) -> dict[str, Any]:
    """Every figure of one scale, once."""
    import pgcluster
    import psycopg

    db = pgcluster.new_schema(primary.url)
    schema = db.split("search_path%3D")[1]
    on_standby = db.replace(f":{primary.port}/", f":{standby.port}/")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    env.update({f"DOCINDEX_{k}": "10000000" for k in CAPS}, DOCINDEX_WATCHER="off",
               DOCINDEX_DB=db)  # fmt: skip
    rec: dict[str, Any] = {"scale": scale}
    rec["load_before_index"] = _load()
    print(f"x{scale}: full index", file=sys.stderr, flush=True)
    rec["index_s"] = _docindex(["scan", str(tree), "-q"], env)
    rec["load_after_index"] = _load()
    t0 = time.perf_counter()
    pgcluster.caught_up(primary.url, standby.url, timeout=3600)
    rec["replay_lag_s"] = time.perf_counter() - t0
    rec["index_bytes"] = _bytes(db)
    _docindex(["vacuum"], env)
    with psycopg.connect(primary.url, autocommit=True) as conn:
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {READER}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {READER}")
        docs = conn.execute(f"SELECT count(*) FROM {schema}.documents").fetchone()
        segs = conn.execute(f"SELECT count(*) FROM {schema}.segments").fetchone()
    rec["documents"], rec["segments"] = docs[0] if docs else 0, segs[0] if segs else 0
    pgcluster.caught_up(primary.url, standby.url, timeout=3600)
    reader = pgcluster.as_role(db, READER, READER_PW)
    reader_standby = pgcluster.as_role(on_standby, READER, READER_PW)
    targets = {"owner_primary": db, "reader_primary": reader,
               "reader_standby": reader_standby}  # fmt: skip
    print(f"x{scale}: latency", file=sys.stderr, flush=True)
    rec["load_before_queries"] = _load()
    took: dict[str, list[float]] = {name: [] for name in targets}
    for url in targets.values():
        _latencies(url, 1)  # warm the caches of both servers alike
    for _ in range(rounds):
        for name, url in targets.items():
            took[name].extend(_latencies(url, 1))
    for name, values in took.items():
        rec[f"p50_ms_{name}"] = statistics.median(values)
        rec[f"p95_ms_{name}"] = _pct(values, 0.95)
    for clients in (1, 8):
        for where, urls in (("primary", [reader]), ("standby", [reader_standby]),
                            ("split", [reader, reader_standby])):  # fmt: skip
            if clients == 1 and where == "split":
                continue
            print(f"x{scale}: {clients} clients on {where}", file=sys.stderr,
                  flush=True)  # fmt: skip
            rec[f"qps_{clients}_{where}"] = _throughput(urls, clients, rounds)
    rec["load_after_queries"] = _load()
    with psycopg.connect(primary.url, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {READER}")
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return rec


def bench(scales: list[int], runs: int, rounds: int) -> list[dict[str, Any]]:
    import psycopg

    sys.path.insert(0, str(ROOT / "tests"))
    import pgcluster

    bin_dir = pgcluster.binaries()
    if bin_dir is None:
        raise SystemExit(f"skipped: {pgcluster.MISSING}")
    trees = {s: corpus_copies(CORPUS, WORK / f"x{s}", s) for s in scales}
    out: list[dict[str, Any]] = []
    with (
        pgcluster.server(bin_dir, fast=False) as primary,
        pgcluster.standby(primary, slot="docindex_bench") as standby,
    ):
        with psycopg.connect(primary.url, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {READER} LOGIN PASSWORD '{READER_PW}'")
        for run in range(runs):
            order = scales[run % len(scales) :] + scales[: run % len(scales)]
            for scale in order:
                rec = measure(scale, trees[scale], primary, standby, rounds)
                rec["run"] = run + 1
                print(json.dumps(rec), file=sys.stderr, flush=True)
                out.append(rec)
    return out


def report(rows: list[dict[str, Any]]) -> None:
    """One table per scale: the median over runs, then each run's figure."""
    for scale in sorted({r["scale"] for r in rows}):
        mine = [r for r in rows if r["scale"] == scale]
        print(f"\nx{scale}: {mine[0]['documents']:,} documents, "
              f"{mine[0]['segments']:,} chunks, {len(mine)} runs")  # fmt: skip
        for key in mine[0]:
            if key in ("scale", "run", "documents", "segments"):
                continue
            values = [float(r[key]) for r in mine]
            scale_by = 1 / 2**20 if key.endswith("bytes") else 1.0
            shown = ", ".join(f"{v * scale_by:.2f}" for v in values)
            print(f"  {key:<28} {statistics.median(values) * scale_by:>10.2f}"
                  f"   ({shown})")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1,5,10")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"skipped: corpus not found at {CORPUS}", file=sys.stderr)
        return 0
    rows = bench([int(s) for s in args.scales.split(",")], args.runs, args.rounds)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
