"""Known-item search on real documentation trees (issue #19).

``bench/known_items.jsonl`` holds queries written from the *content* of one
section of a file under ``../shared/corpus/docs`` (Apache APISIX, react.dev,
Vue, Rust RFCs, OI-wiki; English and Chinese), each with the file and the
section a reader wants. A hit counts when its ``rel_path`` is the file and its
heading path holds the section (compared without case, markup or MDX/VitePress
anchors, so the set stays valid when heading cleaning changes). Prints hit@1,
hit@5 and MRR@10 of the default query (``docindex query --queries FILE
--json``: auto mode, top 10), overall and per language.

Usage: python bench/known_items.py [--db INDEX] [--misses] [--json]

Without ``--db`` the corpus is scanned into a temporary index first (about
half a minute). Skips with a message when ``../shared`` is absent.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import SHARED_DIR

ROOT = Path(__file__).resolve().parents[1]
CORPUS = SHARED_DIR / "corpus" / "docs"
ITEMS = Path(__file__).with_name("known_items.jsonl")
_ANCHOR = re.compile(r"\{/\*.*?\*/\}|\{#[^}]*\}|<[^>]*/>")
_NOT_WORD = re.compile(r"[\W_]+")


def norm(text: str) -> str:
    """Lower-case words of a heading, without markup and explicit anchors."""
    return " ".join(_NOT_WORD.sub(" ", _ANCHOR.sub(" ", text).lower()).split())


def is_hit(hit: dict[str, object], item: dict[str, str]) -> bool:
    """True when ``hit`` lies in the item's file and section."""
    if hit.get("rel_path") != item["file"]:
        return False
    want = norm(item["section"])
    path = hit.get("heading_path") or []
    return any(want in norm(str(h)) for h in path)  # type: ignore[union-attr]


def run(db: Path, items: list[dict[str, str]]) -> list[int | None]:
    """1-based rank of the first correct hit of each item (None: not in the top 10)."""
    queries = "".join(item["query"] + "\n" for item in items)
    out = subprocess.run(
        [sys.executable, "-m", "docindex", "query", "--db", str(db), "--queries",
         "-", "--json", "--top", "10"],
        input=queries, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    ranks: list[int | None] = []
    for item, line in zip(items, out.splitlines(), strict=True):
        hits = json.loads(line)["hits"]
        rank = next((i for i, h in enumerate(hits, 1) if is_hit(h, item)), None)
        ranks.append(rank)
    return ranks


def figures(ranks: list[int | None]) -> dict[str, float]:
    """hit@1, hit@5 and MRR@10 of a list of ranks (also ``known_titles.py``'s)."""
    n = max(1, len(ranks))
    return {
        "n": len(ranks),
        "hit@1": round(sum(r == 1 for r in ranks) / n, 3),
        "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 3),
        "mrr@10": round(sum(1 / r for r in ranks if r) / n, 3),
    }


def scan_corpus(db: Path) -> Path:
    """Scan the shared corpus into ``db`` (also used by ``known_titles.py``)."""
    subprocess.run(
        [sys.executable, "-m", "docindex", "scan", str(CORPUS), "--db", str(db),
         "--quiet"],
        check=True,
    )  # fmt: skip
    return db


def bench_args(description: str) -> argparse.Namespace:
    """``--db``, ``--misses`` and ``--json`` (shared with ``known_titles.py``)."""
    parser = argparse.ArgumentParser(description=description.split("\n")[0])
    parser.add_argument("--db", type=Path, help="an index of the corpus to reuse")
    parser.add_argument("--misses", action="store_true", help="list items not at 1")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args()


def read_items(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of an item file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def main() -> int:
    args = bench_args(__doc__)
    if not CORPUS.is_dir():
        print(f"skipped: {CORPUS} not found")
        return 0
    items = read_items(ITEMS)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db
        if db is None:
            db = scan_corpus(Path(tmp) / "index.db")
        ranks = run(db, items)
    report = {"all": figures(ranks)}
    for lang in ("en", "zh"):
        report[lang] = figures(
            [r for r, i in zip(ranks, items, strict=True) if i["lang"] == lang]
        )
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{'set':<4} {'n':>3} {'hit@1':>6} {'hit@5':>6} {'MRR@10':>7}")
        for name, f in report.items():
            print(
                f"{name:<4} {f['n']:>3} {f['hit@1']:>6.3f} {f['hit@5']:>6.3f} "
                f"{f['mrr@10']:>7.3f}"
            )
    if args.misses:
        for rank, item in zip(ranks, items, strict=True):
            if rank != 1:
                print(f"  rank {rank}: {item['query']}  ->  {item['file']} "
                      f"# {item['section']}", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
