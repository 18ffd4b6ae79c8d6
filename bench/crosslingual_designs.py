"""What to embed per document or chunk: dense retrieval alone, zh->en (issue #47).

Reads an index of the English tree that ``bench/crosslingual.py`` built with
the ``ngram`` provider (its segments, headings and texts), embeds each
design's passages with the ``multilingual`` provider's model, and ranks the
English pages for the Chinese questions of the dev set by cosine alone (a
chunk design scores a page by its best chunk). Prints nDCG@10 and hit@3 on
the dev half and overall, the tokens embedded and the wall time (with the
load average): the cost of each design, extrapolated to the whole tree.

Usage: python bench/crosslingual_designs.py --db EN_NGRAM_INDEX
                                            [--designs a,b] [--direction zh-en]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from crosslingual import dev_set

from docindex.embed.multilingual import MultilingualEmbedder
from docindex.store import open_index
from docindex.text.fields import document_input, embed_input

# name -> (unit, max_tokens, headings, chunks per document); "both" embeds
# the document (doc-256) and its first chunks (chunk-64-first8), a page
# scoring its best passage.
DESIGNS = {
    "doc-128": ("document", 128, True, 0),
    "doc-256": ("document", 256, True, 0),
    "doc-512": ("document", 512, True, 0),
    "doc-256-noheadings": ("document", 256, False, 0),
    "chunk-64-first8": ("chunk", 64, True, 8),
    "chunk-128-first8": ("chunk", 128, True, 8),
    "both": ("both", 0, True, 8),
}


def passages(
    db: Path, unit: str, headings: bool, per_doc: int
) -> tuple[list[str], list[str]]:
    """(owner page rel_path, passage) for every document or its first chunks."""
    store = open_index(db, readonly=True)
    try:
        docs, _ = store.documents()
        owners, texts = [], []
        for d in docs:
            segs = store.segments_of(d.id)
            if not segs:
                continue
            body = store.body(d.id)
            title = segs[0].title
            rel = f"{segs[0].root.rstrip('/').rsplit('/', 1)[-1]}/{d.rel_path}"
            if unit == "document":
                names = [h for s in segs for h in s.heading] if headings else []
                owners.append(rel)
                texts.append(document_input(title, names, body))
            else:
                for s in segs[:per_doc]:
                    owners.append(rel)
                    texts.append(
                        embed_input(title, s.heading, body[s.char_start : s.char_end])
                    )
        return owners, texts
    finally:
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--designs", default=",".join(DESIGNS))
    parser.add_argument("--direction", default="zh-en")
    args = parser.parse_args()
    items = dev_set(args.direction)
    print(
        f"{'design':<20} {'half':<5} {'nDCG@10':>8} {'hit@3':>6} {'passages':>8} "
        f"{'tokens':>8} {'embed s':>8} {'tok/s':>6} {'load':>5}",
        flush=True,
    )
    for name in args.designs.split(","):
        unit, cap, headings, per_doc = DESIGNS[name]
        parts = (
            [("document", 256, 0), ("chunk", 64, per_doc)]
            if unit == "both"
            else [(unit, cap, per_doc)]
        )
        owners, mats, tokens, took = [], [], 0, 0.0
        for part_unit, part_cap, part_n in parts:
            part_owners, texts = passages(args.db, part_unit, headings, part_n)
            emb = MultilingualEmbedder(max_tokens=part_cap)
            emb.embed(["warm up"])  # the engine's load is no part of the cost
            tokens += sum(
                min(part_cap, emb._load().token_count(t, False)) for t in texts
            )
            started = time.perf_counter()
            mats.append(np.concatenate(
                [emb.embed(texts[i : i + 64]) for i in range(0, len(texts), 64)]
            ))  # fmt: skip
            took += time.perf_counter() - started
            owners += part_owners
        matrix = np.concatenate(mats)
        load = os.getloadavg()[0]
        queries = np.stack([emb.embed_query(i["query"]) for i in items])
        sims = queries @ matrix.T
        ranks = []
        for q, item in enumerate(items):
            order = np.argsort(-sims[q])
            pages: list[str] = []
            for j in order:
                if owners[j] not in pages:
                    pages.append(owners[j])
                if len(pages) == 10:
                    break
            ranks.append(
                pages.index(item["answer"]) + 1 if item["answer"] in pages else None
            )
        for half in ("dev", "all"):
            chosen = [
                r
                for r, i in zip(ranks, items, strict=True)
                if half == "all" or i["half"] == half
            ]
            n = max(1, len(chosen))
            ndcg = sum(1 / math.log2(r + 1) for r in chosen if r) / n
            hit3 = sum(1 for r in chosen if r and r <= 3) / n
            print(
                f"{name:<20} {half:<5} {ndcg:>8.4f} {hit3:>6.3f} {len(owners):>8} "
                f"{tokens:>8} {took:>8.1f} {tokens / took:>6.0f} {load:>5.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
