"""The optional neural provider ``minilm`` (issue #9).

Tests that need the model run the real packaged all-MiniLM-L6-v2 and are
skipped with the reason when the ``neural`` extra is not installed; the
degradation tests run everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import run, run_json

from docindex.embed.minilm import dense_gate, onnx_available, unavailable_reason

REASON = unavailable_reason()
needs_model = pytest.mark.skipif(
    REASON is not None, reason=f"neural extra not installed: {REASON}"
)
needs_onnx = pytest.mark.skipif(
    REASON is not None or not onnx_available(), reason="onnx/onnxruntime not installed"
)
REFERENCE = json.loads(
    (Path(__file__).parent / "fixtures" / "minilm_reference.json").read_text("utf-8")
)
DOCS = {
    "food.md": "# Meals\n\nA man is eating a piece of bread at the table.\n",
    "space.md": "# Rockets\n\nThe launch vehicle reached orbit after stage separation.\n",
    "zh.md": "# 检索\n\n这是一个关于向量检索和中文分词的文档。\n",
}


@pytest.fixture(scope="module")
def numpy_embedder() -> Any:
    from docindex.embed.minilm import MiniLMEmbedder

    return MiniLMEmbedder(backend="numpy")


def _cos(a: Any, b: Any) -> Any:
    return (a * b).sum(axis=1)


@needs_model
def test_numpy_core_matches_stored_reference(numpy_embedder: Any) -> None:
    import numpy as np

    vectors = numpy_embedder.embed(REFERENCE["sentences"])
    assert vectors.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    got = vectors[:, : len(REFERENCE["first_dims"][0])]
    np.testing.assert_allclose(got, np.array(REFERENCE["first_dims"]), atol=2e-5)
    np.testing.assert_allclose(vectors @ vectors.T, REFERENCE["cosines"], atol=2e-5)


SENTENCES = [*REFERENCE["sentences"], "short", "a much longer sentence " * 20]


@needs_onnx
def test_default_int8_onnx_core_agrees_with_numpy(numpy_embedder: Any) -> None:
    from docindex.config import Config
    from docindex.embed.choice import embedder_for

    # shared with the CLI tests
    onnx = embedder_for(Config(embedding_provider="minilm"))
    assert (onnx.backend, onnx.int8) == ("onnx", True)
    cos = _cos(onnx.embed(SENTENCES), numpy_embedder.embed(SENTENCES))
    assert cos.min() >= 0.98, cos


@needs_onnx
@pytest.mark.slow
def test_fp32_onnx_core_agrees_with_numpy(numpy_embedder: Any) -> None:
    from docindex.embed.minilm import MiniLMEmbedder

    onnx = MiniLMEmbedder(backend="onnx", int8=False)
    cos = _cos(onnx.embed(SENTENCES), numpy_embedder.embed(SENTENCES))
    assert cos.min() >= 0.9999, cos


@needs_model
def test_paraphrases_are_closer_than_unrelated(numpy_embedder: Any) -> None:
    a, para, other = numpy_embedder.embed(
        ["How do I reset my password?", "I forgot my password, how can I change it?",
         "The volcano erupted last spring."]
    )  # fmt: skip
    assert float(a @ para) > float(a @ other) + 0.3


@needs_model
def test_truncation_and_empty_batch(numpy_embedder: Any) -> None:
    assert numpy_embedder.embed([]).shape == (0, 384)
    long = numpy_embedder.embed(["word " * 2000])
    assert long.shape == (1, 384)


def test_length_batches_group_equal_lengths_longest_first() -> None:
    from docindex.embed.minilm import BATCH_TOKENS, length_batches

    lengths = [5, 300, 5, 40, 5, 40, 1, *[7] * 200]
    batches = length_batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len({lengths[i] for i in b}) == 1 for b in batches)  # no padding
    firsts = [lengths[b[0]] for b in batches]
    assert firsts == sorted(firsts, reverse=True)
    assert batches[0] == [1]  # over half of BATCH_TOKENS: a batch of its own
    assert all(len(b) * lengths[b[0]] <= BATCH_TOKENS for b in batches[1:])


@needs_model
def test_vector_does_not_depend_on_batch_mates(numpy_embedder: Any) -> None:
    import numpy as np

    texts = ["A man is eating bread.", "short", "a much longer sentence " * 30]
    together = numpy_embedder.embed(texts)
    alone = np.vstack([numpy_embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


@needs_onnx
def test_optimised_model_cache_is_keyed_by_graph_version(tmp_path: Path) -> None:
    import numpy as np

    from docindex.embed.minilm import GRAPH_VERSION, MiniLMEmbedder

    built = MiniLMEmbedder(cache_dir=tmp_path).embed(SENTENCES)
    (cached,) = tmp_path.glob("minilm-*.onnx")
    assert f"-g{GRAPH_VERSION}-" in cached.name
    loaded = MiniLMEmbedder(cache_dir=tmp_path).embed(SENTENCES)  # from the cache
    np.testing.assert_allclose(_cos(built, loaded), 1.0, atol=1e-4)


@needs_model
def test_gate_fires_for_cjk_and_unknown_queries(numpy_embedder: Any) -> None:
    assert dense_gate(numpy_embedder, "how do I rotate the keys") is None
    assert "cjk" in (dense_gate(numpy_embedder, "向量检索怎么用") or "")
    assert "unknown" in (dense_gate(numpy_embedder, "ⵜⴰⵎⴰⵣⵉⵖⵜ ⴷ ⵜⵓⵜⵍⴰⵢⵜ") or "")


def test_gate_never_fires_for_ngram() -> None:
    from docindex.embed.ngram import NgramEmbedder

    assert dense_gate(NgramEmbedder(), "向量检索怎么用") is None


@needs_model
def test_scan_query_explain_and_resume(
    tree: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = tree(DOCS)
    scanned = run_json("scan", str(root), "--provider", "minilm")
    assert scanned["embedded"] == scanned["segments"] > 0
    assert scanned["degraded"] is False
    stats = run_json("stats")
    assert stats["embedder"]["provider"] == "minilm"
    assert stats["embedder"]["dim"] == 384

    hits = run_json("query", "someone has a meal", "--explain")
    assert "semantic" in hits["used"]
    assert hits["hits"][0]["rel_path"] == "food.md"
    assert all("gate" not in h["explain"] for h in hits["hits"])
    zh = run_json("query", "向量检索", "--explain")
    # The gate turns the model off; n-gram vectors made on the fly stand in.
    assert zh["hits"] and zh["used"] == ["lexical", "ngram"]
    assert "semantic" not in zh["used"]
    assert zh["hits"][0]["explain"]["gate"].startswith("cjk query")

    # An interrupted embedding phase leaves NULL vectors; the next scan embeds
    # only those (real SQLite file, no mocks).
    from docindex.store import Store

    with Store.open(tmp_path / "db" / "index.db") as store, store.atomic():
        store.conn.execute("UPDATE segments SET vec = NULL WHERE id = (SELECT min(id) "
                           "FROM segments)")  # fmt: skip
    again = run_json("scan")
    assert again["embedded"] == 1
    assert run_json("scan")["embedded"] == 0

    switched = run("scan", "--provider", "ngram", ok=False)
    assert switched.exit_code == 1
    assert "reindex --full" in switched.stderr


def test_missing_model_degrades_to_ngram(
    tree: Callable[[dict[str, str]], Path], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("DOCINDEX_EMBEDDING_MODEL", str(tmp_path / "no-such-model"))
    root = tree(DOCS)
    scanned = run_json("scan", str(root), "--provider", "minilm")
    assert scanned["degraded"] is True
    assert scanned["embedded"] == scanned["segments"] > 0  # ngram vectors
    (warning,) = scanned["warnings"]
    assert "minilm embeddings unavailable" in warning and "\n" not in warning
    assert run_json("stats")["embedder"]["provider"] == "ngram"
    result = run_json("query", "bread")
    assert result["degraded"] is True
    assert result["hits"][0]["rel_path"] == "food.md"
    human = run("scan")
    assert "warning: minilm embeddings unavailable" in human.stderr
    assert "docindex-cli[neural]" in human.stderr
    assert "Traceback" not in human.output


def test_neural_weight_is_validated() -> None:
    from docindex.config import Config
    from docindex.errors import ConfigError

    assert Config().neural_weight == 2.0
    with pytest.raises(ConfigError, match="neural_weight"):
        Config().replace(neural_weight=11.0)
