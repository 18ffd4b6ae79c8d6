"""Median in-process latency of outline, section, show and related (issue #37).

Usage: python bench/nav_latency.py --db INDEX.db FILE [HEADING] [--runs 7]

Prints one line per command: its median and min/max in milliseconds over
``--runs`` calls (after one warm-up call), each on the open process.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from docindex.api import commands


def _time(call: Callable[[], object], runs: int) -> list[float]:
    call()  # warm-up: imports and the page cache
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("file")
    parser.add_argument("heading", nargs="?", default=None)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    db, file = args.db, args.file
    calls: dict[str, Callable[[], object]] = {
        "outline": lambda: commands.outline(db, file),
        "show": lambda: commands.show(db, file),
        "related": lambda: commands.related(db, file, top=5),
    }
    if args.heading:
        calls["section"] = lambda: commands.section(db, file, args.heading)
    for name, call in calls.items():
        times = _time(call, args.runs)
        print(
            f"{name:8} median {statistics.median(times):7.1f} ms"
            f"  (min {min(times):.1f}, max {max(times):.1f}, {args.runs} runs)"
        )


if __name__ == "__main__":
    main()
