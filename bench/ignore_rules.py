"""What a huge .gitignore costs per walked file (issues #17, #25).

Builds (under /tmp/docindex-bench/ignore) a tree of ``--files`` Markdown files
in 50 folders and, per case, a root ``.gitignore`` of ``--patterns`` lines:

- ``none``: no .gitignore (the walk's own overhead);
- ``literal``: paths and names (``gen/d7/f12.md``, ``name123.md``), the shape
  of generated ignore lists;
- ``mixed``: a third literal names, a third ``*.ext`` suffixes, a third
  anchored globs (``d123/*.md``);
- ``globs`` (only with ``--cases``): unanchored globs with no literal key
  (``*x123*``), the case no lookup table helps: still one regex per pattern
  per file.

Each case is walked ``--runs`` times with the public ``walk()`` over a small
and a large tree (``--files SMALL,LARGE``); from the medians it prints the
marginal cost per walked file, ``(T_large - T_small) / (LARGE - SMALL)``, and
the fixed cost per walk (reading and compiling the rules). Run it from two
checkouts to compare (the old code needs small trees: ``--files 20,120``).

Usage: nice python bench/ignore_rules.py [--files 200,2000] [--patterns 100000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from docindex.walker import FileEntry, WalkOptions, walk

BASE = Path("/tmp/docindex-bench/ignore")


def build(files: int) -> Path:
    root = BASE / f"tree-{files}"
    if not root.is_dir():
        for i in range(files):
            path = root / f"d{i % 50}" / f"f{i}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# file {i}\n")
    return root


def rules(case: str, n: int) -> str:
    if case == "literal":
        lines = [f"gen/d{i % 50}/f{i}.md" if i % 2 else f"name{i}.md" for i in range(n)]
    elif case == "mixed":
        kinds = (lambda i: f"name{i}.md", lambda i: f"*.x{i}", lambda i: f"d{i}/*.md")
        lines = [kinds[i % 3](i) for i in range(n)]
    elif case == "globs":
        lines = [f"*x{i}*" for i in range(n)]
    else:
        return ""
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", default="200,2000", help="SMALL,LARGE tree sizes")
    ap.add_argument("--patterns", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cases", default="none,literal,mixed")
    args = ap.parse_args()
    small, large = (int(n) for n in args.files.split(","))
    roots = {n: build(n).resolve() for n in (small, large)}
    print(f"{'case':8} {'ms per file':>12} {'fixed ms':>9} {'kept':>5}  (medians of "
          f"{args.runs} walks of {small} and {large} files)")  # fmt: skip
    for case in args.cases.split(","):
        medians = {}
        kept = 0
        for n, root in roots.items():
            (root / ".gitignore").write_text(rules(case, args.patterns))
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                entries = walk([root], WalkOptions())
                kept = sum(isinstance(e, FileEntry) for e in entries)
                times.append(time.perf_counter() - t0)
            medians[n] = statistics.median(times) * 1000
            (root / ".gitignore").unlink()
        per_file = (medians[large] - medians[small]) / (large - small)
        fixed = medians[small] - per_file * small
        print(f"{case:8} {per_file:12.4f} {fixed:9.1f} {kept:5}")


if __name__ == "__main__":
    main()
