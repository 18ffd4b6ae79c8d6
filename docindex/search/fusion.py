"""Fusing ranked lists into one score in [0, 1]: weighted scores (default) or RRF.

Normalised weighted scores measured better than RRF on the judged sets
(README, "How ranking works"); RRF stays an option (``fusion = "rrf"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from docindex.config import Config
from docindex.search.semantic import dense_weight


def rrf(
    lists: Sequence[Sequence[int]], weights: Sequence[float], k: float = 60.0
) -> dict[int, float]:
    """Weighted Reciprocal Rank Fusion, normalised to [0, 1].

    Args:
        lists: ranked id lists, best first.
        weights: one weight per list.
        k: the RRF constant.

    Returns:
        id -> fused score / best possible score.
    """
    best = sum(w / (k + 1) for w, lst in zip(weights, lists, strict=True) if lst)
    if best <= 0:
        return {}
    scores: dict[int, float] = {}
    for weight, ids in zip(weights, lists, strict=True):
        for rank, doc in enumerate(ids, start=1):
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
    return {doc: min(1.0, s / best) for doc, s in scores.items()}


def fuse_scores(
    lists: Mapping[str, Sequence[tuple[int, float]]], weights: Mapping[str, float]
) -> dict[int, float]:
    """Weighted mean of max-normalised raw scores, in [0, 1].

    Args:
        lists: list name -> (id, raw score) pairs; higher raw is better.
        weights: list name -> weight (a missing name weighs 1.0).

    Returns:
        id -> sum of ``w * raw / max raw`` over the lists, divided by the sum
        of the weights of the non-empty lists. Raw scores <= 0 count 0.
    """
    total = 0.0
    scores: dict[int, float] = {}
    for name, pairs in lists.items():
        if not pairs:
            continue
        weight = weights.get(name, 1.0)
        total += weight
        top = max(raw for _, raw in pairs)
        if top <= 0:
            continue
        for sid, raw in pairs:
            if raw > 0:
                scores[sid] = scores.get(sid, 0.0) + weight * raw / top
    if total <= 0:
        return {}
    return {sid: min(1.0, s / total) for sid, s in scores.items()}


def fuse(
    lists: dict[str, list[tuple[int, float]]], cfg: Config, dense: float | None = None
) -> dict[int, float]:
    """Fuse the lists that ran with ``cfg.fusion`` (a lone list keeps weight 1).

    ``dense``: the ``semantic`` list's weight for this query, when not the
    setting's (a document-vector provider's, ``semantic.document_vector_weight``).
    """
    weights = {
        "lexical": 1.0,
        "semantic": dense_weight(cfg) if dense is None else dense,
        "ngram": cfg.semantic_weight,
    }
    if len([p for p in lists.values() if p]) <= 1:
        weights = {name: 1.0 for name in lists}
    if cfg.fusion == "rrf":
        names = list(lists)
        return rrf(
            [[sid for sid, _ in lists[n]] for n in names],
            [weights[n] for n in names],
            cfg.rrf_k,
        )
    return fuse_scores(lists, weights)
