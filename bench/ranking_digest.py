"""Every ranked answer of the judged sets, to prove a change keeps them (issue #46).

``dump`` writes, for the code importable as ``docindex`` (run it with
``PYTHONPATH=OTHER_TREE`` to dump another version), one JSON file: each
question of ``bench/questions.jsonl``, ``bench/known_items.jsonl`` and
``bench/known_titles.jsonl`` on an index of ``../shared/corpus/docs``, and
each judged query of the ``bench/eval.py`` sets (SciFact all 300, CMRC2018
and KorQuAD 300 sampled with seed 13), in modes auto and lexical (and
semantic for the eval sets), both views (chunks and ``--files``): the top 10
hits' chunk ids and scores (the eval sets: top 100, ids only past 10).
Every index is built by the dumping code itself, in a temporary folder.

``compare A B`` prints every query whose ids differ or whose scores differ
by more than ``--tol`` (1e-6), and a count; exit 1 when any does.

Usage: python bench/ranking_digest.py dump OUT.json [--sets corpus,eval]
       python bench/ranking_digest.py compare A.json B.json [--tol 1e-6]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_DIR  # noqa: E402

HERE = Path(__file__).resolve().parent
CORPUS = SHARED_DIR / "corpus" / "docs"
EVAL_SETS: dict[str, int | None] = {
    "scifact": None, "zh-cmrc2018": 300, "ko-korquad1": 300,
}  # fmt: skip
SEED = 13


def _ranked(store: Any, cfg: Any, text: str, mode: str, files: bool, top: int) -> list:
    """[chunk id, fused score, raw bm25, document score] of each hit (``--explain``
    rounds them to 1e-6; a hit's own ``score`` to 1e-4)."""
    from docindex.models import QueryOptions
    from docindex.search.engine import parse, search

    opts = QueryOptions(top=top, mode=mode, files=files, snippet_chars=20,
                        highlight=False, explain=True)  # fmt: skip
    with store.atomic(immediate=False):
        hits = search(store, parse(text, cfg), cfg, opts).hits
    out = []
    for h in hits:
        ex = h.explain or {}
        lex = ex.get("lexical")
        doc = ex.get("document")
        out.append([
            h.chunk_id, ex.get("fused", h.score),
            lex["raw"] if isinstance(lex, dict) else None,
            doc["raw"] if isinstance(doc, dict) else None,
        ])  # fmt: skip
    return out


def _corpus(out: dict[str, Any], tmp: Path) -> None:
    import docindex
    from docindex.api import workspace

    db = tmp / "corpus.db"
    t0 = time.perf_counter()
    docindex.open(db, roots=[CORPUS]).scan()
    out["corpus_scan_s"] = round(time.perf_counter() - t0, 2)
    queries: list[str] = []
    for name in ("questions", "known_items", "known_titles"):
        path = HERE / f"{name}.jsonl"
        queries += [json.loads(x)["query"] for x in path.read_text().splitlines() if x]
    ws = workspace.load(str(db))
    with ws.open(readonly=False, mapped=True) as store:
        for mode in ("auto", "lexical"):
            for files in (False, True):
                key = f"corpus/{mode}/{'files' if files else 'chunks'}"
                out[key] = {
                    q: _ranked(store, ws.config, q, mode, files, 10) for q in queries
                }


def _eval(out: dict[str, Any], tmp: Path) -> None:
    from docindex.api.evaluate import load_beir, sample_queries, write_corpus
    from docindex.config import Config
    from docindex.ingest.indexer import scan
    from docindex.store import Store

    for name, n in EVAL_SETS.items():
        folder = SHARED_DIR / "eval" / name
        data = load_beir(folder)
        qids = sample_queries(list(data.queries), n, SEED)
        docs = tmp / name
        write_corpus(data, docs)
        cfg = Config().replace(roots=(str(docs.resolve()),),
                               max_docs=max(Config().max_docs, len(data.corpus)))  # fmt: skip
        db = tmp / f"{name}.db"
        with Store.open(db, create=True) as store:
            scan(store, cfg)
            for mode in ("auto", "lexical", "semantic"):
                for files in (False, True):
                    key = f"{name}/{mode}/{'files' if files else 'chunks'}"
                    got = {}
                    for q in qids:
                        r = _ranked(store, cfg, data.queries[q], mode, files, 100)
                        got[q] = [x if i < 10 else [x[0]] for i, x in enumerate(r)]
                    out[key] = got


def dump(path: Path, sets: list[str]) -> None:
    import docindex

    out: dict[str, Any] = {"docindex": str(Path(docindex.__file__).parent)}
    with tempfile.TemporaryDirectory(prefix="ranking-digest-") as tmp:
        if "corpus" in sets:
            _corpus(out, Path(tmp))
        if "eval" in sets:
            _eval(out, Path(tmp))
    path.write_text(json.dumps(out, ensure_ascii=False, indent=0))
    print(f"{path}: {sum(len(v) for v in out.values() if isinstance(v, dict))} "
          f"queries from {out['docindex']}")  # fmt: skip


def compare(a_path: Path, b_path: Path, tol: float) -> int:
    a = json.loads(a_path.read_text())
    b = json.loads(b_path.read_text())
    bad = total = 0
    worst = 0.0
    for key in sorted(k for k, v in a.items() if isinstance(v, dict)):
        if key not in b:
            print(f"{key}: missing in {b_path}")
            bad += 1
            continue
        for q, hits in a[key].items():
            total += 1
            other = b[key].get(q)
            ids_a = [h[0] for h in hits]
            ids_b = [h[0] for h in other] if other is not None else None
            diff = 0.0
            if ids_a == ids_b:
                diff = max(
                    (abs(u - v) for x, y in zip(hits, other, strict=True)
                     for u, v in zip(x[1:], y[1:], strict=False)
                     if u is not None and v is not None),
                    default=0.0,
                )  # fmt: skip
                worst = max(worst, diff)
            if ids_a != ids_b or diff > tol + 1e-12:
                bad += 1
                print(f"{key} {q!r}: ids {'same' if ids_a == ids_b else 'differ'}, "
                      f"max score diff {diff:.2e}")  # fmt: skip
    print(
        f"{total} queries compared, {bad} differ (tolerance {tol}); "
        f"largest score difference among same ids {worst:.2e}"
    )
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--sets", default="corpus,eval")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--tol", type=float, default=1e-6)
    args = ap.parse_args()
    if args.cmd == "dump":
        if not CORPUS.is_dir():
            print(f"skipped: {CORPUS} not found")
            return 0
        dump(args.out, args.sets.split(","))
        return 0
    return compare(args.a, args.b, args.tol)


if __name__ == "__main__":
    sys.exit(main())
