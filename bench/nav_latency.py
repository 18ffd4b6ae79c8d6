"""Median in-process latency of outline, section, show and related (issue #37).

Usage: python bench/nav_latency.py --db INDEX.db [--runs 7] [--top 10]
       [--case FILE HEADING TARGET] ...

Runs each navigation command through the public API (``docindex.open``) in
this one process, as MCP, the warm server or a library user does: per case
(a file, a heading of it, a ``show`` target), one first call (the cold
figure: imports, page cache, the decoded vectors ``related`` keeps; with
``--warm`` they are loaded before it, as ``docindex mcp`` does at start), then
``--runs`` calls whose median, min and max are printed in milliseconds. The
default cases are React pages of ``../shared/corpus/docs``; run it from that
folder's parent or give absolute paths.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import docindex

REACT = "en/react.dev/src/content/reference/react"
CASES = [
    (f"{REACT}/useEffect.md", "useEffect(setup, dependencies?) > Parameters",
     f"{REACT}/useEffect.md#reference"),
    (f"{REACT}/useState.md", "useState(initialState) > Parameters",
     f"{REACT}/useState.md#usage"),
    (f"{REACT}/hooks.md", "Effect Hooks", f"{REACT}/hooks.md:60"),
]  # fmt: skip


def _time(call: Callable[[], object], runs: int) -> tuple[float, list[float]]:
    started = time.perf_counter()
    call()
    first = (time.perf_counter() - started) * 1000
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return first, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--warm", action="store_true",
                        help="call Index.warm() first, as `docindex mcp` does at start")  # fmt: skip
    parser.add_argument("--case", nargs=3, action="append",
                        metavar=("FILE", "HEADING", "TARGET"))  # fmt: skip
    args = parser.parse_args()
    index = docindex.open(args.db)
    if args.warm:
        started = time.perf_counter()
        kept = index.warm()
        took = (time.perf_counter() - started) * 1000
        print(f"warm(): {kept} vectors in {took:.1f} ms (before the first call)")
    print(f"{'command':8} {'case':28} {'first':>8} {'median':>8} {'min':>7} {'max':>7}")
    for file, heading, target in args.case or CASES:
        calls: dict[str, Callable[[], object]] = {
            "related": lambda f=file: index.related(f, top=args.top),
            "outline": lambda f=file: index.outline(f),
            "section": lambda f=file, h=heading: index.section(f, h),
            "show": lambda t=target: index.show(t, context=1),
        }
        for name, call in calls.items():
            first, times = _time(call, args.runs)
            print(
                f"{name:8} {file.rsplit('/', 1)[-1][:28]:28} {first:8.1f}"
                f" {statistics.median(times):8.1f} {min(times):7.1f}"
                f" {max(times):7.1f}  ms ({args.runs} runs)"
            )


if __name__ == "__main__":
    main()
