"""Ranking: fusion maths, modes and degradation, --explain, --files, --min-score, snippets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import run, run_json
from hypothesis import given, settings
from hypothesis import strategies as st

from docindex.search.engine import fuse_scores, rrf
from docindex.search.snippet import make_snippet, open_fence

DOCS = {
    "fetch.md": "# Fetching data\n\nThe client fetched the data and fetches more later.\n",
    "keys.md": "# Key rotation\n\nRotate the signing keys every ninety days.\n\n"
    "## Revoking\n\nRevoke a key at once when it leaks.\n",
    "cache.md": "# Caching\n\nThe cache keeps fetched pages for an hour.\n",
    "zh.md": "# 学习\n\n我们每天学习中文。检索系统帮助我们学习。\n",
    "ja.md": "# 検索\n\n日本語の全文検索を試します。\n",
}

Tree = Callable[[dict[str, str | bytes]], Path]


@pytest.fixture
def indexed(tree: Tree) -> Path:
    root = tree(DOCS)
    run("scan", str(root), "--quiet")
    return root


# -- fusion maths ---------------------------------------------------------------

ranked_lists = st.lists(
    st.lists(st.integers(0, 30), unique=True, max_size=12), min_size=1, max_size=4
)


@settings(max_examples=100, deadline=None)
@given(ranked_lists, st.data())
def test_rrf_ignores_the_order_of_its_input_lists(lists: list[list[int]], data: st.DataObject) -> None:  # fmt: skip
    weights = [data.draw(st.floats(0.1, 3.0)) for _ in lists]
    order = data.draw(st.permutations(range(len(lists))))
    a = rrf(lists, weights)
    b = rrf([lists[i] for i in order], [weights[i] for i in order])
    assert a.keys() == b.keys()
    assert all(abs(a[k] - b[k]) < 1e-12 for k in a)
    assert all(0.0 <= s <= 1.0 for s in a.values())


def test_rrf_normalises_best_possible_to_one() -> None:
    fused = rrf([[1, 2, 3], [1, 3, 2]], [1.0, 0.5])
    assert fused[1] == pytest.approx(1.0)
    assert fused[1] > fused[2] and fused[1] > fused[3]
    # A lone list's top hit scores 1.0 too.
    assert rrf([[7, 8]], [0.5])[7] == pytest.approx(1.0)
    assert rrf([[], []], [1.0, 1.0]) == {}


def test_rrf_weights_decide_disagreements() -> None:
    lists = [[1, 2], [2, 1]]
    assert rrf(lists, [1.0, 0.2])[1] > rrf(lists, [1.0, 0.2])[2]
    assert rrf(lists, [0.2, 1.0])[2] > rrf(lists, [0.2, 1.0])[1]
    tie = rrf(lists, [1.0, 1.0])
    assert tie[1] == pytest.approx(tie[2])


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(st.integers(0, 20), st.floats(0.01, 50), min_size=1),
    st.dictionaries(st.integers(0, 20), st.floats(0.01, 1), max_size=20),
    st.floats(0.0, 3.0),
)
def test_fuse_scores_bounded_and_order_independent(
    lex: dict[int, float], sem: dict[int, float], weight: float
) -> None:
    lists = {"lexical": list(lex.items()), "semantic": list(sem.items())}
    weights = {"lexical": 1.0, "semantic": weight}
    a = fuse_scores(lists, weights)
    b = fuse_scores(dict(reversed(list(lists.items()))), weights)
    assert a == pytest.approx(b)
    assert all(0.0 <= s <= 1.0 for s in a.values())
    if not sem:
        assert max(a.values()) == pytest.approx(1.0)  # a lone list's top hit is 1.0


def test_fuse_scores_formula() -> None:
    lists = {"lexical": [(1, 10.0), (2, 5.0)], "semantic": [(2, 0.4), (1, 0.2)]}
    fused = fuse_scores(lists, {"lexical": 1.0, "semantic": 0.5})
    assert fused[1] == pytest.approx((1.0 + 0.5 * 0.5) / 1.5)
    assert fused[2] == pytest.approx((0.5 + 0.5 * 1.0) / 1.5)
    both_first = fuse_scores({"lexical": [(3, 2.0)], "semantic": [(3, 0.9)]}, {})
    assert both_first[3] == pytest.approx(1.0)


# -- modes, degradation, scores -------------------------------------------------


def test_auto_mode_uses_both_lists(indexed: Path) -> None:
    out = run_json("query", "rotate signing keys")
    assert out["mode"] == "auto" and out["degraded"] is False
    assert out["used"] == ["lexical", "semantic"]
    assert out["hits"][0]["rel_path"] == "keys.md"
    assert out["hits"][0]["score"] == pytest.approx(1.0)


@pytest.mark.parametrize("mode", ["auto", "lexical", "semantic"])
def test_every_mode_scores_in_unit_interval_best_first(
    indexed: Path, mode: str
) -> None:
    out = run_json("query", "fetched data cache", "--mode", mode)
    scores = [h["score"] for h in out["hits"]]
    assert scores and scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[0] == pytest.approx(1.0)


def test_semantic_mode_finds_sub_word_matches(indexed: Path) -> None:
    """No shared word, but shared character n-grams: only vectors can find it."""
    out = run_json("query", "revokings", "--mode", "semantic")
    assert out["used"] == ["semantic"]
    assert any(h["rel_path"] == "keys.md" for h in out["hits"])


def test_ties_are_broken_stably(tree: Tree) -> None:
    root = tree({f"d{i}.md": "same words here\n" for i in range(5)})
    run("scan", str(root), "--quiet")
    first = run_json("query", "same words", "--mode", "lexical")
    again = run_json("query", "same words", "--mode", "lexical")
    assert [h["rel_path"] for h in first["hits"]] == [
        h["rel_path"] for h in again["hits"]
    ]
    assert [h["rel_path"] for h in first["hits"]] == [f"d{i}.md" for i in range(5)]


def test_provider_none_degrades_to_lexical(tree: Tree) -> None:
    root = tree(DOCS)
    run("scan", str(root), "--quiet", "--provider", "none")
    for mode in ("auto", "semantic"):
        out = run_json("query", "rotate keys", "--mode", mode)
        assert out["degraded"] is True
        assert out["used"] == ["lexical"]
        assert out["hits"][0]["rel_path"] == "keys.md"
        assert out["hits"][0]["score"] == pytest.approx(1.0)
    lexical = run_json("query", "rotate keys", "--mode", "lexical")
    assert lexical["degraded"] is False


def test_empty_query_is_not_degraded(tree: Tree) -> None:
    root = tree(DOCS)
    run("scan", str(root), "--quiet", "--provider", "none")
    out = run_json("query", "   ")
    assert out["hits"] == [] and out["degraded"] is False


def test_min_score_means_the_same_in_every_mode(indexed: Path) -> None:
    for mode in ("auto", "lexical", "semantic"):
        all_hits = run_json("query", "fetched cache keys", "--mode", mode)["hits"]
        kept = run_json(
            "query", "fetched cache keys", "--mode", mode, "--min-score", "0.6"
        )
        assert all(h["score"] >= 0.6 for h in kept["hits"])
        assert len(kept["hits"]) == sum(h["score"] >= 0.6 for h in all_hits)


def test_explain_shows_each_list_and_the_fused_score(indexed: Path) -> None:
    out = run_json("query", "rotate keys", "--explain")
    top = out["hits"][0]
    assert top["explain"]["lexical"]["rank"] == 1
    assert top["explain"]["lexical"]["raw"] > 0
    assert 0 < top["explain"]["semantic"]["raw"] <= 1.0
    assert top["explain"]["fused"] == pytest.approx(top["score"], abs=1e-4)
    text = run("query", "rotate keys", "--explain").stdout
    assert "lexical" in text and "fused" in text


def test_files_gives_one_hit_per_document(indexed: Path) -> None:
    segments = run_json("query", "key keys revoke rotate", "--top", "20")["hits"]
    assert len({h["rel_path"] for h in segments}) < len(segments)
    files = run_json("query", "key keys revoke rotate", "--files", "--top", "20")[
        "hits"
    ]
    paths = [h["rel_path"] for h in files]
    assert len(paths) == len(set(paths)) and paths[0] == "keys.md"


def test_cjk_queries_rank_the_cjk_document(indexed: Path) -> None:
    assert run_json("query", "学习")["hits"][0]["rel_path"] == "zh.md"
    assert run_json("query", "検索")["hits"][0]["rel_path"] == "ja.md"


# -- snippets -------------------------------------------------------------------

CFG = SimpleNamespace(cjk_ngram=2, stem=True)


def test_highlight_is_word_bounded_for_latin() -> None:
    snippet = make_snippet("The client fetched the data.", {"fetch"}, 200, True, CFG)
    assert "**fetched**" in snippet and "**fetch**ed" not in snippet
    assert "pre**fetch" not in make_snippet("prefetch it", {"fetch"}, 200, True, CFG)


def test_highlight_works_for_cjk() -> None:
    snippet = make_snippet("我们每天学习中文。", {"学习"}, 200, True, CFG)
    assert "**学习**" in snippet


def test_window_sits_on_the_densest_matches() -> None:
    text = "alpha " + "filler " * 60 + "beta gamma alpha beta gamma " + "filler " * 60
    snippet = make_snippet(text, {"alpha", "beta", "gamma"}, 60, True, CFG)
    assert "**beta**" in snippet and "**gamma**" in snippet
    assert snippet.startswith("…")


def test_window_prefers_prose_to_fenced_code() -> None:
    # The code block matches more query terms, but a reader wants the prose
    # sentence that matched (issue #19: snippets from the best prose lines).
    text = (
        "```json\n"
        + '{"rate": 1, "limit": 2, "burst": 3}\n' * 8
        + "```\n\n"
        + "filler words here. " * 10
        + "Set the rate for each consumer.\n"
    )
    snippet = make_snippet(text, {"rate", "limit", "burst"}, 60, True, CFG)
    assert "consumer" in snippet and "{" not in snippet
    # With matches only in code, the code is still what the snippet shows.
    code_only = make_snippet(
        "```sh\nrate limit\n```\nNo match.", {"rate"}, 60, True, CFG
    )
    assert "**rate**" in code_only and "```" not in code_only


def test_a_chunk_that_starts_inside_a_fence_knows_it() -> None:
    # The chunk begins in the middle of a long fenced block (the text before
    # it opened the fence): its first fence line closes, the prose follows.
    body = "# T\n\n```json\n" + '{"rate": 1}\n' * 30 + "```\n\nSet the rate per user.\n"
    start = body.index('{"rate": 1}\n' * 20)
    fence = open_fence(body[:start])
    assert fence == "```"
    snippet = make_snippet(body[start:], {"rate"}, 40, True, CFG, None, fence)
    assert "per user" in snippet and "{" not in snippet


def test_no_highlight_leaves_text_plain(indexed: Path) -> None:
    out = run_json("query", "fetched", "--no-highlight")
    assert all("**" not in h["snippet"] for h in out["hits"])
    assert all(h["highlights"] == [] for h in out["hits"])


def test_json_highlights_are_offsets_beside_a_plain_snippet(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #38: a `**` in the text clashed with the `**` highlight markers."""
    root = tree({"power.md": "# The ** operator\n\nThe ** operator raises: 2 ** 10.\n"})
    run("scan", str(root), "-q")
    hit = run_json("query", "operator")["hits"][0]
    assert "The ** operator" in hit["snippet"] and "2 ** 10" in hit["snippet"]
    marked = [hit["snippet"][s:e] for s, e in hit["highlights"]]
    assert marked and all(word == "operator" for word in marked)
    monkeypatch.delenv("NO_COLOR", raising=False)
    text = run("query", "operator", "--color", "always").stdout
    assert "\x1b[33m\x1b[1moperator\x1b[0m" in text  # the match in colour
    assert "The ** " in text  # the document's own stars, as text


