"""The judged sets with the ``multilingual`` provider, at several weights (#47).

``docindex eval`` builds a throwaway index per run, and the model embeds a
few hundred tokens a second on a shared 2-core machine: embedding SciFact
(5,183 abstracts) takes many minutes. This bench builds each set's index
once in ``--workdir`` (kept: a later run finds every document unchanged and
embeds nothing) and scores ``auto`` mode, both views, at each
``multilingual_weight`` asked for, with the set's usual query sample (SciFact: all
300 judged test queries; CMRC 2018 and KorQuAD: 300 sampled with seed 13,
as ``bench/eval.py``). The default provider's figures are
``bench/eval.py``'s.

Usage: python bench/multilingual_eval.py [--sets a,b] [--weights 1,2]
                                         [--workdir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from _common import SHARED_DIR

from docindex.api.evaluate import evaluate
from docindex.config import Config

SETS = {"scifact": None, "zh-cmrc2018": 300, "ko-korquad1": 300}
SEED = 13


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--weights", default="1,2")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/docindex-ml-eval"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for name in args.sets.split(","):
        folder = SHARED_DIR / "eval" / name
        if not folder.is_dir():
            print(f"skipped {name}: {folder} not found", file=sys.stderr)
            continue
        work = args.workdir / name
        work.mkdir(parents=True, exist_ok=True)
        for weight in (float(w) for w in args.weights.split(",")):
            cfg = Config(embedding_provider="multilingual", multilingual_weight=weight)
            started = time.perf_counter()
            report = evaluate(folder, modes=("auto",), n_queries=SETS.get(name),
                              seed=SEED, cfg=cfg, workdir=work)  # fmt: skip
            for m in report.modes:
                rows.append({
                    "set": name, "weight": weight, "view": m.view,
                    "ndcg_at_10": m.ndcg_at_10, "recall_at_100": m.recall_at_100,
                    "mrr_at_10": m.mrr_at_10, "queries": m.queries,
                    "median_query_ms": m.median_query_ms,
                    "index_s": round(report.index_ms / 1000, 1),
                    "run_s": round(time.perf_counter() - started, 1),
                    "load": round(os.getloadavg()[0], 2),
                })  # fmt: skip
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"{'set':<13} {'weight':>6} {'view':<7} {'nDCG@10':>8} {'R@100':>7} "
          f"{'MRR@10':>7} {'index s':>8} {'q ms':>6} {'load':>5}")  # fmt: skip
    for r in rows:
        print(f"{r['set']:<13} {r['weight']:>6} {r['view']:<7} {r['ndcg_at_10']:>8.4f} "
              f"{r['recall_at_100']:>7.4f} {r['mrr_at_10']:>7.4f} {r['index_s']:>8} "
              f"{r['median_query_ms']:>6} {r['load']:>5}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
