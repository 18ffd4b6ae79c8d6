"""Every stored vector as one int8 matrix, kept between calls (issue #37).

``related`` scores a chunk or a file against every vector of the index. On
the shared docs corpus (85k vectors) reading them back from SQLite and
decoding them costs ~150 ms, three quarters of the command; a process that
answers again (MCP, the warm server, a library user) keeps the decoded codes
(1 byte a dimension: 22 MB there) and pays ~5 ms a call.

The cache is keyed on what the caller knows changes with the index (its
file's and WAL's size and mtime) plus the largest segment id and the vector
meta, so a re-scan in another process is seen on the next call.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import TYPE_CHECKING, NamedTuple

from docindex.store import DocFilter, Index

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

BLOCK = 8192  # rows cast to float32 at a time: bounded scratch memory


class VectorMatrix(NamedTuple):
    """Segment ids, their int8 codes (n, dim) and per-row scales."""

    ids: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int8]
    scales: npt.NDArray[np.float32]

    def cosines(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Dot products of every row with ``query`` (cosines for unit vectors)."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32)
        out = np.empty(len(self.ids), dtype=np.float32)
        for lo in range(0, len(self.ids), BLOCK):
            # einsum, not ``@``: OpenBLAS's threaded matrix-vector product
            # spins against a busy CPU (85k x 256 on 2 cores at load 5: 160 ms
            # median, against 21 ms for einsum's single-threaded loop).
            block = self.codes[lo : lo + BLOCK].astype(np.float32)
            out[lo : lo + BLOCK] = np.einsum("ij,j->i", block, q)
        result: npt.NDArray[np.float32] = out * self.scales
        return result


_lock = threading.Lock()
_cached: tuple[Hashable, VectorMatrix] | None = None  # one index per process


def decode(blobs: list[bytes], dim: int) -> tuple[
    npt.NDArray[np.int8], npt.NDArray[np.float32]
]:  # fmt: skip
    """int8 codes and scales of ``quantize``'s int8 or int4 blobs."""
    import numpy as np

    if not blobs:
        return np.zeros((0, dim), dtype=np.int8), np.zeros(0, dtype=np.float32)
    width = len(blobs[0])
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), width)
    if width == dim + 4:
        scales = raw[:, :4].copy().view("<f4").reshape(-1).astype(np.float32)
        return raw[:, 4:].view(np.int8).copy(), scales
    scales = raw[:, :2].copy().view("<f2").reshape(-1).astype(np.float32)
    packed = raw[:, 2:].view(np.int8)
    codes = np.empty((len(blobs), dim), dtype=np.int8)
    codes[:, 0::2] = (packed << 4) >> 4  # arithmetic shifts sign-extend nibbles
    codes[:, 1::2] = packed >> 4
    return codes, scales


def vector_matrix(
    store: Index, only: DocFilter, dim: int, key: Hashable | None = None
) -> VectorMatrix:
    """Every vector of the documents ``only`` selects, decoded.

    Args:
        store: the open index.
        only: which documents (roots); kept in the cache key.
        dim: the vectors' dimension.
        key: what identifies this index's current state (None: no caching).
    """
    import numpy as np

    global _cached
    full: Hashable | None = None
    if key is not None:
        full = (key, only, dim, store.max_segment_id(), str(store.get_meta("embedder")))
        with _lock:
            if _cached is not None and _cached[0] == full:
                return _cached[1]
    ids, blobs = store.all_vectors(only)
    codes, scales = decode(blobs, dim)
    matrix = VectorMatrix(np.asarray(ids, dtype=np.int64), codes, scales)
    if full is not None:
        with _lock:
            _cached = (full, matrix)
    return matrix