def test_index_without_vectors_degrades(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(DOCS)
    monkeypatch.setenv("DOCINDEX_MAX_EMBEDDED", "0")
    run("scan", str(root), "--quiet")
    monkeypatch.delenv("DOCINDEX_MAX_EMBEDDED")
    out = run_json("query", "rotate keys")
    assert out["degraded"] is True and out["used"] == ["lexical"]
    assert out["hits"][0]["rel_path"] == "keys.md"


# -- document ranking (--files) ---------------------------------------------------

SPLIT = {
    "split.md": "# Notes\n\n## One\n\nThe zebra is here.\n\n## Two\n\nThe quokka is here.\n",
    # (file names that are not the words: a page named after the query's
    # words gets the named-page bonus, issue #37)
    "stripes.md": "# Stripes\n\nA zebra and a zebra.\n",
    "smiles.md": "# Smiles\n\nA quokka and a quokka.\n",
}


@pytest.mark.parametrize("mode", ["auto", "lexical"])
def test_files_ranks_whole_documents(tree: Tree, mode: str) -> None:
    """Words spread over two sections count together at document level."""
    root = tree(SPLIT)
    run("scan", str(root), "--quiet")
    segments = run_json("query", "zebra quokka", "--mode", mode)["hits"]
    assert segments[0]["rel_path"] != "split.md"  # no single segment has both
    out = run_json("query", "zebra quokka", "--mode", mode, "--files", "--explain")
    hits = out["hits"]
    assert [h["rel_path"] for h in hits][0] == "split.md"
    assert sorted(h["rel_path"] for h in hits) == sorted(SPLIT)
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[0] == pytest.approx(1.0)
    assert all(0.0 <= s <= 1.0 for s in scores)
    ranks = [h["explain"]["lexical"]["rank"] for h in hits]  # document-level ranks
    assert sorted(ranks) == [1, 2, 3] and (mode == "auto" or ranks == [1, 2, 3])


def test_files_min_score_and_offset(tree: Tree) -> None:
    root = tree(SPLIT)
    run("scan", str(root), "--quiet")
    every = run_json("query", "zebra quokka", "--files")["hits"]
    kept = run_json("query", "zebra quokka", "--files", "--min-score", "0.9")["hits"]
    assert [h["rel_path"] for h in kept] == [
        h["rel_path"] for h in every if h["score"] >= 0.9
    ]
    first = run_json("query", "zebra quokka", "--files", "--top", "1")
    assert first["next_cursor"]
    cursor = first["next_cursor"]
    second = run_json(
        "query", "zebra quokka", "--files", "--top", "1", "--cursor", cursor
    )
    assert [h["rel_path"] for h in second["hits"]] == [every[1]["rel_path"]]


def test_fresh_process_without_numpy_ranks_like_numpy(tree) -> None:
    """A one-shot query scores candidates in pure Python; the order must not change."""
    import json as _json
    import os
    import subprocess
    import sys

    from conftest import run_json as _run_json

    root = tree({f"d{i}.md": f"# Doc {i}\n\nindexing notes {i} about search "
                 f"{'ranking ' * (i % 4)}and 全文检索 {'数据库 ' * (i % 3)}\n"
                 for i in range(30)})  # fmt: skip
    _run_json("scan", str(root))
    for query in ["indexing search ranking", "全文检索 数据库"]:
        here = _run_json("query", query, "--top", "20")
        fresh = subprocess.run(
            [sys.executable, "-c",
             "import sys; from docindex.cli.main import cli; "
             "cli(['query', sys.argv[1], '--top', '20', '--json']); ",
             query],
            capture_output=True, text=True, env=dict(os.environ), check=False,
        )  # fmt: skip
        assert fresh.returncode == 0, fresh.stderr
        other = _json.loads(fresh.stdout)
        assert [h["chunk_id"] for h in other["hits"]] == [
            h["chunk_id"] for h in here["hits"]
        ]
        assert [h["score"] for h in other["hits"]] == pytest.approx(
            [h["score"] for h in here["hits"]], abs=1e-3
        )


def test_long_lived_process_switches_to_numpy_after_a_few_queries(tree) -> None:
    """One-shot queries never import numpy; a process that keeps querying does."""
    import os
    import subprocess
    import sys

    from conftest import run_json as _run_json

    root = tree({f"d{i}.md": f"# Doc {i}\n\nindexing notes {i} about search\n"
                 for i in range(5)})  # fmt: skip
    _run_json("scan", str(root))
    code = (
        "import sys\n"
        "import docindex\n"
        "seen = []\n"
        "for i in range(5):\n"
        "    docindex.open().query('indexing search', mode='auto')\n"
        "    seen.append('numpy' in sys.modules)\n"
        "print(seen)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=dict(os.environ), check=True)  # fmt: skip
    assert out.stdout.strip() == "[False, False, False, True, True]"


def test_human_query_output_without_rich_and_without_control_codes(tree) -> None:
    """`docindex query` prints hits through click (issue #7) and strips the
    document's escape sequences before they reach a terminal."""
    import os
    import subprocess
    import sys

    from conftest import run_json as _run_json

    root = tree({"a.md": "# Doc\n\nindexing \x1b[31mred\x1b[0m notes \x07 here\n"})
    _run_json("scan", str(root))
    code = (
        "import sys\n"
        "from docindex.cli.main import cli\n"
        "try:\n"
        "    cli(['query', 'indexing notes'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('RICH' if 'rich' in sys.modules else 'NORICH')\n"
    )
    env = dict(os.environ, FORCE_COLOR="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=env, check=True).stdout  # fmt: skip
    assert out.rstrip().endswith("NORICH")
    assert "a.md" in out and "\x1b[1m" in out  # styled: FORCE_COLOR
    assert "\x1b[31m" not in out and "\x07" not in out
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ, NO_COLOR="1"), check=True).stdout  # fmt: skip
    assert "\x1b" not in plain and "indexing" in plain


def test_snippets_show_links_and_images_as_their_text() -> None:
    """Issue #37: ``1. Complete the [Get APISIX](./README.md) step`` in a first hit."""
    text = (
        "1. Complete the [Get APISIX](./README.md) step to install APISIX first.\n"
        'See [`watchEffect()`](/api/core#watcheffect "API") and ![a diagram](d.png),\n'
        "the [guide][ref], code `arr[i](x)` stays, and [shortcut] stays.\n"
    )
    snippet = make_snippet(text, {"apisix", "install"}, 400, False, CFG)
    assert "Complete the Get APISIX step" in snippet
    assert "See `watchEffect()` and a diagram," in snippet
    assert "the guide, code `arr[i](x)` stays, and [shortcut] stays." in snippet
    assert "](" not in snippet.replace("arr[i](x)", "")


def test_snippets_drop_inline_tags_nested_fences_and_mkdocs_includes() -> None:
    """Issue #37: ``<sup class="vt-badge ts" />`` and oi-wiki's tabbed code."""
    text = (
        '- 指南 - 为 provide/inject 标注类型 <sup class="vt-badge ts" />\n'
        '=== "C++"\n    ```cpp\n    --8<-- "docs/ds/code/seg.cpp"\n    ```\n'
        "The `<slot/>` element stays in inline code.\n"
    )
    snippet = make_snippet(text, {"slot"}, 400, False, CFG)
    assert "<sup" not in snippet and "```" not in snippet and "--8<--" not in snippet
    assert "`<slot/>` element stays" in snippet
    # OI-wiki also lists code as a top-level fence holding only an include
    listing = (
        '主席树是实现可持久化并查集的便捷方式．\n\n```cpp\n--8<-- "docs/ds/code/p_1.cpp"\n```\n'
        "```cpp\nint find(int x) { return x; }\n```\n"
    )
    snippet = make_snippet(listing, {"并查", "find"}, 400, False, CFG)
    assert "--8<--" not in snippet and "p_1.cpp" not in snippet
    assert "int find(int x)" in snippet  # other code stays


# -- identifiers (issue #47) -----------------------------------------------------

IDENTIFIERS = {
    "fastapi.md": "# Origins\n\nInstall `CORSMiddleware` on the app to allow "
    "other origins.\n",
    "browsers.md": "# Browsers\n\nBrowsers add a preflight request before they "
    "call another origin.\n",
    "k8s.md": "# Disruptions\n\nA PodDisruptionBudget limits how many of a "
    "replicated application are down at once.\n",
    "client.md": "# Client options\n\nSet `max_retries` to retry a failed call; "
    "the default is three.\n",
    "logging.md": "# Logging\n\nThe max size of a log file is 10 MB, the max age "
    "a week. Retries are logged at debug level, each with the max wait; "
    "retries are capped.\n",
    "budget.md": "# Budget\n\nThe pod disruption budget of a team is agreed "
    "every quarter. Pod Disruption Budget reviews happen in March.\n",
}


@pytest.mark.parametrize(
    ("query", "page"),
    [
        ("how do I add cors middleware", "fastapi.md"),
        ("CORSMiddleware", "fastapi.md"),
        ("max_retries", "client.md"),
    ],
)
def test_identifiers_match_their_words_and_rank_whole(
    tree: Tree, query: str, page: str
) -> None:
    """CamelCase names are found by their words, and the page holding the
    exact name ranks first for it (issue #47)."""
    run("scan", str(tree(IDENTIFIERS)), "--quiet")
    out = run_json("query", query, "--files", "--mode", "lexical")
    assert [h["rel_path"] for h in out["hits"]][:1] == [page]


def test_identifier_words_match_in_both_directions(tree: Tree) -> None:
    """ "pod disruption budget" holds the whole of ``PodDisruptionBudget``, and
    the name asked for finds the page that writes its words apart (#47)."""
    run("scan", str(tree(IDENTIFIERS)), "--quiet")
    out = run_json("query", "pod disruption budget", "--files", "--mode", "lexical")
    k8s = next(h for h in out["hits"] if h["rel_path"] == "k8s.md")
    assert k8s["coverage"] == 1.0
    out = run_json("query", "PodDisruptionBudget 是什么", "--files")
    assert {h["rel_path"] for h in out["hits"][:2]} == {"k8s.md", "budget.md"}


def test_an_index_of_the_old_tokenizer_answers_and_asks_for_a_rebuild(
    tree: Tree, tmp_path: Path
) -> None:
    """An index written before identifier splitting (tokenizer 2) still
    answers queries; a scan says to rebuild it, and the rebuild works (#47)."""
    import json
    import sqlite3

    run("scan", str(tree(IDENTIFIERS)), "--quiet")
    db = tmp_path / "db" / "index.db"
    with sqlite3.connect(db) as conn:
        old = {"version": 2, "cjk_ngram": 2, "stem": True}
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'tokenizer'", (json.dumps(old),)
        )
    conn.close()
    assert run_json("query", "max_retries")["hits"]
    assert "tokenizer version 2" in run_json("stats")["notices"][0]
    result = run("scan", ok=False)
    assert result.exit_code == 1 and "reindex --full" in result.stderr
    run("reindex", "--full", "--quiet")
    assert run_json("stats")["tokenizer"]["version"] == 3
    assert run_json("stats")["notices"] == []
