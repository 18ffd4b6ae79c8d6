"""``docindex eval``: retrieval quality on a BEIR-layout judged set (issue #3).

A set is a folder with ``corpus.jsonl`` (``{"_id", "title", "text"}``),
``queries.jsonl`` or ``queries-test.jsonl`` (``{"_id", "text"}``) and
``qrels/test.tsv`` (header, then ``query-id corpus-id score``). The harness
writes each document to ``<id>.md`` as ``# title`` plus text in a throwaway
folder, scans it with the normal indexer (so the figures measure exactly what
users get), runs the judged queries (top 100) and reports, per mode and view:

- nDCG@10 with linear gains and a ``log2(rank + 1)`` discount;
- Recall@100: share of a query's relevant documents found in the top 100;
- MRR@10: reciprocal rank of the first relevant document in the top 10.

Two views (issue #21): ``files`` ranks documents (``query --files``);
``chunks`` is the default chunk list of ``query``, read as the documents in
the order of their best chunk (what a reader of the default output meets).

Sets with more judged queries than ``n_queries`` are sampled with
``random.Random(seed)`` over the sorted query ids, so a run is repeatable.
"""

from __future__ import annotations

import json
import math
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.config import Config
from docindex.errors import DocindexError

if TYPE_CHECKING:
    from docindex.store import Index as _Store

MODES = ("auto", "lexical", "semantic")
VIEWS = ("chunks", "files")
DEFAULT_SEED = 13
_SAFE_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,150}")


@dataclass(frozen=True, slots=True)
class BeirSet:
    """A judged retrieval set loaded in memory.

    Attributes:
        name: the folder's name.
        corpus: document id -> (title, text).
        queries: query id -> text (judged queries only).
        qrels: query id -> {document id: graded relevance > 0}.
    """

    name: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class ModeScore:
    """Metrics of one mode in one view, averaged over the queries run."""

    mode: str
    view: str
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    queries: int
    degraded: int
    median_query_ms: float


@dataclass(slots=True)
class EvalReport:
    """What ``docindex eval`` prints (``--json`` keys are these field names)."""

    dataset: str
    documents: int
    queries: int
    judged_queries: int
    seed: int
    index_ms: float = 0.0
    modes: list[ModeScore] = field(default_factory=list)


EvalProgress = Callable[[str, int, int], None]


def load_beir(folder: Path) -> BeirSet:
    """Read a BEIR-layout folder.

    Args:
        folder: holds ``corpus.jsonl``, ``queries-test.jsonl`` or
            ``queries.jsonl``, and ``qrels/test.tsv``.

    Returns:
        The set, with only the queries that have at least one relevant document.

    Raises:
        DocindexError: a file is missing or malformed.
    """
    folder = Path(folder)
    corpus_file = folder / "corpus.jsonl"
    qrels_file = folder / "qrels" / "test.tsv"
    queries_file = next(
        (folder / n for n in ("queries-test.jsonl", "queries.jsonl")
         if (folder / n).is_file()),
        None,
    )  # fmt: skip
    for path in (corpus_file, qrels_file, queries_file):
        if path is None or not path.is_file():
            missing = path or folder / "queries.jsonl"
            raise DocindexError(f"not a BEIR set: {missing} is missing")
    assert queries_file is not None
    corpus: dict[str, tuple[str, str]] = {}
    for rec in _jsonl(corpus_file):
        corpus[str(rec["_id"])] = (
            str(rec.get("title") or ""),
            str(rec.get("text") or ""),
        )
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if n == 0 and not parts[-1].lstrip("-").isdigit():
                continue  # header
            if len(parts) < 3:
                continue
            qid, did, score = parts[0], parts[1], int(parts[2])
            if score > 0 and did in corpus:
                qrels.setdefault(qid, {})[did] = score
    queries = {
        str(rec["_id"]): str(rec.get("text") or "")
        for rec in _jsonl(queries_file)
        if str(rec["_id"]) in qrels
    }
    return BeirSet(folder.name, corpus, queries, {q: qrels[q] for q in queries})


def _jsonl(path: Path) -> list[dict[str, object]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DocindexError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
    return out


def sample_queries(ids: Sequence[str], n: int | None, seed: int) -> list[str]:
    """``n`` query ids drawn with a fixed seed (all of them, sorted, when n is None)."""
    ordered = sorted(ids)
    if n is None or n >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, n))


