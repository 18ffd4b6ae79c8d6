"""Query latency the multilingual provider adds, beside the default, interleaved (#47).

Two indexes of the same tree (``--ngram`` and ``--multilingual``, e.g. the ones
``bench/crosslingual.py --combined`` builds) answer the questions of
``bench/questions.jsonl`` in one process each (warm, in-process
``Index.query``), round after round, the two interleaved; then ``--cold``
whole ``docindex query`` processes, interleaved too. Prints the medians per
round and the load average.

Usage: python bench/multilingual_latency.py --ngram DB --multilingual DB
                                            [--rounds 3] [--cold 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUESTIONS = Path(__file__).with_name("questions.jsonl")


def warm(db: Path, queries: list[str]) -> list[float]:
    """Milliseconds per query in one process (the first query not counted)."""
    code = (
        "import json, sys, time, docindex\n"
        "idx = docindex.open(sys.argv[1]); qs = json.loads(sys.argv[2])\n"
        "idx.query(qs[0], top=10)\n"
        "out = []\n"
        "for q in qs:\n"
        "    t = time.perf_counter(); idx.query(q, top=10)\n"
        "    out.append((time.perf_counter() - t) * 1000)\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(db), json.dumps(queries)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    times: list[float] = json.loads(done.stdout)
    return times


def cold(db: Path, query: str) -> float:
    """Wall milliseconds of one ``docindex query`` process."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "docindex", "query", query, "--db", str(db), "--json"],
        capture_output=True, check=True,
    )  # fmt: skip
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ngram", type=Path, required=True)
    parser.add_argument("--multilingual", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold", type=int, default=5)
    args = parser.parse_args()
    queries = [
        json.loads(line)["query"] for line in QUESTIONS.read_text("utf-8").splitlines()
    ]
    dbs = {"ngram": args.ngram, "multilingual": args.multilingual}
    for r in range(args.rounds):
        for name, db in dbs.items():
            ms = warm(db, queries)
            print(f"warm round {r + 1} {name:<13} median {statistics.median(ms):7.1f} ms "
                  f"p90 {sorted(ms)[int(0.9 * len(ms))]:7.1f} ms ({len(ms)} queries) "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    walls: dict[str, list[float]] = {name: [] for name in dbs}
    for _ in range(args.cold):
        for name, db in dbs.items():
            walls[name].append(cold(db, "how do I configure rate limiting in apisix"))
    for name, ms in walls.items():
        print(f"cold {name:<13} " + ", ".join(f"{m:.0f}" for m in ms)
              + f" ms, median {statistics.median(ms):.0f} (load {os.getloadavg()[0]:.2f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
