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
from array import array
from collections import Counter
from collections.abc import Sequence
from itertools import chain, repeat
from typing import TYPE_CHECKING, Any

from docindex.embed.hashing import (
    SUBWORD_SIZES,
    Buffer,
    finish,
    log_tf,
    log_tf32,
    n_subwords,
    ngram_crcs,
    quantize_row,
    subword_crcs,
    unit_row,
    utf8_crcs,
)
from docindex.embed.quantized import quantize
from docindex.text.tokenize import STOPWORDS, cjk_layout, normalize, terms

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]
    # An array whose dtype the code that makes it decides (counts, CRCs, sums).
    Array = npt.NDArray[Any]

_WORD = re.compile(r"[a-z][a-z0-9]*")
SUBWORD_WEIGHT = 0.35
_MAX_CACHE = 400_000
_PY_CACHE_MAX = 20_000  # terms whose features quantized_rows keeps (~1 KB each)
PURE_TOKENS_MAX = 8_000  # quantized_rows without numpy up to this many tokens (~50 ms)


class NgramEmbedder:
    """Feature-hashing embedder; pure function of its parameters.

    Args:
        dim: number of hash buckets (16..8192).
        cjk_ngram: CJK n-gram depth, as the tokenizer's.
        use_stem: stem latin words, as the tokenizer does.
    """

    name = "ngram"
    version = 1
    deferred = False  # vectors are made with the segments, in the scan
    unit = "segment"

    def __init__(
        self, dim: int = 256, cjk_ngram: int = 2, use_stem: bool = True, bits: int = 4
    ):
        self.dim = dim
        self.cjk_ngram = cjk_ngram
        self.use_stem = use_stem
        # Stored precision (``quantize``): 4 bits halve the vectors (issue #7)
        # and cost no measured quality at this list's fusion weight.
        self.bits = bits if dim % 2 == 0 else 8
        # This instance's use of numpy so far: once it has paid for the import,
        # small batches and queries take the numpy path too (issue #7).
        self.numpy_used = False
        self.queries_ranked = 0  # search's budget of pure-Python query rankings
        self._reset_vocab()

    def params(self) -> dict[str, object]:
        """What the index records and checks on open."""
        return {
            "provider": self.name,
            "version": self.version,
            "dim": self.dim,
            "cjk_ngram": self.cjk_ngram,
            "stem": self.use_stem,
            "subword": list(SUBWORD_SIZES),
            "subword_weight": SUBWORD_WEIGHT,
            "bits": self.bits,
        }

    def _term_features(self, term: str) -> tuple[list[int], list[float]]:
        """Bucket indices and signed weights of one term: itself plus sub-words."""
        bucket, sign = self._slot(term)
        idx, val = self._subwords(term)
        return [bucket, *idx], [sign, *val]

    def _subwords(self, term: str) -> tuple[list[int], list[float]]:
        """Features of a latin word's character n-grams (none for other terms)."""
        if len(term) < 4 or not _WORD.fullmatch(term):
            return [], []
        padded = f"<{term}>"
        grams = [
            "#" + padded[i : i + n]
            for n in SUBWORD_SIZES
            for i in range(len(padded) - n + 1)
        ]
        w = SUBWORD_WEIGHT / math.sqrt(len(grams))
        slots = self._slots
        idx: list[int] = []
        val: list[float] = []
        for gram in grams:
            slot = slots.get(gram)
            if slot is None:
                slot = slots[gram] = self._slot(gram)
            idx.append(slot[0])
            val.append(w * slot[1])
        return idx, val

    def _slot(self, key: str) -> tuple[int, float]:
        """A feature's bucket and sign: CRC-32 (stable across processes)."""
        h = zlib.crc32(key.encode("utf-8"))
        return h % self.dim, 1.0 if (h >> 31) & 1 else -1.0

    def _add_terms(self, new: Sequence[str]) -> None:
        """Give new terms vocabulary ids and append their features.

        Exactly ``_term_features`` per term, laid out term after term. Most new
        terms (CJK n-grams, short words) are one feature, hashed here in one
        vectorised pass; only latin words of 4+ letters add sub-words in Python
        (issue #3: building each worker's vocabulary was ~1/3 of embedding).
        """
        import numpy as np

        vocab = self._vocab
        n = len(new)
        vocab.update(zip(new, range(len(vocab), len(vocab) + n), strict=True))
        h = np.fromiter(map(zlib.crc32, map(str.encode, new)), dtype=np.int64, count=n)
        words = [i for i, t in enumerate(new) if len(t) >= 4 and _WORD.fullmatch(t)]
        lens = np.ones(n, dtype=np.int64)
        wlen = np.array([len(new[i]) for i in words], dtype=np.int64)
        lens[words] += n_subwords(wlen)
        own = np.cumsum(lens) - lens  # each term's first feature, from 0
        feat_idx = np.empty(int(lens.sum()), dtype=np.int64)
        feat_val = np.empty(len(feat_idx), dtype=np.float32)
        feat_idx[own] = h % self.dim
        feat_val[own] = np.where((h >> 31) & 1, 1.0, -1.0)
        if words:
            pos, grams, word = subword_crcs(
                [new[i] for i in words], wlen, own[words] + 1
            )
            w = (SUBWORD_WEIGHT / np.sqrt(n_subwords(wlen).astype(np.float64)))[word]
            feat_idx[pos] = grams % self.dim
            feat_val[pos] = np.where((grams >> 31) & 1, w, -w)
        self._starts.extend(own + self._feat_idx.n)
        self._lens.extend(lens)
        self._stop.extend(np.fromiter(map(STOPWORDS.__contains__, new), bool, n))
        self._feat_idx.extend(feat_idx)
        self._feat_val.extend(feat_val)

    def _reset_vocab(self) -> None:
        # term -> id, and per id: its features' slice of _feat_idx/_feat_val and
        # whether it is a stopword. A pure cache of _term_features.
        self._vocab: dict[str, int] = {}
        # "#" + sub-word -> (bucket, sign): sub-words repeat across terms, so
        # each is hashed once (issue #3: scan speed).
        self._slots: dict[str, tuple[int, float]] = {}
        # term -> its features as float32 values, for quantized_rows' pure path
        self._py_features: dict[str, tuple[list[int], list[float]]] = {}
        self._feat_idx = Buffer("int64")
        self._feat_val = Buffer("float32")
        self._starts = Buffer("int64")
        self._lens = Buffer("int64")
        self._stop = Buffer("bool")

    def _term_counts(self, text: str) -> Counter[str]:
        counts = Counter(terms(text, cjk_ngram=self.cjk_ngram, use_stem=self.use_stem,
                               identifiers=False))  # fmt: skip
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
            [
                terms(t, cjk_ngram=n, use_stem=use_stem, identifiers=False)
                for t in texts
            ],
            weights,  # fmt: skip
        )

    def embed_parts(
        self, word_lists: Sequence[Sequence[str]], run_lists: Sequence[Sequence[str]]
    ) -> FloatArray:
        """``embed`` for texts given as their latin terms and their CJK runs.

        ``tokenize.term_parts`` splits a text so; ``embed_parts(*zip(*parts))``
        equals ``embed(texts)`` up to float32 rounding (the sums run in another
        order). The indexer uses it (issue #3: scan cost): a CJK n-gram is one
        feature, the CRC-32 of its UTF-8 bytes, so n-grams are counted and
        hashed as code-point arrays instead of strings looked up one by one.
        """
        import numpy as np

        self.numpy_used = True
        n, dim = len(word_lists), self.dim
        latin = self._features(word_lists, None)
        cjk = self._cjk_features(run_lists)
        parts = [f for f in (latin, cjk) if f is not None]
        if not parts:
            return np.zeros((n, dim), dtype=np.float32)
        idx = np.concatenate([f[0] for f in parts])
        val = np.concatenate([f[1] for f in parts])
        return finish(np.bincount(idx, weights=val, minlength=n * dim), n, dim)

    def quantized_rows(
        self, word_lists: Sequence[Sequence[str]], run_lists: Sequence[Sequence[str]],
        *, bulk: bool = False,
    ) -> list[bytes]:  # fmt: skip
        """``quantize(self.embed_parts(word_lists, run_lists), self.bits)``.

        A few rows are computed in pure Python, bit for bit the same (tests
        check it): a rescan of one edited file would otherwise spend ~50 ms
        importing numpy (issue #7). ``bulk`` (a scan's worker processes, which
        import numpy at start), a batch over ``PURE_TOKENS_MAX`` tokens, or an
        instance that already used numpy take the numpy path.
        """
        tokens = sum(map(len, word_lists)) + sum(map(len, chain(*run_lists)))
        if bulk or self.numpy_used or tokens > PURE_TOKENS_MAX:
            return quantize(self.embed_parts(word_lists, run_lists), self.bits)
        return [
            quantize_row(unit_row(self._row_sums(words, runs), self.dim), self.bits)
            for words, runs in zip(word_lists, run_lists, strict=True)
        ]

    def _row_sums(self, words: Sequence[str], runs: Sequence[str]) -> dict[int, float]:
        """Exact float64 bucket sums of one row's float32 feature values.

        Each value is a float32 with at least 2^-35 resolution and a segment
        has at most ~10^4 of them, so the float64 sums are exact whatever the
        order: numpy's ``bincount`` and this loop agree.
        """
        sums: dict[int, float] = {}
        get = sums.get
        cache = self._py_features
        for term, tf in Counter(words).items():
            if term in STOPWORDS:
                continue
            w = log_tf32(tf)
            found = cache.get(term)
            if found is None:
                if len(cache) >= _PY_CACHE_MAX:
                    cache.clear()  # a watcher embeds small batches for hours
                idx, val = self._term_features(term)
                found = cache[term] = (idx, array("f", val).tolist())
            idx, val = found
            # float32 products of float32 values (exact in float64, then rounded)
            for bucket, v in zip(idx, array("f", [v * w for v in val]), strict=True):
                sums[bucket] = get(bucket, 0.0) + v
        grams: Counter[str] = Counter()
        for run in runs:
            for size in range(1, min(self.cjk_ngram, len(run)) + 1):
                grams.update(run[i : i + size] for i in range(len(run) - size + 1))
        dim = self.dim
        for gram, tf in grams.items():
            w = log_tf32(tf)
            h = zlib.crc32(gram.encode("utf-8"))
            sums[h % dim] = get(h % dim, 0.0) + (w if (h >> 31) & 1 else -w)
        return sums

    def _cjk_features(
        self, run_lists: Sequence[Sequence[str]]
    ) -> tuple[Array, Array] | None:
        """(row * dim + bucket, float32 value) of the CJK n-grams of each text."""
        import numpy as np

        layout = cjk_layout(run_lists)
        if layout is None:
            return None
        dim = self.dim
        cps, left, row_of = layout
        cps = cps.astype(np.int64)
        keys, rows = [], []
        for size in range(1, self.cjk_ngram + 1):
            at = np.flatnonzero(left >= size)
            key = cps[at]
            for j in range(1, size):  # 21 bits a code point: sizes never collide
                key = (key << 21) | cps[at + j]
            keys.append(key)
            rows.append(row_of[at])
        if self.cjk_ngram <= 2 and len(run_lists) < (1 << 21):
            # Keys fit 42 bits and rows the other 21: one sort counts each
            # text's n-grams, in the same (row, key) order as below.
            pair, tf = np.unique(
                np.concatenate(
                    [(r << 42) | k for k, r in zip(keys, rows, strict=True)]
                ),
                return_counts=True,
            )
            u_row, crc = pair >> 42, ngram_crcs(pair & ((1 << 42) - 1))
        else:
            key_all = np.concatenate(keys)
            uniq, kid = np.unique(key_all, return_inverse=True)
            pair, tf = np.unique(
                np.concatenate(rows) * len(uniq) + kid, return_counts=True
            )
            u_row, u_kid = pair // len(uniq), pair % len(uniq)
            crc = utf8_crcs(uniq)[u_kid]
        w = log_tf(tf)
        sign = np.where((crc >> 31) & 1, np.float32(1.0), np.float32(-1.0))
        return u_row * dim + crc % dim, sign * w.astype(np.float32)

    def _embed_lists(
        self, term_lists: Sequence[Sequence[str]], weights: dict[str, float] | None
    ) -> FloatArray:
        import numpy as np

        self.numpy_used = True
        n, dim = len(term_lists), self.dim
        found = self._features(term_lists, weights)
        if found is None:
            return np.zeros((n, dim), dtype=np.float32)
        idx_all, val_all = found
        return finish(np.bincount(idx_all, weights=val_all, minlength=n * dim), n, dim)

    def _features(
        self, term_lists: Sequence[Sequence[str]], weights: dict[str, float] | None
    ) -> tuple[Array, Array] | None:
        # Vectorised over the whole batch (issue #7): for each text, each
        # distinct non-stopword term adds float32(val * (1 + log tf) [* w]) for
        # each of its features; one float64 bincount sums the buckets (in term
        # id order, so equal to the per-text loop up to float rounding).
        # Returns (row * dim + bucket, value), or None when nothing counts.
        import numpy as np

        dim = self.dim
        n = len(term_lists)
        if len(self._vocab) > _MAX_CACHE:
            self._reset_vocab()
        flat = list(chain.from_iterable(term_lists))
        if not flat:
            return None
        vocab = self._vocab
        # One pass over the tokens: unknown terms come back as -1 and are added.
        tid = np.fromiter(
            map(vocab.get, flat, repeat(-1, len(flat))), dtype=np.int64, count=len(flat)
        )
        missing = np.flatnonzero(tid < 0)
        if len(missing):
            # In C (issue #46: a loop per token here was ~5% of a worker, most
            # of a worker's tokens being new while its vocabulary fills).
            new = list(map(flat.__getitem__, missing.tolist()))
            self._add_terms(sorted(set(new)))
            tid[missing] = np.fromiter(
                map(vocab.__getitem__, new), dtype=np.int64, count=len(new)
            )
        row = np.repeat(np.arange(n, dtype=np.int64), [len(t) for t in term_lists])
        keep = ~self._stop.data[tid]
        tid, row = tid[keep], row[keep]
        if not len(tid):
            return None
        n_vocab = len(vocab)
        keys = row * n_vocab + tid
        if n * n_vocab < 1 << 31:  # int32 keys sort ~40% faster (issue #7)
            keys = keys.astype(np.int32)
        keys, tf = np.unique(keys, return_counts=True)
        keys = keys.astype(np.int64)
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
        w = log_tf(tf)
        if weights is not None:
            names = list(vocab)
            w *= np.array([weights.get(names[i], 1.0) for i in u_tid], dtype=np.float64)
        val_all = self._feat_val.data[pos] * np.repeat(w.astype(np.float32), lens)
        return idx_all, val_all

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

    def embed_query(
        self, text: str, weights: dict[str, float] | None = None
    ) -> FloatArray:
        """``embed([text], weights)[0]``: a query is embedded as a text is."""
        vec: FloatArray = self.embed([text], weights=weights)[0]
        return vec

    def query_terms(self, text: str) -> list[str]:
        """Distinct terms of a query, for idf lookup."""
        return list(self._term_counts(normalize(text)))
