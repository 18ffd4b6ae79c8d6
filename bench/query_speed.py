"""Query speed on a 100k+-segment index, and scan time with and without vectors (issue #3).

Builds (once, cached under /tmp/docindex-bench/speed) an index over enough
copies of ``../shared/corpus/docs`` to pass 100,000 segments, then measures:

- in-process ``search()`` latency, auto mode, top 10 (every query run
  ``--runs`` times; median and p90 over all runs);
- whole-process ``docindex query TEXT --json`` wall time (median of runs);
- with ``--scan``: a fresh scan of one corpus copy with the default ``ngram``
  provider and with ``embedding_provider=none``, in this process (warm imports)
  and as a whole ``docindex scan`` process, alternating (medians of
  ``--scan-runs``).

The machine has 2 shared cores: figures are noisy, so each is a median.

Usage: python bench/query_speed.py [--runs 5] [--process-runs 9] [--scan]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_DIR, docindex_cmd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = SHARED_DIR / "corpus" / "docs"
CACHE = Path(tempfile.gettempdir()) / "docindex-bench" / "speed"
MIN_SEGMENTS = 100_000
QUERIES = [
    "how do I pass props to a component",
    "useEffect cleanup function",
    "configure the upstream health check",
    "rate limiting plugin",
    "reactive state in vue templates",
    "server side rendering hydration error",
    "rust trait objects and generics",
    "async await error handling",
    "jwt authentication plugin configuration",
    "computed properties versus watchers",
    "线段树",
    "动态规划",
    "组件的生命周期",
    "负载均衡",
    "如何配置路由",
    "最短路算法",
    "memory safety borrow checker",
    "install with docker compose",
    "keyboard accessibility focus",
    "suspense boundary fallback",
]


def _cfg(root: Path, provider: str = "ngram") -> object:
    from docindex.config import Config

    return Config().replace(
        roots=(str(root),), embedding_provider=provider, max_segments=1_000_000,
        max_embedded=1_000_000, max_docs=100_000,
    )  # fmt: skip


def build_index(force: bool = False) -> tuple[Path, object, int]:
    """The cached 100k+-segment index (built on first use)."""
    from docindex.ingest.indexer import scan
    from docindex.store import Store

    docs = CACHE / "docs"
    db = CACHE / "index.db"
    if force and CACHE.exists():
        shutil.rmtree(CACHE)
    cfg = _cfg(docs)
    if db.exists():
        try:
            with Store.open(db) as store:
                from docindex.ingest.indexer import check_settings

                check_settings(store, cfg)  # type: ignore[arg-type]
                n = store.count_segments()
            if n >= MIN_SEGMENTS:
                return db, cfg, n
        except Exception as exc:  # stale cache from another docindex version
            print(f"rebuilding cached index: {exc}", file=sys.stderr)
        shutil.rmtree(CACHE)
    copies = 0
    n = 0
    docs.mkdir(parents=True, exist_ok=True)
    while n < MIN_SEGMENTS:
        shutil.copytree(CORPUS, docs / f"copy{copies}")
        copies += 1
        started = time.perf_counter()
        with Store.open(db, create=True) as store:
            scan(store, cfg)  # type: ignore[arg-type]
            n = store.count_segments()
        print(f"indexed {copies} corpus copies: {n} segments "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)  # fmt: skip
    return db, cfg, n


def in_process(db: Path, cfg: object, runs: int) -> list[float]:
    """Milliseconds per search(), auto mode, top 10 (first run per query is warm-up)."""
    from docindex.search.engine import QueryOptions, search
    from docindex.store import Store

    opts = QueryOptions(top=10, mode="auto")
    times: list[float] = []
    with Store.open(db) as store:
        for q in QUERIES:
            search(store, q, cfg, opts)  # type: ignore[arg-type]
        for _ in range(runs):
            for q in QUERIES:
                started = time.perf_counter()
                search(store, q, cfg, opts)  # type: ignore[arg-type]
                times.append((time.perf_counter() - started) * 1000)
    return times


def whole_process(db: Path, runs: int) -> list[float]:
    """Seconds of wall time for ``docindex query TEXT --json`` (new process each)."""
    cmd = docindex_cmd()
    times = []
    for i in range(runs):
        q = QUERIES[i % len(QUERIES)]
        started = time.perf_counter()
        subprocess.run([*cmd, "query", q, "--db", str(db), "--json"], check=True,
                       capture_output=True)  # fmt: skip
        times.append(time.perf_counter() - started)
    return times


def all_vectors_cost(db: Path, cfg: object, runs: int) -> float:
    """Median ms to score every vector with one product (the alternative pool)."""
    import numpy as np

    from docindex.embed.quantized import dequantize
    from docindex.ingest.indexer import _embedder
    from docindex.store import Store

    emb = _embedder(cfg)  # type: ignore[arg-type]
    times = []
    with Store.open(db) as store:
        for _ in range(runs):
            started = time.perf_counter()
            ids, blobs = store.all_vectors()
            sims = dequantize(blobs, emb.dim) @ emb.embed([QUERIES[0]])[0]
            np.argpartition(-sims, 200)[:200]
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def scan_times(provider: str) -> tuple[float, float]:
    """(in-process, whole-process) seconds of one fresh scan of one corpus copy."""
    from docindex.ingest.indexer import scan
    from docindex.store import Store

    with tempfile.TemporaryDirectory(prefix="docindex-scan-") as tmp:
        started = time.perf_counter()
        with Store.open(Path(tmp) / "index.db", create=True) as store:
            scan(store, _cfg(CORPUS, provider))  # type: ignore[arg-type]
        inside = time.perf_counter() - started
    cmd = docindex_cmd()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    env["DOCINDEX_EMBEDDING_PROVIDER"] = provider
    with tempfile.TemporaryDirectory(prefix="docindex-scan-") as tmp:
        started = time.perf_counter()
        subprocess.run([*cmd, "scan", str(CORPUS), "--db", f"{tmp}/index.db", "-q"],
                       check=True, env=env, capture_output=True)  # fmt: skip
        whole = time.perf_counter() - started
    return inside, whole


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="in-process rounds")
    parser.add_argument(
        "--process-runs", type=int, default=9, help="whole-process runs"
    )
    parser.add_argument("--scan", action="store_true", help="also time scans")
    parser.add_argument("--scan-runs", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cache")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"skipped: corpus not found at {CORPUS}", file=sys.stderr)
        return 0
    db, cfg, n = build_index(args.rebuild)
    ms = in_process(db, cfg, args.runs)
    ms.sort()
    print(f"index: {db} ({n} segments)")
    print(f"in-process auto top-10: median {statistics.median(ms):.1f} ms, "
          f"p90 {ms[int(len(ms) * 0.9)]:.1f} ms over {len(ms)} queries")  # fmt: skip
    proc = whole_process(db, args.process_runs)
    print(f"whole-process `docindex query`: median {statistics.median(proc):.3f} s "
          f"over {len(proc)} runs")  # fmt: skip
    print(f"scoring all {n} vectors instead of the lexical pool: "
          f"median {all_vectors_cost(db, cfg, 5):.1f} ms per query")  # fmt: skip
    if args.scan:
        # Alternating runs, so drift in the machine's load hits both alike.
        runs: dict[str, list[tuple[float, float]]] = {"ngram": [], "none": []}
        for _ in range(args.scan_runs):
            for provider in runs:
                runs[provider].append(scan_times(provider))
        for i, how in enumerate(("in-process", "whole-process")):
            with_vec = statistics.median(r[i] for r in runs["ngram"])
            without = statistics.median(r[i] for r in runs["none"])
            print(f"scan of one corpus copy, {how}: ngram {with_vec:.2f} s, none "
                  f"{without:.2f} s, ratio {with_vec / without:.2f}x "
                  f"(medians of {args.scan_runs} alternating runs)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
