"""The vector side of a query: cosine ranking, the language gate, n-gram fallback.

``search`` asks ``semantic_ranking`` for the cosines of the lexical candidates
(auto mode) or of every vector (``--mode semantic`` on a small index); a
gated neural query gets ``ngram_fallback`` instead (issue #9).
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING

from docindex.config import Config
from docindex.embed.choice import Embedder, choose
from docindex.embed.choice import embedder_for as _embedder
from docindex.store import DocFilter, Index

if TYPE_CHECKING:  # imported where used: a lexical query needs no embedder (#24)
    from docindex.embed.ngram import NgramEmbedder

# Providers that run a model (issue #9, #47): vectors tied to that model.
NEURAL = ("minilm", "multilingual")
PURE_PYTHON_MAX = 600  # candidates scored without numpy in a fresh process
PURE_PYTHON_QUERIES = 3  # ... for its first queries; later ones import numpy
# The document-vector list's weight when bm25's chunks hold the whole query
# (``document_vector_weight``), chosen on the dev halves (bench/questions.py,
# bench/crosslingual.py, the judged sets' non-test queries), issue #47.
MATCHED_WEIGHT = 0.25
COVERAGE_CHUNKS = 10  # bm25's best chunks read for the query's coverage


def language_gate(cfg: Config, text: str) -> str | None:
    """Why the dense list is off for this query (neural provider only), or None."""
    if cfg.embedding_provider != "minilm":
        return None  # never import the neural module for the default provider
    from docindex.embed.minilm import dense_gate

    return dense_gate(_embedder(cfg), text)


def dense_weight(cfg: Config) -> float:
    """``neural_weight`` for the minilm list (SciFact: 2.0 > 1.5 > 1.0),
    ``multilingual_weight`` for the multilingual one (issue #47), else
    ``semantic_weight`` (issue #9)."""
    if cfg.embedding_provider not in NEURAL:
        return cfg.semantic_weight  # no embedder built for a lexical query (#24)
    embedder = _embedder(cfg)
    if embedder is not None and embedder.name == "multilingual":
        return cfg.multilingual_weight
    if embedder is not None and embedder.name in NEURAL:
        return cfg.neural_weight
    return cfg.semantic_weight


_FALLBACK = threading.local()  # NgramEmbedders are not thread-safe


def ngram_fallback(
    store: Index, text: str, cfg: Config, lexical: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """Cosine of n-gram vectors made now for the lexical candidates (gated queries).

    A neural index stores no n-gram vectors; when the language gate turns the
    model off, this rebuilds what the default provider would have ranked, over
    at most the lexical pool, so CJK queries rank as with ``ngram`` (issue #9).
    """
    if not lexical:
        return []
    from docindex.embed.ngram import NgramEmbedder
    from docindex.embed.quantized import dequantize, quantize
    from docindex.text.fields import embed_input, title_text

    key = (cfg.embedding_dim, cfg.cjk_ngram, cfg.stem)
    cache: dict[tuple[int, int, bool], NgramEmbedder] | None = getattr(
        _FALLBACK, "cache", None
    )
    if cache is None:
        cache = _FALLBACK.cache = {}
    emb = cache.get(key)
    if emb is None:  # per thread, like embed.embedder_for (issue #17)
        emb = cache[key] = NgramEmbedder(*key)
    ids = [sid for sid, _ in lexical]
    rows = store.segments_by_id(ids)
    ids = [sid for sid in ids if sid in rows]
    inputs = []
    for sid in ids:
        row = rows[sid]
        body = store.body(row.doc_id)[row.char_start : row.char_end]
        title = row.title or title_text(None, row.rel_path)
        inputs.append(embed_input(title, row.heading, body))
    matrix = dequantize(quantize(emb.embed(inputs), emb.bits), emb.dim)
    qt = emb.query_terms(text)
    n_total = max(1, store.max_segment_id())
    dfs = store.doc_freqs(qt)
    idf = {t: math.log(1 + n_total / (1 + dfs.get(t, 0))) for t in qt}
    sims = matrix @ emb.embed([text], weights=idf)[0]
    ranked = sorted(zip(ids, sims.tolist(), strict=True), key=lambda p: (-p[1], p[0]))
    return [(sid, sim) for sid, sim in ranked if sim > 0]


def document_vectors(cfg: Config) -> bool:
    """True for a provider with one vector per document (issue #47)."""
    if cfg.embedding_provider not in NEURAL:
        return False  # no embedder built for the default provider (#24)
    embedder = _embedder(cfg)
    return embedder is not None and embedder.unit == "document"


def document_vector_weights(
    store: Index, lexical: list[tuple[int, float]], weights: dict[str, float],
    cfg: Config,
) -> tuple[float, float]:  # fmt: skip
    """The document-vector list's weights for this query (issue #47)::

        documents: MATCHED_WEIGHT + multilingual_weight * (1 - matched)
        chunks:                     multilingual_weight * (1 - matched)

    ``matched``: the largest share of the query's idf weight that one of the
    COVERAGE_CHUNKS best bm25 chunks holds (``quality.coverage``, what the
    weak-match hint reads). A question bm25 cannot match (Chinese words
    over English pages: ~0.1) gets the model's full weight; one whose words
    a chunk holds all of ("pass data from parent to child") keeps
    MATCHED_WEIGHT for its documents, enough for a synonym bm25 misses (认证
    for 身份验证), too little to outvote bm25 with a page vector that sees
    only the page's start (props.md), and none for its chunks: bm25 and the
    n-gram cosines tell them apart.
    """
    from docindex.search.quality import coverage, held_terms

    matched = 0.0
    top = [sid for sid, _ in lexical[:COVERAGE_CHUNKS]]
    rows = store.segments_by_id(top) if top and weights else {}
    for sid in top:
        row = rows.get(sid)
        if row is not None:
            body = store.body(row.doc_id)[row.char_start : row.char_end]
            held = held_terms(body, row.heading, cfg)
            matched = max(matched, coverage(held, weights))
    unmatched = cfg.multilingual_weight * (1.0 - matched)
    return MATCHED_WEIGHT + unmatched, unmatched


def provider_degraded(cfg: Config) -> bool:
    # Only the neural provider can be missing; asking ``choose`` for another
    # would build (and import) an embedder a lexical query never uses (#24).
    return cfg.embedding_provider in NEURAL and not choose(cfg).available


def semantic_ranking(
    store: Index, text: str, cfg: Config, candidates: list[int] | None,
    only: DocFilter, limit: int,
) -> list[tuple[int, float]] | None:  # fmt: skip
    """Cosine ranking, best first (positive cosines only, at most ``limit``).

    Args:
        candidates: segment ids to score, or None for every vector (filtered
            by ``only``).

    Returns:
        None when the semantic path is unavailable (provider ``none`` or an
        index without vectors); otherwise (segment id, cosine) pairs.
    """
    embedder = _embedder(cfg)
    recorded = store.get_meta("embedder")
    if embedder is None or recorded is None:
        return None
    if {embedder.name, recorded.get("provider")} & set(NEURAL) and (
        recorded != embedder.params()
    ):
        return None  # vectors from another model (or it is not installed): issue #9
    per_doc = embedder.unit == "document"
    if per_doc:
        # One vector per document (issue #47): score them all, so a page that
        # shares no word with the query (a Chinese question, an English page)
        # is found; there are as many as documents, not chunks.
        candidates = None
    found = _stored_vectors(store, candidates, only, first_only=per_doc)
    if found is None:
        return None
    ids, blobs = found
    if not ids:
        return []
    qt = embedder.query_terms(text)
    n_total = max(1, store.max_segment_id())  # ~count(*), without a table scan
    dfs = store.doc_freqs(qt)
    idf = {t: math.log(1 + n_total / (1 + dfs.get(t, 0))) for t in qt}
    from docindex.embed.ngram import NgramEmbedder

    ngram = embedder if isinstance(embedder, NgramEmbedder) else None
    if ngram is not None:
        ngram.queries_ranked += 1
    if (
        ngram is not None
        and len(ids) <= PURE_PYTHON_MAX
        and not ngram.numpy_used
        and ngram.queries_ranked <= PURE_PYTHON_QUERIES
    ):
        # A one-shot `docindex query` would spend ~0.1 s importing numpy to
        # score a few hundred candidates; pure Python does it in ~2 ms (#7).
        # A process that keeps querying (MCP, --queries, a library user) pays
        # the import once and saves those ms on every later query.
        return _cosines_pure(ngram, text, idf, ids, blobs, limit)
    return _cosines_numpy(
        embedder, text, idf, ids, blobs, limit, centre=embedder.unit == "document"
    )


def _stored_vectors(
    store: Index, candidates: list[int] | None, only: DocFilter,
    first_only: bool = False,
) -> tuple[list[int], list[bytes]] | None:  # fmt: skip
    """(ids, blobs) to score; None when the index has no vectors to use."""
    if candidates is None:
        ids, blobs = store.all_vectors(only, first_only=first_only)
        if not ids and not only:
            return None
    elif candidates:
        ids, blobs = store.vectors(candidates)
        if not ids and store.counts().embedded == 0:
            return None  # an index scanned without vectors (e.g. max_embedded = 0)
    else:
        return [], []
    return ids, blobs


def _cosines_pure(
    ngram: NgramEmbedder, text: str, idf: dict[str, float], ids: list[int],
    blobs: list[bytes], limit: int,
) -> list[tuple[int, float]]:  # fmt: skip
    """``_cosines_numpy`` without numpy, for a few hundred candidates."""
    from docindex.embed.quantized import cosine_int8

    qlist = ngram.query_vector(text, weights=idf)
    if not any(qlist):
        return []
    pure = sorted(
        ((sid, sim) for sid, sim in zip(ids, cosine_int8(qlist, blobs), strict=True)),
        key=lambda pair: (-pair[1], pair[0]),
    )
    return [(sid, sim) for sid, sim in pure[:limit] if sim > 0]


def _cosines_numpy(
    embedder: Embedder, text: str, idf: dict[str, float], ids: list[int],
    blobs: list[bytes], limit: int, *, centre: bool = False,
) -> list[tuple[int, float]]:  # fmt: skip
    """The best ``limit`` positive cosines of the query with the stored vectors.

    ``centre``: every document was scored (a per-document provider), and each
    cosine counts by how far it lies above their mean. e5's cosines crowd in
    0.75-0.85 whatever the text, so divided by the best one (the fusion) they
    all scored ~0.95 and moved nothing (issue #47, bench/crosslingual.py).
    """
    import numpy as np

    from docindex.embed.quantized import dequantize

    qvec = embedder.embed_query(text, weights=idf)
    if not np.any(qvec):
        return []
    # einsum, not ``@``: OpenBLAS's threaded matrix-vector product spins on a
    # busy machine (search/vectors.py measured it, issue #37).
    sims = np.einsum("ij,j->i", dequantize(blobs, embedder.dim), qvec)
    if centre and len(sims) > 1:
        sims = sims - sims.mean()
    id_arr = np.asarray(ids)
    if len(ids) > limit:
        keep = np.argpartition(-sims, limit - 1)[:limit]
        sims, id_arr = sims[keep], id_arr[keep]
    order = np.lexsort((id_arr, -sims))
    return [(int(id_arr[i]), float(sims[i])) for i in order if sims[i] > 0]
