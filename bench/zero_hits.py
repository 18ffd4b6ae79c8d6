"""A query with no hits costs what a query with hits does (issue #33).

Builds (once, cached) an index of 3,000 documents cut from
``../shared/corpus/docs`` (under ``ALL_VECTORS_MAX`` segments, so ``--mode
semantic`` would score every vector), then runs whole ``docindex query``
processes, interleaved: a query with hits, one whose word occurs nowhere,
one whose words occur but never together. Prints the median wall time and
peak RSS of each (several runs; the machine is shared, so compare within one
run).

    python bench/zero_hits.py [--runs 7] [--db PATH]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import docindex_cmd, measure  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "docs"
DOCS = 3000
QUERIES = {
    "hits": ["install plugin"],
    "no word known": ["zzqxnonexistentword"],
    "words apart": ["+kubernetes +zzqx"],
    "phrase apart": ['"plugin route upstream install"'],
}


def build(db: Path) -> None:
    root = db.parent / "docs"
    sources = sorted(CORPUS.rglob("*.md"))
    if not sources:
        raise SystemExit(f"no corpus at {CORPUS}")
    root.mkdir(parents=True, exist_ok=True)
    for i in range(DOCS):
        src = sources[i % len(sources)]
        lines = src.read_text(errors="replace").splitlines()[:40]
        (root / f"d{i:04d}.md").write_text("\n".join(lines) + "\n")
    subprocess.run([*docindex_cmd(), "scan", str(root), "--db", str(db), "-q"],
                   check=True)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--db", type=Path,
                        default=Path(tempfile.gettempdir()) / "docindex-bench" / "zero" / "i.db")  # fmt: skip
    args = parser.parse_args()
    if not args.db.is_file():
        build(args.db)
    cmd = docindex_cmd()
    seen: dict[str, list[tuple[float, int]]] = {k: [] for k in QUERIES}
    for _ in range(args.runs):
        for name, query in QUERIES.items():
            got = measure([*cmd, "query", *query, "--db", str(args.db)])
            seen[name].append((float(got["wall_s"]), int(got["max_rss_kb"])))
    print(f"{'query':<16} {'median s':>9} {'min s':>7} {'max s':>7} {'peak MB':>8}")
    for name, runs in seen.items():
        walls = [w for w, _ in runs]
        rss = statistics.median(r for _, r in runs) / 1024
        print(f"{name:<16} {statistics.median(walls):>9.3f} {min(walls):>7.3f} "
              f"{max(walls):>7.3f} {rss:>8.0f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
