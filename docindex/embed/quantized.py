"""Stored vectors: unit float32 rows as int8 or int4 blobs, and back (issue #7).

Every provider's vectors are stored this way; readers (the semantic list,
``related``, imports) need these functions and no embedder (issue #49).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]


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
