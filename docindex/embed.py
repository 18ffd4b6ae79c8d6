"""Feature-hashed n-gram embedder: text -> L2-normalised float32 vector.

No model download (issue #3). Features come from the same tokenizer as the
lexical index (stemmed words, CJK n-grams) plus sub-word character n-grams of
latin words, so ``index``/``indexing`` and small misspellings land close.
Each feature is hashed with CRC-32 (stable across processes, unlike
``hash()``) into ``dim`` buckets with a sign bit; term frequency is
sublinear (1 + log tf). Vectors are stored as int8 with one float32 scale.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from .tokenize import STOPWORDS, normalize, terms

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]

_WORD = re.compile(r"[a-z][a-z0-9]*")
SUBWORD_WEIGHT = 0.35
_MAX_CACHE = 400_000
_N_LOG_TF = 64
_LOG_TF = [0.0] + [1.0 + math.log(tf) for tf in range(1, _N_LOG_TF)]


def _LOG_TF_NP() -> Any:
    """``1 + math.log(tf)`` for small tf as a float64 array (math.log, not np.log)."""
    import numpy as np

    return np.array(_LOG_TF, dtype=np.float64)


class _Buffer:
    """A growable 1-d numpy array (amortised doubling) for the feature vocabulary."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype
        self.data: Any = None  # allocated on first use: numpy stays unimported
        self.n = 0

    def extend(self, values: list[Any]) -> None:
        import numpy as np

        end = self.n + len(values)
        size = 0 if self.data is None else len(self.data)
        if end > size:
            grown = np.empty(max(end, 2 * size, 1024), dtype=self.dtype)
            if self.n:
                grown[: self.n] = self.data[: self.n]
            self.data = grown
        self.data[self.n : end] = values
        self.n = end


