"""The n-gram embedder's arithmetic: CRC-32 feature hashing, sub-word
n-grams, sublinear tf and unit rows, vectorised with numpy and in plain Python.

Kept apart from ``ngram`` (issue #49), whose ``NgramEmbedder`` decides which
features a text has; this module turns features into numbers, bit for bit
the same on both paths (``quantized_rows`` without numpy, ``embed`` with it).
"""

from __future__ import annotations

import math
import struct
from array import array
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]
    # An array whose dtype the code that makes it decides (counts, CRCs, sums).
    Array = npt.NDArray[Any]

SUBWORD_SIZES = (3, 4)  # character n-grams of "<word>" for latin words of 4+ letters


def n_subwords(length: Array) -> Array:
    """How many sub-words words of ``length`` letters have (``<word>``'s n-grams)."""
    per_word = sum(3 - n for n in SUBWORD_SIZES)  # sum(length + 3 - n), exactly
    return length * len(SUBWORD_SIZES) + per_word


_N_LOG_TF = 64
_LOG_TF = [0.0] + [1.0 + math.log(tf) for tf in range(1, _N_LOG_TF)]


def log_tf(tf: Array) -> Array:
    """``1 + math.log(tf)`` of an array of counts, as float64 (math.log, not np.log)."""
    import numpy as np

    w = np.array(_LOG_TF, dtype=np.float64)[np.minimum(tf, _N_LOG_TF - 1)]
    if tf.max() >= _N_LOG_TF:
        big = np.flatnonzero(tf >= _N_LOG_TF)
        w[big] = [1.0 + math.log(int(t)) for t in tf[big]]
    return w


def log_tf32(tf: int) -> float:
    """``log_tf`` of one count, rounded to float32 (``quantized_rows``' pure path)."""
    return f32(_LOG_TF[tf] if tf < _N_LOG_TF else 1.0 + math.log(tf))


class Buffer:
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


def subword_crcs(
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


def utf8_crcs(keys: Array) -> Array:
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


def ngram_crcs(keys: Array) -> Array:
    """``utf8_crcs`` for keys of one or two CJK code points, by tables.

    CRC-32 is affine, so ``crc(A + B) = L(crc(A)) ^ crc(B)`` where ``L`` feeds
    ``len(B)`` zero bytes through the table (3 bytes in the BMP, 4 above it):
    each key costs a few table lookups instead of a byte-by-byte pass, and the
    code points' own CRCs are one table for the whole CJK range (issue #7).
    """
    import numpy as np

    if not _CP_CRCS:  # correct from U+0800 (3-byte UTF-8); CJK starts at U+1100
        _CP_CRCS.append(utf8_crcs(np.arange(0x323B0, dtype=np.int64)))
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


def finish(summed: Array, n: int, dim: int) -> FloatArray:
    """Bucket sums -> (n, dim) float32 rows scaled to unit length (zero stays zero).

    The sums are rounded to float32 and divided by ``row_norms``.
    """
    import numpy as np

    rounded = summed.reshape(n, dim).astype(np.float32).astype(np.float64)
    norms = row_norms(rounded)
    unit = np.zeros((n, dim), dtype=np.float64)
    np.divide(rounded, norms, out=unit, where=norms > 0)
    out: FloatArray = unit.astype(np.float32)
    return out


def row_norms(rows: Array) -> Array:
    """(n, 1) norms of float64 ``rows``: each a left-to-right sum of the squares.

    A fixed order, unlike numpy's pairwise ``norm``, so ``unit_row`` gets
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


def f32(x: float) -> float:
    """``x`` rounded to float32 (to nearest, ties to even), as numpy casts it."""
    return float(_F32.unpack(_F32.pack(x))[0])


def unit_row(sums: dict[int, float], dim: int) -> list[float]:
    """``finish`` of one row of exact bucket sums, in pure Python (same bits)."""
    dense = [0.0] * dim
    for bucket, total in sums.items():
        dense[bucket] = total
    row = array("f", dense).tolist()  # float32 rounding, in C
    acc = 0.0
    for x in row:
        acc += x * x  # a float32 square is exact in float64; the adds round alike
    norm = math.sqrt(acc)
    return array("f", [x / norm for x in row]).tolist() if norm > 0 else row


def quantize_row(row: list[float], bits: int) -> bytes:
    """``quantize`` of one float32 row, in pure Python (same bytes)."""
    top, scale_struct = (127.0, _F32) if bits == 8 else (7.0, _F16)
    peak = max(map(abs, row))
    packed = scale_struct.pack(f32(peak / top))
    scale = scale_struct.unpack(packed)[0]
    if not scale > 0:
        scale, packed = 1.0, scale_struct.pack(1.0)
    # float32 quotients, then round(): ties to even, as np.rint
    q = [round(x) for x in array("f", [x / scale for x in row]).tolist()]
    if bits == 8:
        return packed + bytes(v & 0xFF for v in q)
    q = [min(7, max(-7, v)) & 0x0F for v in q]
    return packed + bytes(lo | hi << 4 for lo, hi in zip(q[0::2], q[1::2], strict=True))
