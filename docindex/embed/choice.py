"""The ``Embedder`` interface and the one place that picks an embedder (issue #18).

An embedder turns texts into unit float32 rows. The configuration chooses it
once (``choose``): ``ngram`` (``embed.NgramEmbedder``, the default),
``minilm`` (``embed_minilm.MiniLMEmbedder``, the ``neural`` extra),
``multilingual`` (``embed.multilingual.MultilingualEmbedder``, the
``multilingual`` extra, one vector per document, issue #47) or ``none``.
The indexer and the search receive what ``choose`` returns and call the
interface; they never probe an embedder's attributes. When a neural provider is
asked for but cannot run, the choice falls back to ``ngram`` and says why
(``EmbedderChoice.reason``), instead of patching the fallback object.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docindex.config import Config

    FloatArray = npt.NDArray[np.float32]


class Embedder(Protocol):
    """What the indexer and the search need from an embedder.

    Attributes:
        name: the provider name recorded in the index (``ngram``, ``minilm``,
            ``multilingual``).
        dim: the vector length.
        bits: stored precision of a vector value (``embed.quantize``: 8 or 4).
        deferred: True when vectors are made after the lexical scan, in a
            resumable phase (slow neural models, issue #9).
        unit: ``segment`` (a vector per chunk) or ``document`` (one per
            document, stored on its first segment: issue #47).
    """

    name: str
    dim: int
    bits: int
    deferred: bool
    unit: str

    def params(self) -> dict[str, object]:
        """What the index records and checks on open (provider, dim, ...)."""
        ...

    def embed(
        self, texts: Sequence[str], weights: dict[str, float] | None = None
    ) -> FloatArray:
        """An (n, dim) float32 array of unit rows; ``weights`` are per-term idf."""
        ...

    def embed_query(self, text: str, weights: dict[str, float] | None = None) -> Any:
        """A query's unit vector (1-d float32); a model may prefix queries."""
        ...

    def query_terms(self, text: str) -> list[str]:
        """The terms whose idf weights a query's vector (may be empty)."""
        ...


class EmbedderChoice(NamedTuple):
    """The embedder a configuration asked for, and what it got.

    Attributes:
        provider: the configured provider (``ngram``, ``minilm``,
            ``multilingual``, ``none``).
        embedder: the embedder to use, None for provider ``none``.
        reason: why ``provider`` is unavailable (then ``embedder`` is the
            ``ngram`` fallback), or None.
    """

    provider: str
    embedder: Embedder | None
    reason: str | None = None

    @property
    def available(self) -> bool:
        """True when the configured provider runs as asked."""
        return self.reason is None

    @property
    def warning(self) -> str | None:
        """The one-line warning a scan reports for a fallback, or None."""
        if self.reason is None:
            return None
        return (
            f"{self.provider} embeddings unavailable ({self.reason}); using ngram "
            f"instead ({provider_hint(self.provider)})"
        )


def provider_hint(provider: str) -> str:
    """How to install what a neural provider needs."""
    if provider == "multilingual":
        from docindex.embed.multilingual import INSTALL_HINT
    else:
        from docindex.embed.minilm import INSTALL_HINT
    return INSTALL_HINT


def make_choice(
    provider: str, dim: int, cjk_ngram: int, use_stem: bool, model: str = ""
) -> EmbedderChoice:
    """Build the embedder for a provider name (uncached; see ``choose``)."""
    from docindex.embed.ngram import NgramEmbedder

    if provider == "none":
        return EmbedderChoice(provider, None)
    if provider == "minilm":
        from docindex.embed.minilm import MiniLMEmbedder, unavailable_reason

        reason = unavailable_reason(model)
        if reason is None:
            from docindex.config import cache_dir

            return EmbedderChoice(
                provider, MiniLMEmbedder(model, cache_dir=cache_dir())
            )
        fallback = NgramEmbedder(dim=dim, cjk_ngram=cjk_ngram, use_stem=use_stem)
        return EmbedderChoice(provider, fallback, reason)
    if provider == "multilingual":
        from docindex.embed import multilingual

        reason = multilingual.unavailable_reason()
        if reason is None:
            from docindex.config import cache_dir

            return EmbedderChoice(
                provider, multilingual.MultilingualEmbedder(cache_dir=cache_dir())
            )
        fallback = NgramEmbedder(dim=dim, cjk_ngram=cjk_ngram, use_stem=use_stem)
        return EmbedderChoice(provider, fallback, reason)
    return EmbedderChoice(
        provider, NgramEmbedder(dim=dim, cjk_ngram=cjk_ngram, use_stem=use_stem)
    )


def make_embedder(
    provider: str, dim: int, cjk_ngram: int, use_stem: bool, model: str = ""
) -> Embedder | None:
    """The embedder for a provider name, or None for ``none`` (uncached)."""
    return make_choice(provider, dim, cjk_ngram, use_stem, model).embedder


def choose(cfg: Config) -> EmbedderChoice:
    """The embedder ``cfg`` asks for, built once per thread and settings.

    Cached because a model loads once (seconds for ``minilm``) and the
    n-gram embedder keeps its feature vocabulary warm between calls. Per
    thread (issue #17): an embedder keeps growable work buffers and is not
    safe to share; two MCP tool calls embedding at once on one shared
    embedder corrupted each other's buffers.
    """
    key = (cfg.embedding_provider, cfg.embedding_dim, cfg.cjk_ngram, cfg.stem,
           cfg.embedding_model)  # fmt: skip
    cache: dict[tuple[str, int, int, bool, str], EmbedderChoice] | None = getattr(
        _PER_THREAD, "choices", None
    )
    if cache is None:
        cache = _PER_THREAD.choices = {}
    choice = cache.get(key)
    if choice is None:
        choice = cache[key] = make_choice(*key)
    return choice


_PER_THREAD = threading.local()


def embedder_for(cfg: Config) -> Embedder | None:
    """``choose(cfg).embedder``: the embedder to use, None for provider ``none``."""
    return choose(cfg).embedder