def ndcg_at_k(ranked: Sequence[str], rels: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k, linear gains, ``log2(rank + 1)`` discount; 0.0 without relevant docs."""
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], rels: Mapping[str, int], k: int = 100) -> float:
    """Share of relevant documents found in the top ``k``."""
    relevant = {d for d, g in rels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], rels: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document in the top ``k`` (else 0)."""
    for i, d in enumerate(ranked[:k], start=1):
        if rels.get(d, 0) > 0:
            return 1.0 / i
    return 0.0


def write_corpus(data: BeirSet, folder: Path) -> dict[str, str]:
    """Write each document as ``<stem>.md`` (``# title`` + text); return stem -> id.

    The stem is the document id when it is a safe file name, else a short
    digest of it, so any id round-trips.
    """
    import hashlib

    folder.mkdir(parents=True, exist_ok=True)
    stems: dict[str, str] = {}
    for did, (title, text) in data.corpus.items():
        stem = did if _SAFE_STEM.fullmatch(did) else (
            "id-" + hashlib.blake2b(did.encode(), digest_size=10).hexdigest()
        )  # fmt: skip
        stems[stem] = did
        head = f"# {title.strip()}\n\n" if title.strip() else ""
        (folder / f"{stem}.md").write_text(f"{head}{text}\n", encoding="utf-8")
    return stems


def evaluate(
    folder: Path,
    *,
    modes: Sequence[str] = MODES,
    views: Sequence[str] = VIEWS,
    n_queries: int | None = None,
    seed: int = DEFAULT_SEED,
    cfg: Config | None = None,
    workdir: Path | None = None,
    on_progress: EvalProgress | None = None,
    server: str | None = None,
) -> EvalReport:
    """Index a BEIR set in a throwaway folder and score the judged queries.

    Args:
        folder: the BEIR-layout set.
        modes: which search modes to score.
        views: ``chunks`` (documents in the order of their best chunk in the
            default chunk list) and/or ``files`` (``--files``).
        n_queries: sample this many judged queries (None: all of them).
        seed: the sampling seed.
        cfg: settings (ranking weights, embedder); roots are replaced.
        workdir: where to build the index (default: a temporary folder that is
            deleted afterwards).
        on_progress: called with (phase, done, total).
        server: a PostgreSQL URL: build the index there, in a new schema
            dropped afterwards, instead of a SQLite file (issue #34).

    Returns:
        An EvalReport with one ModeScore per mode and view, in the order given.
    """
    data = load_beir(folder)
    qids = sample_queries(list(data.queries), n_queries, seed)
    report = EvalReport(data.name, len(data.corpus), len(qids), len(data.queries), seed)
    if workdir is not None:
        return _evaluate_in(data, qids, modes, views, cfg or Config(), Path(workdir),
                            report, on_progress, server)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="docindex-eval-") as tmp:
        return _evaluate_in(data, qids, modes, views, cfg or Config(), Path(tmp),
                            report, on_progress, server)  # fmt: skip


def _evaluate_in(
    data: BeirSet, qids: list[str], modes: Sequence[str], views: Sequence[str],
    cfg: Config, work: Path, report: EvalReport, on_progress: EvalProgress | None,
    server: str | None = None,
) -> EvalReport:  # fmt: skip
    import contextlib

    from docindex.ingest.indexer import scan
    from docindex.store import ServerUrl, open_index

    docs = work / "docs"
    stems = write_corpus(data, docs)
    cfg = cfg.replace(
        roots=(str(docs.resolve()),), max_docs=max(cfg.max_docs, len(stems))
    )
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        where: Path | ServerUrl = work / "index.db"
        if server:
            from docindex.store.postgres import scratch_schema

            where = stack.enter_context(scratch_schema(ServerUrl(server)))
        store: _Store = open_index(where, create=True)
        stack.callback(store.close)
        scan(store, cfg, on_progress=(
            (lambda p: on_progress("index", p.done, p.total or 0)) if on_progress else None
        ))  # fmt: skip
        report.index_ms = round((time.perf_counter() - started) * 1000, 1)
        for mode in modes:
            for view in views:
                report.modes.append(_score(store, data, qids, stems, cfg, mode, view,
                                           on_progress))  # fmt: skip
    return report


def _score(
    store: _Store, data: BeirSet, qids: list[str], stems: Mapping[str, str],
    cfg: Config, mode: str, view: str, on_progress: EvalProgress | None,
) -> ModeScore:  # fmt: skip
    """Run the judged queries in one mode and view; average the metrics."""
    from docindex.models import QueryOptions
    from docindex.search.engine import search

    opts = QueryOptions(top=100, mode=mode, files=view == "files", snippet_chars=20,
                        highlight=False)  # fmt: skip
    ndcg: list[float] = []
    recall: list[float] = []
    mrr: list[float] = []
    took: list[float] = []
    degraded = 0
    for i, qid in enumerate(qids, start=1):
        t0 = time.perf_counter()
        result = search(store, data.queries[qid], cfg, opts)
        took.append((time.perf_counter() - t0) * 1000)
        degraded += result.degraded
        # the documents in the order of their first (best) hit
        ranked = list(dict.fromkeys(_doc_id(h.rel_path, stems) for h in result.hits))
        rels = data.qrels[qid]
        ndcg.append(ndcg_at_k(ranked, rels, 10))
        recall.append(recall_at_k(ranked, rels, 100))
        mrr.append(mrr_at_k(ranked, rels, 10))
        if on_progress:
            on_progress(f"{mode}, {view}", i, len(qids))
    n = max(1, len(qids))
    return ModeScore(
        mode=mode, view=view, ndcg_at_10=round(sum(ndcg) / n, 4),
        recall_at_100=round(sum(recall) / n, 4), mrr_at_10=round(sum(mrr) / n, 4),
        queries=len(qids), degraded=degraded,
        median_query_ms=round(statistics.median(took), 2) if took else 0.0,
    )  # fmt: skip


def _doc_id(rel_path: str, stems: Mapping[str, str]) -> str:
    stem = rel_path.rsplit("/", 1)[-1]
    if stem.endswith(".md"):
        stem = stem[:-3]
    return stems.get(stem, stem)
