"""Title known-items: the page whose title or file name *is* the query's key term (#21).

``bench/known_titles.jsonl`` holds 30 short queries over ``../shared/corpus/docs``
(APISIX plugins, React and Vue reference pages, OI-wiki sections; English and
Chinese) whose key term is a page's title, file name or top heading, with the
files that answer it (a page and its translation both count). Other pages
mention the term often (``limit-count`` and ``graphql-limit-count``), so the
page that *is* the term must win on its fields. Prints hit@1, hit@5 and
MRR@10 of the default chunk list and of ``--files`` (auto mode, top 10).
The content-written known-item set of issue #19 is ``bench/known_items.py``.

Usage: python bench/known_titles.py [--db INDEX] [--misses] [--json]

Without ``--db`` the corpus is scanned into a temporary index first.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from known_items import CORPUS, bench_args, figures, read_items, scan_corpus  # noqa: E402

ITEMS = Path(__file__).with_name("known_titles.jsonl")


def ranks(db: Path, items: list[dict[str, object]], files: bool) -> list[int | None]:
    """1-based rank of the first hit in one of an item's files (None: not in the top 10)."""
    queries = "".join(f"{item['query']}\n" for item in items)
    cmd = [sys.executable, "-m", "docindex", "query", "--db", str(db), "--queries", "-",
           "--json", "--top", "10"]  # fmt: skip
    out = subprocess.run(
        cmd + (["--files"] if files else []),
        input=queries, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    got: list[int | None] = []
    for item, line in zip(items, out.splitlines(), strict=True):
        hits = json.loads(line)["hits"]
        want = item["files"]
        assert isinstance(want, list)
        got.append(
            next((i for i, h in enumerate(hits, 1) if h["rel_path"] in want), None)
        )
    return got


def main() -> int:
    args = bench_args(__doc__)
    if not CORPUS.is_dir():
        print(f"skipped: {CORPUS} not found")
        return 0
    items = read_items(ITEMS)
    report: dict[str, dict[str, float]] = {}
    misses: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db
        if db is None:
            db = scan_corpus(Path(tmp) / "index.db")
        for view in ("chunks", "files"):
            found = ranks(db, items, view == "files")
            report[view] = figures(found)
            misses += [
                f"  {view}: rank {r}: {item['query']}"
                for r, item in zip(found, items, strict=True)
                if r != 1
            ]
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{'view':<7} {'n':>3} {'hit@1':>6} {'hit@5':>6} {'MRR@10':>7}")
        for name, f in report.items():
            print(f"{name:<7} {len(items):>3} {f['hit@1']:>6.3f} {f['hit@5']:>6.3f} "
                  f"{f['mrr@10']:>7.3f}")  # fmt: skip
    if args.misses:
        print("\n".join(misses), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
