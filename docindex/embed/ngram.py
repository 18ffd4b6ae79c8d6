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
import struct
import zlib
from array import array
from collections import Counter
from collections.abc import Sequence
from itertools import chain, repeat
from typing import TYPE_CHECKING, Any

from docindex.text.tokenize import STOPWORDS, cjk_layout, normalize, terms

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]
    # An array whose dtype the code that makes it decides (counts, CRCs, sums).
    Array = npt.NDArray[Any]

_WORD = re.compile(r"[a-z][a-z0-9]*")
SUBWORD_WEIGHT = 0.35
SUBWORD_SIZES = (3, 4)  # character n-grams of "<word>" for latin words of 4+ letters


def _n_subwords(length: Array) -> Array:
    """How many sub-words words of ``length`` letters have (``<word>``'s n-grams)."""
    per_word = sum(3 - n for n in SUBWORD_SIZES)  # sum(length + 3 - n), exactly
    return length * len(SUBWORD_SIZES) + per_word


_MAX_CACHE = 400_000
_PY_CACHE_MAX = 20_000  # terms whose features quantized_rows keeps (~1 KB each)
PURE_TOKENS_MAX = 8_000  # quantized_rows without numpy up to this many tokens (~50 ms)
_N_LOG_TF = 64
_LOG_TF = [0.0] + [1.0 + math.log(tf) for tf in range(1, _N_LOG_TF)]


def _log_tf(tf: Array) -> Array:
    """``1 + math.log(tf)`` of an array of counts, as float64 (math.log, not np.log)."""
    import numpy as np

    w = np.array(_LOG_TF, dtype=np.float64)[np.minimum(tf, _N_LOG_TF - 1)]
    if tf.max() >= _N_LOG_TF:
        big = np.flatnonzero(tf >= _N_LOG_TF)
        w[big] = [1.0 + math.log(int(t)) for t in tf[big]]
    return w


def _log_tf32(tf: int) -> float:
    """``_log_tf`` of one count, rounded to float32 (``quantized_rows``' pure path)."""
    return _f32(_LOG_TF[tf] if tf < _N_LOG_TF else 1.0 + math.log(tf))


class _Buffer:
    """A growable 1-d numpy array (amortised doubling) for the feature vocabulary."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype
        self._data: Array | None = (
            None  # allocated on first use: numpy stays unimported
        )
        self.n = 0

    @property
    def data(self) -> Array:
        """The buffer (its first ``n`` items are set); only after an ``extend``."""
        assert self._data is not None, "extend() first"
        return self._data

    def extend(self, values: Array) -> None:
        import numpy as np

        end = self.n + len(values)
        data = self._data
        size = 0 if data is None else len(data)
        if data is None or end > size:
            grown = np.empty(max(end, 2 * size, 1024), dtype=self.dtype)
            if data is not None and self.n:
                grown[: self.n] = data[: self.n]
            data = self._data = grown
        data[self.n : end] = values
        self.n = end


def _crc_table() -> Array:
    """zlib's CRC-32 table (reflected polynomial 0xEDB88320) as int64."""
    import numpy as np

    table = np.arange(256, dtype=np.int64)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ 0xEDB88320, table >> 1)
    return table