class NgramEmbedder:
    """Feature-hashing embedder; pure function of its parameters.

    Args:
        dim: number of hash buckets (16..8192).
        cjk_ngram: CJK n-gram depth, as the tokenizer's.
        use_stem: stem latin words, as the tokenizer does.
    """

    name = "ngram"
    version = 1

    def __init__(self, dim: int = 256, cjk_ngram: int = 2, use_stem: bool = True):
        self.dim = dim
        self.cjk_ngram = cjk_ngram
        self.use_stem = use_stem
        self._reset_vocab()

    def params(self) -> dict[str, Any]:
        """What the index records and checks on open."""
        return {
            "provider": self.name,
            "version": self.version,
            "dim": self.dim,
            "cjk_ngram": self.cjk_ngram,
            "stem": self.use_stem,
            "subword": [3, 4],
            "subword_weight": SUBWORD_WEIGHT,
        }

    def _term_features(self, term: str) -> tuple[list[int], list[float]]:
        """Bucket indices and signed weights of one term: itself plus sub-words."""
        keys = [term]
        weights = [1.0]
        if _WORD.fullmatch(term) and len(term) >= 4:
            padded = f"<{term}>"
            grams = [
                padded[i : i + n] for n in (3, 4) for i in range(len(padded) - n + 1)
            ]
            w = SUBWORD_WEIGHT / math.sqrt(len(grams))
            keys.extend("#" + g for g in grams)
            weights.extend([w] * len(grams))
        idx: list[int] = []
        val: list[float] = []
        for key, weight in zip(keys, weights, strict=True):
            h = zlib.crc32(key.encode("utf-8"))
            idx.append(h % self.dim)
            val.append(weight if (h >> 31) & 1 else -weight)
        return idx, val

    def _add_terms(self, new: Sequence[str]) -> None:
        """Give new terms vocabulary ids and append their features."""
        vocab = self._vocab
        new_idx: list[int] = []
        new_val: list[float] = []
        starts: list[int] = []
        lens: list[int] = []
        stops: list[bool] = []
        used = self._feat_idx.n
        for term in new:
            idx, val = self._term_features(term)
            vocab[term] = len(vocab)
            starts.append(used + len(new_idx))
            lens.append(len(idx))
            stops.append(term in STOPWORDS)
            new_idx.extend(idx)
            new_val.extend(val)
        self._feat_idx.extend(new_idx)
        self._feat_val.extend(new_val)
        self._starts.extend(starts)
        self._lens.extend(lens)
        self._stop.extend(stops)

    def _reset_vocab(self) -> None:
        # term -> id, and per id: its features' slice of _feat_idx/_feat_val and
        # whether it is a stopword. A pure cache of _term_features.
        self._vocab: dict[str, int] = {}
        self._feat_idx = _Buffer("int64")
        self._feat_val = _Buffer("float32")
        self._starts = _Buffer("int64")
        self._lens = _Buffer("int64")
        self._stop = _Buffer("bool")

    def _term_counts(self, text: str) -> Counter[str]:
        counts = Counter(terms(text, cjk_ngram=self.cjk_ngram, use_stem=self.use_stem))
        for stop in STOPWORDS.intersection(counts):
            dict.__delitem__(counts, stop)  # skips Counter's Python-level __delitem__
        return counts

    def embed(
        self, texts: Sequence[str], weights: dict[str, float] | None = None
    ) -> FloatArray:
        """Embed a batch of texts into an (n, dim) float32 array of unit rows.

        Args:
            texts: the embedding inputs (already prefixed with title/headings).
            weights: optional per-term multipliers (query-time idf).
        """
        n, use_stem = self.cjk_ngram, self.use_stem
        return self._embed_lists(
            [terms(t, cjk_ngram=n, use_stem=use_stem) for t in texts], weights
        )

    def embed_terms(self, term_lists: Sequence[Sequence[str]]) -> FloatArray:
        """``embed`` for texts already tokenised with ``tokenize.terms``.

        ``embed_terms([terms(t) for t in texts])`` equals ``embed(texts)`` bit
        for bit; the indexer uses it to tokenise each segment once (issue #7).
        """
        return self._embed_lists(term_lists, None)

    def _embed_lists(
        self, term_lists: Sequence[Sequence[str]], weights: dict[str, float] | None
    ) -> FloatArray:
        # Vectorised over the whole batch (issue #7), bit-identical to the
        # per-text loop: for each text, its distinct non-stopword terms in
        # first-occurrence order, each adding float32(val * (1 + log tf) [* w])
        # for its features in order; one float64 bincount adds each bucket's
        # values in that same order.
        import numpy as np

        dim = self.dim
        n = len(term_lists)
        if len(self._vocab) > _MAX_CACHE:
            self._reset_vocab()
        flat = list(chain.from_iterable(term_lists))
        if not flat:
            return np.zeros((n, dim), dtype=np.float32)
        vocab = self._vocab
        new = [term for term in set(flat) if term not in vocab]
        if new:
            self._add_terms(sorted(new))
        tid = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
        row = np.repeat(np.arange(n, dtype=np.int64), [len(t) for t in term_lists])
        keep = ~self._stop.data[tid]
        tid, row = tid[keep], row[keep]
        if not len(tid):
            return np.zeros((n, dim), dtype=np.float32)
        n_vocab = len(vocab)
        keys, first, tf = np.unique(
            row * n_vocab + tid, return_index=True, return_counts=True
        )
        order = np.argsort(first, kind="stable")
        keys, tf = keys[order], tf[order]
        u_tid, u_row = keys % n_vocab, keys // n_vocab
        lens = self._lens.data[u_tid]
        starts = self._starts.data[u_tid]
        total = int(lens.sum())
        pos = np.arange(total, dtype=np.int64) + np.repeat(
            starts - (np.cumsum(lens) - lens), lens
        )
        idx_all = self._feat_idx.data[pos] + np.repeat(u_row * dim, lens)
        # w = 1 + math.log(tf) (times idf) in float64, then rounded to float32
        # as the scalar product ``val * w`` rounds it.
        w = _LOG_TF_NP()[np.minimum(tf, _N_LOG_TF - 1)]
        if tf.max() >= _N_LOG_TF:
            big = np.flatnonzero(tf >= _N_LOG_TF)
            w[big] = [1.0 + math.log(int(t)) for t in tf[big]]
        if weights is not None:
            names = list(vocab)
            w *= np.array([weights.get(names[i], 1.0) for i in u_tid], dtype=np.float64)
        val_all = self._feat_val.data[pos] * np.repeat(w.astype(np.float32), lens)
        summed = np.bincount(idx_all, weights=val_all, minlength=n * dim)
        out = summed.reshape(n, dim).astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def query_vector(
        self, text: str, weights: dict[str, float] | None = None
    ) -> list[float]:
        """Pure-Python ``embed([text], weights)[0]`` for one short text (a query).

        Equal to the numpy path up to float32 rounding; it lets ``docindex query``
        rank a few hundred candidates without importing numpy (issue #7: a
        whole-process query pays ~0.1 s for that import).
        """
        vec = [0.0] * self.dim
        for term, tf in self._term_counts(text).items():
            idx, val = self._term_features(term)
            w = 1.0 + math.log(tf)
            if weights is not None:
                w *= weights.get(term, 1.0)
            for i, v in zip(idx, val, strict=True):
                vec[i] += v * w
        norm = math.sqrt(sum(x * x for x in vec))
        return [x / norm for x in vec] if norm else vec

    def query_terms(self, text: str) -> list[str]:
        """Distinct terms of a query, for idf lookup."""
        return list(self._term_counts(normalize(text)))


