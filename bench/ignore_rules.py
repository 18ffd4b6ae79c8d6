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

Per case it prints the median of ``--runs`` for: reading and compiling the
rules (``PathRules(root)``), deciding every file of the tree the way the
walker does (``PathRules.excluded`` with the folder's ``DirRules``: the
per-file cost, in microseconds), and a whole ``walk()``.

Usage: nice python bench/ignore_rules.py [--files 2000] [--patterns 100000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from docindex.ingest.walker import FileEntry, PathRules, WalkOptions, walk

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
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--patterns", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cases", default="none,literal,mixed")
    args = ap.parse_args()
    root = build(args.files).resolve()
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
    split = [f.split("/") for f in files]
    print(f"{'case':8} {'compile ms':>10} {'us per file':>11} {'walk ms':>8} "
          f"{'kept':>5}  (medians of {args.runs}, {len(files)} files)")  # fmt: skip
    for case in args.cases.split(","):
        (root / ".gitignore").write_text(rules(case, args.patterns))
        compile_s, decide_s, walk_s = [], [], []
        kept = 0
        for _ in range(args.runs):
            t0 = time.perf_counter()
            path_rules = PathRules(root)
            t1 = time.perf_counter()
            top = path_rules.top()
            folders = {
                d: path_rules.enter(top, d, path_rules.excluded(top, d, True))
                for d, _ in split
            }
            t1b = time.perf_counter()
            kept = sum(
                not path_rules.excluded(folders[d], name, False) for d, name in split
            )
            t2 = time.perf_counter()
            sum(isinstance(e, FileEntry) for e in walk([root], WalkOptions()))
            t3 = time.perf_counter()
            compile_s.append(t1 - t0)
            decide_s.append(t2 - t1b)
            walk_s.append(t3 - t2)
        med = statistics.median
        print(f"{case:8} {med(compile_s) * 1e3:10.1f} "
              f"{med(decide_s) * 1e6 / len(files):11.2f} "
              f"{med(walk_s) * 1e3:8.1f} {kept:5}")  # fmt: skip
    (root / ".gitignore").unlink()


if __name__ == "__main__":
    main()
