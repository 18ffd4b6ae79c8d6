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
from typing import TYPE_CHECKING, Any

from .tokenize import STOPWORDS, iter_terms, normalize

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]

_WORD = re.compile(r"[a-z][a-z0-9]*")
SUBWORD_WEIGHT = 0.35
_MAX_CACHE = 400_000


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
        self._cache: dict[str, tuple[Any, Any]] = {}

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

    def _features(self, term: str) -> tuple[Any, Any]:
        """Bucket indices and signed weights of one term (cached)."""
        hit = self._cache.get(term)
        if hit is not None:
            return hit
        import numpy as np

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
        idx = np.empty(len(keys), dtype=np.int64)
        val = np.empty(len(keys), dtype=np.float32)
        for i, (key, weight) in enumerate(zip(keys, weights, strict=True)):
            h = zlib.crc32(key.encode("utf-8"))
            idx[i] = h % self.dim
            val[i] = weight if (h >> 31) & 1 else -weight
        if len(self._cache) > _MAX_CACHE:
            self._cache.clear()
        self._cache[term] = (idx, val)
        return idx, val

    def _term_counts(self, text: str) -> Counter[str]:
        counts = Counter(
            iter_terms(text, cjk_ngram=self.cjk_ngram, use_stem=self.use_stem)
        )
        for stop in STOPWORDS.intersection(counts):
            del counts[stop]
        return counts

    def embed(
        self, texts: Sequence[str], weights: dict[str, float] | None = None
    ) -> FloatArray:
        """Embed a batch of texts into an (n, dim) float32 array of unit rows.

        Args:
            texts: the embedding inputs (already prefixed with title/headings).
            weights: optional per-term multipliers (query-time idf).
        """
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            counts = self._term_counts(text)
            if not counts:
                continue
            idx_parts = []
            val_parts = []
            for term, tf in counts.items():
                idx, val = self._features(term)
                w = 1.0 + math.log(tf)
                if weights is not None:
                    w *= weights.get(term, 1.0)
                idx_parts.append(idx)
                val_parts.append(val * w)
            idx_all = np.concatenate(idx_parts)
            val_all = np.concatenate(val_parts)
            out[row] = np.bincount(idx_all, weights=val_all, minlength=self.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def query_terms(self, text: str) -> list[str]:
        """Distinct terms of a query, for idf lookup."""
        return list(self._term_counts(normalize(text)))


def quantize(vectors: FloatArray) -> list[bytes]:
    """Encode unit vectors as int8 blobs: 4-byte little-endian scale + dim bytes."""
    import numpy as np

    peak = np.abs(vectors).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype("<f4")
    q = np.rint(vectors / scale[:, None]).astype(np.int8)
    return [scale[i].tobytes() + q[i].tobytes() for i in range(len(vectors))]


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
    provider: str, dim: int, cjk_ngram: int, use_stem: bool
) -> NgramEmbedder | None:
    """Return the embedder for a provider name, or None for ``none``."""
    if provider == "none":
        return None
    return NgramEmbedder(dim=dim, cjk_ngram=cjk_ngram, use_stem=use_stem)