def _subword_crcs(
    words: list[str], wlen: Array, first: Array
) -> tuple[Array, Array, Array]:
    """``zlib.crc32(b"#" + gram)`` of every ``SUBWORD_SIZES`` gram of each ``<word>``.

    Vectorised CRC-32 over the grams' bytes (bit-identical to zlib; words are
    ASCII ``[a-z0-9]``). Returns positions (the word's grams, size by size,
    from ``first[j]``), the CRCs and each gram's word index.
    """
    import numpy as np

    table = _crc32_table()
    buf = np.frombuffer("".join(f"<{w}>" for w in words).encode("ascii"), np.uint8)
    plen = wlen + 2
    off = np.cumsum(plen) - plen
    pos_parts, crc_parts, word_parts = [], [], []
    word_ids = np.arange(len(words), dtype=np.int64)
    shift = np.zeros_like(wlen)  # the word's grams of the sizes before this one
    for n in SUBWORD_SIZES:
        count = plen - n + 1
        k = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(
            np.cumsum(count) - count, count
        )
        start = np.repeat(off, count) + k
        crc = np.full(len(start), 0xFFFFFFFF, dtype=np.int64)
        crc = table[(crc ^ ord("#")) & 0xFF] ^ (crc >> 8)
        for j in range(n):
            crc = table[(crc ^ buf[start + j]) & 0xFF] ^ (crc >> 8)
        crc_parts.append(crc ^ 0xFFFFFFFF)
        pos_parts.append(np.repeat(first + shift, count) + k)
        word_parts.append(np.repeat(word_ids, count))
        shift = shift + count
    return (
        np.concatenate(pos_parts),
        np.concatenate(crc_parts),
        np.concatenate(word_parts),
    )


_CRC_TABLE: list[Array] = []


def _crc32_table() -> Array:
    if not _CRC_TABLE:
        _CRC_TABLE.append(_crc_table())
    return _CRC_TABLE[0]


def _utf8_crcs(keys: Array) -> Array:
    """``zlib.crc32`` of the UTF-8 bytes of each n-gram key (21 bits a code point).

    CJK code points are all >= U+2E80, so a key's leading 21-bit group is never
    0 and its size (1..3 characters) is how many groups it has; each character
    is 3 UTF-8 bytes in the BMP and 4 above it.
    """
    import numpy as np

    table = _crc32_table()
    mask = (1 << 21) - 1
    size = np.where(keys >> 42, 3, np.where(keys >> 21, 2, 1))
    crc = np.full(len(keys), 0xFFFFFFFF, dtype=np.int64)
    for j in range(3):  # character j of each key, if it has one
        has = size > j
        cp = (keys >> (21 * (size - 1 - j)).clip(0)) & mask
        four = cp >= 0x10000
        lead = np.where(four, 0xF0 | (cp >> 18), 0xE0 | (cp >> 12))
        utf8 = [
            (lead, has),
            (0x80 | ((cp >> 12) & 0x3F), has & four),
            (0x80 | ((cp >> 6) & 0x3F), has),
            (0x80 | (cp & 0x3F), has),
        ]
        for byte, live in utf8:
            step = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
            crc = np.where(live, step, crc)
    return crc ^ 0xFFFFFFFF


_CP_CRCS: list[Array] = []


def _ngram_crcs(keys: Array) -> Array:
    """``_utf8_crcs`` for keys of one or two CJK code points, by tables.

    CRC-32 is affine, so ``crc(A + B) = L(crc(A)) ^ crc(B)`` where ``L`` feeds
    ``len(B)`` zero bytes through the table (3 bytes in the BMP, 4 above it):
    each key costs a few table lookups instead of a byte-by-byte pass, and the
    code points' own CRCs are one table for the whole CJK range (issue #7).
    """
    import numpy as np

    if not _CP_CRCS:  # correct from U+0800 (3-byte UTF-8); CJK starts at U+1100
        _CP_CRCS.append(_utf8_crcs(np.arange(0x323B0, dtype=np.int64)))
    cp_crc, table = _CP_CRCS[0], _crc32_table()
    first, last = keys >> 21, keys & ((1 << 21) - 1)
    crc: Array = cp_crc[last]
    two = np.flatnonzero(first)
    if len(two):
        head = cp_crc[first[two]]
        for _ in range(3):
            head = table[head & 0xFF] ^ (head >> 8)
        astral = np.flatnonzero(last[two] >= 0x10000)
        head[astral] = table[head[astral] & 0xFF] ^ (head[astral] >> 8)
        crc[two] ^= head
    return crc