def quantize(vectors: FloatArray) -> list[bytes]:
    """Encode unit vectors as int8 blobs: 4-byte little-endian scale + dim bytes."""
    import numpy as np

    peak = np.abs(vectors).max(axis=1)
    # A denormal peak / 127 underflows to 0 in float32: such a row encodes as 0.
    scale = (peak / np.float32(127.0)).astype("<f4")
    scale = np.where(scale > 0, scale, np.float32(1.0)).astype("<f4")
    q = np.rint(vectors / scale[:, None]).astype(np.int8)
    return [scale[i].tobytes() + q[i].tobytes() for i in range(len(vectors))]


def cosine_int8(query: Sequence[float], blobs: Sequence[bytes]) -> list[float]:
    """Dot products of a unit query with int8 blobs, in pure Python (no numpy)."""
    import array
    import operator
    import struct

    out: list[float] = []
    for blob in blobs:
        (scale,) = struct.unpack_from("<f", blob)
        ints = array.array("b", blob[4:])
        out.append(scale * sum(map(operator.mul, query, ints)))
    return out


def dequantize(blobs: Sequence[bytes], dim: int) -> FloatArray:
    """Decode int8 blobs back to an (n, dim) float32 matrix."""
    import numpy as np

    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), dim + 4)
    scale = raw[:, :4].copy().view("<f4").reshape(-1)
    q = raw[:, 4:].view(np.int8).astype(np.float32)
    result: FloatArray = q * scale[:, None]
    return result


def make_embedder(
    provider: str, dim: int, cjk_ngram: int, use_stem: bool, model: str = ""
) -> Any:
    """Return the embedder for a provider name, or None for ``none``.

    ``minilm`` (issue #9) needs the ``neural`` extra; without it (or without
    the model folder ``model`` names) this returns the ngram embedder with a
    ``degraded`` attribute holding the one-line reason.
    """
    if provider == "none":
        return None
    if provider == "minilm":
        from .embed_minilm import INSTALL_HINT, MiniLMEmbedder, unavailable_reason

        reason = unavailable_reason(model)
        if reason is None:
            from .config import cache_dir

            return MiniLMEmbedder(model, cache_dir=cache_dir())
        fallback = NgramEmbedder(dim=dim, cjk_ngram=cjk_ngram, use_stem=use_stem)
        fallback.degraded_reason = reason  # type: ignore[attr-defined]
        fallback.degraded = (  # type: ignore[attr-defined]
            f"minilm embeddings unavailable ({reason}); using ngram instead "
            f"({INSTALL_HINT})"
        )
        return fallback
    return NgramEmbedder(dim=dim, cjk_ngram=cjk_ngram, use_stem=use_stem)
