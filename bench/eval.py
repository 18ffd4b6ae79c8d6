"""Retrieval quality: ``docindex eval`` in every mode next to a BM25 baseline (issue #3).

Runs, in one go, on ``../shared/eval/scifact`` (all 300 judged test queries),
``../shared/eval/zh-cmrc2018`` and ``../shared/eval/ko-korquad1`` (300 judged
queries each, sampled with seed 13):

- ``docindex eval SET --mode MODES --json`` (a subprocess: exactly what users
  run), both views (the default chunk list and ``--files``, issue #21);
- BM25 baselines with bm25s over the same documents (title + text) and the
  same queries: PyStemmer's Snowball English stemmer and English stopwords
  for latin sets; character unigrams + bigrams for CJK sets, and for Korean
  also plain words (whitespace/punctuation-separated, case-folded: "word
  BM25", the baseline of issue #21).

Prints one table (nDCG@10, Recall@100, MRR@10). Needs the ``dev`` extra
(bm25s, PyStemmer). Skips with a message when ``../shared`` is absent.

Usage: python bench/eval.py [--json] [--sets scifact,zh-cmrc2018,ko-korquad1]
                          [--modes all|auto|lexical|semantic]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from _common import SHARED_DIR

ROOT = Path(__file__).resolve().parents[1]
SHARED = SHARED_DIR / "eval"
# name -> sampled queries (None: all)
SETS: dict[str, int | None] = {"scifact": None, "zh-cmrc2018": 300, "ko-korquad1": 300}
SEED = 13
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CJK_RUN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+|[^\W_]+"
)


def cjk_tokens(text: str) -> list[str]:
    """Character unigrams + bigrams for CJK runs; lower-cased words otherwise."""
    out: list[str] = []
    for run in _CJK_RUN.findall(text.casefold()):
        if _CJK.match(run):
            out.extend(run)
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            out.append(run)
    return out


_WORD = re.compile(r"[^\W_]+")


def word_tokens(text: str) -> list[str]:
    """Case-folded words split at whitespace and punctuation (Korean word BM25)."""
    return _WORD.findall(text.casefold())


def bm25_baseline(
    folder: Path, n_queries: int | None, words: bool = False
) -> dict[str, object]:
    """nDCG@10 / Recall@100 / MRR@10 of bm25s on a BEIR set (same queries as eval).

    ``words``: plain word tokens instead of the set's usual tokens.
    """
    import bm25s
    import Stemmer

    sys.path.insert(0, str(ROOT))
    from docindex.api.evaluate import (
        load_beir,
        mrr_at_k,
        ndcg_at_k,
        recall_at_k,
        sample_queries,
    )

    data = load_beir(folder)
    qids = sample_queries(list(data.queries), n_queries, SEED)
    ids = list(data.corpus)
    texts = [f"{t} {x}" for t, x in data.corpus.values()]
    sample = "".join(texts[:200])
    cjk = len(_CJK.findall(sample)) > 0.3 * max(1, sum(c.isalnum() for c in sample))
    started = time.perf_counter()
    retriever = bm25s.BM25()
    queries = [data.queries[q] for q in qids]
    if words:
        retriever.index([word_tokens(t) for t in texts], show_progress=False)
        q_tokens = [word_tokens(q) for q in queries]
    elif cjk:
        retriever.index([cjk_tokens(t) for t in texts], show_progress=False)
        q_tokens = [cjk_tokens(q) for q in queries]
    else:
        stemmer = Stemmer.Stemmer("english")
        retriever.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
            show_progress=False,
        )
        q_tokens = bm25s.tokenize(
            queries, stopwords="en", stemmer=stemmer, show_progress=False,
            return_ids=False,
        )  # fmt: skip
    ndcg = recall = mrr = 0.0
    k = min(100, len(ids))
    for qid, tokens in zip(qids, q_tokens, strict=True):
        tokens = [t for t in tokens if t]
        ranked: list[str] = []
        if tokens:
            docs, scores = retriever.retrieve([tokens], k=k, show_progress=False)
            ranked = [
                ids[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0
            ]
        rels = data.qrels[qid]
        ndcg += ndcg_at_k(ranked, rels, 10)
        recall += recall_at_k(ranked, rels, 100)
        mrr += mrr_at_k(ranked, rels, 10)
    n = max(1, len(qids))
    return {
        "mode": "bm25s"
        + (" (words)" if words else " (char 1+2-grams)" if cjk else " (Snowball)"),
        "view": "",
        "ndcg_at_10": round(ndcg / n, 4), "recall_at_100": round(recall / n, 4),
        "mrr_at_10": round(mrr / n, 4), "queries": len(qids),
        "seconds": round(time.perf_counter() - started, 1),
    }  # fmt: skip


def docindex_eval(
    folder: Path, n_queries: int | None, modes: str = "all"
) -> dict[str, object]:
    """Run ``docindex eval --mode MODES --json`` (both views) as a user would."""
    cmd = [sys.executable, "-m", "docindex", "eval", str(folder), "--mode", modes,
           "--json", "--seed", str(SEED)]  # fmt: skip
    if n_queries:
        cmd += ["--queries", str(n_queries)]
    started = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    report: dict[str, object] = json.loads(out.stdout)
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--sets", default=",".join(SETS), help="comma-separated set names"
    )
    parser.add_argument(
        "--modes", default="all", choices=("all", "auto", "lexical", "semantic")
    )
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"skipped: shared evaluation data not found at {SHARED}", file=sys.stderr)
        return 0
    rows: list[dict[str, object]] = []
    for name in args.sets.split(","):
        folder = SHARED / name
        if not folder.is_dir():
            print(f"skipped {name}: {folder} not found", file=sys.stderr)
            continue
        n = SETS.get(name)
        print(f"{name}: docindex eval ...", file=sys.stderr, flush=True)
        report = docindex_eval(folder, n, args.modes)
        for m in report["modes"]:  # type: ignore[union-attr]
            rows.append({"set": name, **m})
        print(f"{name}: bm25s baseline ...", file=sys.stderr, flush=True)
        rows.append({"set": name, **bm25_baseline(folder, n)})
        if name.startswith("ko"):
            rows.append({"set": name, **bm25_baseline(folder, n, words=True)})
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    header = (
        f"{'set':<13} {'engine':<26} {'view':<7} {'nDCG@10':>8} {'R@100':>7} "
        f"{'MRR@10':>7} {'queries':>7}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        engine = (
            r["mode"] if str(r["mode"]).startswith("bm25s") else f"docindex {r['mode']}"
        )
        print(
            f"{r['set']:<13} {engine:<26} {r['view']:<7} {r['ndcg_at_10']:>8.4f} "
            f"{r['recall_at_100']:>7.4f} {r['mrr_at_10']:>7.4f} {r['queries']:>7}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