def _finish(summed: Array, n: int, dim: int) -> FloatArray:
    """Bucket sums -> (n, dim) float32 rows scaled to unit length (zero stays zero).

    The sums are rounded to float32 and divided by ``_row_norms``.
    """
    import numpy as np

    rounded = summed.reshape(n, dim).astype(np.float32).astype(np.float64)
    norms = _row_norms(rounded)
    unit = np.zeros((n, dim), dtype=np.float64)
    np.divide(rounded, norms, out=unit, where=norms > 0)
    out: FloatArray = unit.astype(np.float32)
    return out


def _row_norms(rows: Array) -> Array:
    """(n, 1) norms of float64 ``rows``: each a left-to-right sum of the squares.

    A fixed order, unlike numpy's pairwise ``norm``, so ``_unit_row`` gets
    the same bits without numpy. Reducing the transposed squares over their
    outer axis adds them column after column, ~4x faster than the last
    column of a ``cumsum`` (issue #7); a single row would be reduced along
    its contiguous axis, pairwise, so it takes the ``cumsum``.
    """
    import numpy as np

    norms: Array
    if len(rows) == 1:
        norms = np.sqrt(np.cumsum(rows * rows, axis=1)[:, -1:])
        return norms
    squares = rows.T.copy()
    squares *= squares
    norms = np.sqrt(np.add.reduce(squares, axis=0))[:, None]
    return norms


_F32 = struct.Struct("<f")
_F16 = struct.Struct("<e")


def _f32(x: float) -> float:
    """``x`` rounded to float32 (to nearest, ties to even), as numpy casts it."""
    return float(_F32.unpack(_F32.pack(x))[0])


def _unit_row(sums: dict[int, float], dim: int) -> list[float]:
    """``_finish`` of one row of exact bucket sums, in pure Python (same bits)."""
    dense = [0.0] * dim
    for bucket, total in sums.items():
        dense[bucket] = total
    row = array("f", dense).tolist()  # float32 rounding, in C
    acc = 0.0
    for x in row:
        acc += x * x  # a float32 square is exact in float64; the adds round alike
    norm = math.sqrt(acc)
    return array("f", [x / norm for x in row]).tolist() if norm > 0 else row


def _quantize_row(row: list[float], bits: int) -> bytes:
    """``quantize`` of one float32 row, in pure Python (same bytes)."""
    top, scale_struct = (127.0, _F32) if bits == 8 else (7.0, _F16)
    peak = max(map(abs, row))
    packed = scale_struct.pack(_f32(peak / top))
    scale = scale_struct.unpack(packed)[0]
    if not scale > 0:
        scale, packed = 1.0, scale_struct.pack(1.0)
    # float32 quotients, then round(): ties to even, as np.rint
    q = [round(x) for x in array("f", [x / scale for x in row]).tolist()]
    if bits == 8:
        return packed + bytes(v & 0xFF for v in q)
    q = [min(7, max(-7, v)) & 0x0F for v in q]
    return packed + bytes(lo | hi << 4 for lo, hi in zip(q[0::2], q[1::2], strict=True))


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
        lens[words] += _n_subwords(wlen)
        own = np.cumsum(lens) - lens  # each term's first feature, from 0
        feat_idx = np.empty(int(lens.sum()), dtype=np.int64)
        feat_val = np.empty(len(feat_idx), dtype=np.float32)
        feat_idx[own] = h % self.dim
        feat_val[own] = np.where((h >> 31) & 1, 1.0, -1.0)
        if words:
            pos, grams, word = _subword_crcs(
                [new[i] for i in words], wlen, own[words] + 1
            )
            w = (SUBWORD_WEIGHT / np.sqrt(_n_subwords(wlen).astype(np.float64)))[word]
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
        self._feat_idx = _Buffer("int64")
        self._feat_val = _Buffer("float32")
        self._starts = _Buffer("int64")
        self._lens = _Buffer("int64")
        self._stop = _Buffer("bool")

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
        return _finish(np.bincount(idx, weights=val, minlength=n * dim), n, dim)

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
            _quantize_row(_unit_row(self._row_sums(words, runs), self.dim), self.bits)
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
            w = _log_tf32(tf)
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
            w = _log_tf32(tf)
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
            u_row, crc = pair >> 42, _ngram_crcs(pair & ((1 << 42) - 1))
        else:
            key_all = np.concatenate(keys)
            uniq, kid = np.unique(key_all, return_inverse=True)
            pair, tf = np.unique(
                np.concatenate(rows) * len(uniq) + kid, return_counts=True
            )
            u_row, u_kid = pair // len(uniq), pair % len(uniq)
            crc = _utf8_crcs(uniq)[u_kid]
        w = _log_tf(tf)
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
        return _finish(np.bincount(idx_all, weights=val_all, minlength=n * dim), n, dim)

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
        w = _log_tf(tf)
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


