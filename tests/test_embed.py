"""The feature-hashed embedder: stable, spread, normalised; int8 blobs round-trip."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from docindex.embed.choice import make_embedder
from docindex.embed.ngram import PURE_TOKENS_MAX, NgramEmbedder
from docindex.embed.quantized import dequantize, quantize

TEXTS = [
    "Indexing documents with SQLite FTS5",
    "我们学习中文检索",
    "日本語の検索 and 한국어",
]


def test_embedding_is_stable_across_processes() -> None:
    """CRC-32 hashing, never the per-process salted hash(): same bytes elsewhere."""
    code = (
        "import sys\n"
        "from docindex.embed.ngram import NgramEmbedder\n"
        f"v = NgramEmbedder(dim=256).embed({TEXTS!r})\n"
        "sys.stdout.buffer.write(v.astype('<f4').tobytes())\n"
    )
    env_runs = []
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        )
        env_runs.append(out.stdout)
    here = NgramEmbedder(dim=256).embed(TEXTS).astype("<f4").tobytes()
    assert env_runs[0] == env_runs[1] == here


def test_cjk_characters_spread_over_buckets() -> None:
    """The original mapped 你 and 习 to one bucket; they must differ now."""
    emb = NgramEmbedder(dim=256)
    a, b = emb.embed(["你", "习"])
    assert np.flatnonzero(a).tolist() != np.flatnonzero(b).tolist()
    assert float(a @ b) < 0.5
    # All 1-character CJK features of a common sentence hit many buckets.
    text = "我们学习中文检索系统的设计与实现方法"
    assert np.count_nonzero(emb.embed([text])[0]) >= len(set(text))


def test_vectors_are_unit_length_or_zero() -> None:
    emb = NgramEmbedder(dim=128)
    vecs = emb.embed([*TEXTS, "", "   ", "the a of"])
    norms = np.linalg.norm(vecs, axis=1)
    assert np.allclose(norms[:3], 1.0, atol=1e-5)
    assert np.all(norms[3:5] == 0.0)
    assert vecs.dtype == np.float32 and vecs.shape == (6, 128)


def test_subword_ngrams_bring_word_forms_close() -> None:
    emb = NgramEmbedder(dim=1024)
    index, indexing, banana = emb.embed(["reindex", "reindexing", "banana"])
    assert float(index @ indexing) > float(index @ banana) + 0.3


def test_query_weights_change_the_vector() -> None:
    emb = NgramEmbedder(dim=256)
    plain = emb.embed(["rotate keys"])[0]
    weighted = emb.embed(["rotate keys"], weights={"key": 5.0})[0]
    assert not np.allclose(plain, weighted)
    assert np.isclose(np.linalg.norm(weighted), 1.0, atol=1e-5)


def test_provider_none_has_no_embedder() -> None:
    assert make_embedder("none", 256, 2, True) is None
    assert isinstance(make_embedder("ngram", 64, 2, True), NgramEmbedder)


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float32,
        st.tuples(st.integers(1, 5), st.sampled_from([16, 64])),
        elements=st.floats(-1, 1, width=32, allow_nan=False),
    )
)
def test_quantize_round_trip(matrix: np.ndarray) -> None:
    """int8 and int4 blobs decode to within half a quantisation step of the input."""
    from docindex.embed.quantized import cosine_int8

    dim = matrix.shape[1]
    peak = np.abs(matrix).max(axis=1, keepdims=True)
    query = [float(x) for x in np.linspace(-1, 1, dim)]
    for bits, top, width in ((8, 127.0, dim + 4), (4, 7.0, dim // 2 + 2)):
        blobs = quantize(matrix, bits)
        assert all(len(b) == width for b in blobs)
        back = dequantize(blobs, dim)
        assert back.shape == matrix.shape
        step = np.where(peak > 0, peak / top, 1.0)
        # int4's float16 scale is rounded (relative error <= 2**-11), which
        # can move the largest value by up to 7 such errors.
        slack = 1e-6 if bits == 8 else 7 * 2.0**-11 * np.abs(matrix).max()
        assert np.all(np.abs(back - matrix) <= step * 0.5 + slack + 1e-6)
        # The pure-Python scorer decodes the same values.
        expected = back.astype(np.float64) @ np.array(query)
        assert np.allclose(cosine_int8(query, blobs), expected, atol=1e-4)


def test_quantized_cosine_matches_float_cosine() -> None:
    emb = NgramEmbedder(dim=256)
    vecs = emb.embed(TEXTS)
    back = dequantize(quantize(vecs), 256)
    assert np.allclose(back @ vecs[0], vecs @ vecs[0], atol=0.02)
    four = dequantize(quantize(vecs, 4), 256)
    four /= np.linalg.norm(four, axis=1, keepdims=True)
    assert np.allclose(four @ vecs[0], vecs @ vecs[0], atol=0.06)
    assert emb.bits == 4 and emb.params()["bits"] == 4
    assert NgramEmbedder(dim=255).bits == 8  # int4 packs pairs: odd dims stay int8


def test_pure_python_query_path_matches_numpy() -> None:
    import numpy as np

    from docindex.embed.ngram import NgramEmbedder
    from docindex.embed.quantized import cosine_int8, dequantize, quantize

    emb = NgramEmbedder(dim=256)
    docs = ["indexing the documents quickly", "全文检索与数据库索引", "unrelated cats"]
    blobs = quantize(emb.embed(docs))
    weights = {"index": 2.0, "全文": 1.5}
    for query in ["index documents", "全文检索", "the", "cat indexes"]:
        fast = np.array(emb.query_vector(query, weights), dtype=np.float64)
        slow = emb.embed([query], weights=weights)[0]
        assert np.allclose(fast, slow, atol=1e-6)
        expected = dequantize(blobs, 256) @ slow
        assert np.allclose(cosine_int8(list(fast), blobs), expected, atol=1e-5)


def test_vectorised_vocabulary_equals_per_term_features() -> None:
    """The batch CRC-32 of sub-words is zlib's, term by term (issue #3 speed)."""
    import zlib

    from docindex.embed.ngram import SUBWORD_WEIGHT

    emb = NgramEmbedder(dim=512)
    new = ["index", "abc", "abcd", "x9y8z7", "configur", "the", "你好", "检",
           "über", "k8s", "a" * 40, "hello"]  # fmt: skip
    emb._add_terms(new)
    for term in new:
        i = emb._vocab[term]
        start, n = int(emb._starts.data[i]), int(emb._lens.data[i])
        idx, val = emb._term_features(term)
        assert emb._feat_idx.data[start : start + n].tolist() == idx
        assert emb._feat_val.data[start : start + n].tolist() == list(np.float32(val))
        assert bool(emb._stop.data[i]) == (term == "the")
    # Independent check of one sub-word: "<ab" of "abcd" hashed by zlib.
    h = zlib.crc32(b"#<ab")
    i = emb._vocab["abcd"]
    start = int(emb._starts.data[i])
    assert emb._feat_idx.data[start + 1] == h % 512
    w = SUBWORD_WEIGHT / np.sqrt(7)  # 4 three-grams + 3 four-grams of "<abcd>"
    assert np.isclose(abs(emb._feat_val.data[start + 1]), w)