def quantize(vectors: FloatArray, bits: int = 8) -> list[bytes]:
    """Encode unit vectors as blobs: a little-endian scale, then the values.

    ``bits`` 8: a float32 scale and one int8 per value (``dim + 4`` bytes).
    ``bits`` 4: a float16 scale and values in -7..7, two per byte, low nibble
    first (``dim / 2 + 2`` bytes; issue #7: index size). The blob's length
    says which, so readers need no flag.
    """
    import numpy as np

    top, kind = (127.0, "<f4") if bits == 8 else (7.0, "<f2")
    peak = np.abs(vectors).max(axis=1)
    # A peak too small for the scale's type encodes as 0 (a zero row).
    scale = (peak / np.float32(top)).astype(kind)
    scale = np.where(scale > 0, scale, 1.0).astype(kind)
    q = np.rint(vectors / scale[:, None].astype(np.float32)).astype(np.int8)
    if bits == 4:
        q = np.clip(q, -7, 7)
        nib = (q & 0x0F).astype(np.uint8)
        q = (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8)
    rows = np.concatenate([scale[:, None].view(np.uint8), q.view(np.uint8)], axis=1)
    flat, width = rows.tobytes(), rows.shape[1]
    return [flat[i : i + width] for i in range(0, len(flat), width)]


# bytes.translate tables: a packed int4 byte -> its low / high nibble as int8.
_LOW_NIBBLE = bytes((b & 15) - 16 * (b >> 3 & 1) & 0xFF for b in range(256))
_HIGH_NIBBLE = bytes((b >> 4) - 16 * (b >> 7) & 0xFF for b in range(256))


def cosine_int8(query: Sequence[float], blobs: Sequence[bytes]) -> list[float]:
    """Dot products of a unit query with int8 or int4 blobs, in pure Python (no numpy)."""
    import array
    import operator
    import struct

    out: list[float] = []
    dim = len(query)
    even, odd = query[0::2], query[1::2]
    mul = operator.mul
    for blob in blobs:
        if len(blob) == dim + 4:
            (scale,) = struct.unpack_from("<f", blob)
            out.append(scale * sum(map(mul, query, array.array("b", blob[4:]))))
            continue
        (scale,) = struct.unpack_from("<e", blob)
        packed = blob[2:]
        low = array.array("b", packed.translate(_LOW_NIBBLE))
        high = array.array("b", packed.translate(_HIGH_NIBBLE))
        out.append(scale * (sum(map(mul, even, low)) + sum(map(mul, odd, high))))
    return out


def dequantize(blobs: Sequence[bytes], dim: int) -> FloatArray:
    """Decode int8 or int4 blobs (``quantize``) back to an (n, dim) float32 matrix."""
    import numpy as np

    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    width = len(blobs[0])
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), width)
    if width == dim + 4:
        scale = raw[:, :4].copy().view("<f4").reshape(-1)
        q = raw[:, 4:].view(np.int8).astype(np.float32)
    else:
        scale = raw[:, :2].copy().view("<f2").reshape(-1).astype(np.float32)
        packed = raw[:, 2:].view(np.int8)
        q = np.empty((len(blobs), dim), dtype=np.float32)
        q[:, 0::2] = (packed << 4) >> 4  # arithmetic shifts sign-extend nibbles
        q[:, 1::2] = packed >> 4
    result: FloatArray = q * scale[:, None]
    return result