_WORDS = ["index", "indexing", "the", "was", "a", "x9", "sqlite3", "b" * 40, "ab",
          "configur", "of", "café", "useeffect", "q"]  # fmt: skip
_RUNS = ["中文", "检索引擎", "ア", "한국어", "𠀀𠀁", "的的的的", "\U000323af中"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(_WORDS), max_size=80),
            st.lists(st.sampled_from(_RUNS), max_size=12),
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([(256, 2, 4), (256, 2, 8), (64, 1, 4), (96, 3, 8)]),
)
def test_pure_python_rows_equal_the_numpy_path(rows, params) -> None:
    """quantized_rows' numpy-free path gives the numpy path's bytes (issue #7)."""
    dim, cjk, bits = params
    emb = NgramEmbedder(dim=dim, cjk_ngram=cjk, bits=bits)
    words = [w for w, _ in rows]
    runs = [r for _, r in rows]
    expected = quantize(emb.embed_parts(words, runs), emb.bits)
    assert _pure_rows(emb, words, runs) == expected


def _pure_rows(emb: NgramEmbedder, words: list, runs: list) -> list[bytes]:
    """quantized_rows' numpy-free path: a fresh instance, a small batch, not bulk."""
    fresh = NgramEmbedder(dim=emb.dim, cjk_ngram=emb.cjk_ngram, bits=emb.bits)
    assert not fresh.numpy_used and sum(map(len, words)) < PURE_TOKENS_MAX
    rows = fresh.quantized_rows(words, runs)
    assert not fresh.numpy_used  # it took the pure-Python path
    return rows


@pytest.mark.parametrize("n", [1, 2, 3, 17])
def test_row_norms_add_left_to_right(n) -> None:
    """_finish's norms add the squares in _unit_row's order, for one row or many.

    Values spanning 10^-4..10^4 make the float64 sum depend on its order: a
    pairwise sum (numpy's, along a contiguous axis) differs in most rows.
    """
    import math

    from docindex.embed.hashing import row_norms

    rng = np.random.default_rng(n)
    for dim in (16, 64, 256):
        for _ in range(60 // n):
            rows = rng.standard_normal((n, dim)) * 10.0 ** rng.integers(-4, 5, (n, dim))
            got = row_norms(rows)
            for i in range(n):
                acc = 0.0
                for x in rows[i].tolist():
                    acc += x * x
                assert got[i, 0] == math.sqrt(acc)


def test_many_repeats_and_empty_rows_in_pure_python() -> None:
    emb = NgramEmbedder()
    words = [["index"] * 300 + ["query"] * 70, [], ["the", "of"]]
    runs = [["中" * 90], [], []]
    expected = quantize(emb.embed_parts(words, runs), emb.bits)
    assert _pure_rows(emb, words, runs) == expected and expected[1] == expected[2]


def test_rescanning_one_file_never_imports_numpy(tmp_path) -> None:
    """A small scan embeds without numpy, and stores the same vectors (issue #7)."""
    import os
    import subprocess
    import sys

    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# Guide\n\nIndexing notes about 全文检索 and search.\n")
    code = (
        "import sys, sqlite3\n"
        "if sys.argv[2] == 'numpy':\n"
        "    import numpy\n"
        "import docindex\n"
        "docindex.open(sys.argv[1]).scan(sys.argv[3])\n"
        "vecs = sqlite3.connect(sys.argv[1]).execute(\n"
        "    'SELECT vec FROM segments ORDER BY id').fetchall()\n"
        "print('numpy' in sys.modules, [v[0].hex() for v in vecs])\n"
    )
    outs = []
    for mode in ("pure", "numpy"):
        db = tmp_path / f"{mode}.db"
        done = subprocess.run(
            [sys.executable, "-c", code, str(db), mode, str(root)],
            capture_output=True, text=True, env=dict(os.environ), check=True,
        )  # fmt: skip
        outs.append(done.stdout.strip())
    assert outs[0].startswith("False [") and outs[1].startswith("True [")
    assert outs[0].split(" ", 1)[1] == outs[1].split(" ", 1)[1]
