"""The first page a person reads (issue #37): coverage and weak-match hints, did
you mean, honest totals, answers over fragments, named pages, CJK questions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run, run_json

from docindex.search.quality import is_code_query, prose_words
from docindex.search.query import is_question, parse_query
from docindex.search.spelling import edit_distance

Tree = Callable[[dict[str, str | bytes]], Path]

PROSE = (
    "The limiter plugin decides how many requests a client may send each second "
    "and answers the requests over that rate with status 429, so a busy client "
    "slows down instead of overloading the upstream service."
)
YAML = "\n".join(f"rate_limiting_{i}: rate limiting {i}" for i in range(12))

DOCS: dict[str, str | bytes] = {
    "plugins/throttle.md": f"# Throttle\n\n## Configure rate limiting\n\n{PROSE}\n\n"
    f"## Example\n\n```yaml\n{YAML}\n```\n",
    "tutorials/rate-limiting.md": "# Rate Limiting\n\nIn this tutorial you "
    "configure rate limiting on a route with the limiter plugin, then send "
    "requests until the gateway answers 429.\n",
    "reference/quotas.md": "# Quotas\n\n"
    + "Configure rate limiting quotas. " * 6
    + PROSE
    + "\n\n## Rate limiting by consumer\n\n"
    + PROSE
    + "\n",
    "react/effects.md": "# Synchronizing with Effects\n\nCall useEffect to "
    "connect a component to an external system; useEffect runs after render "
    "and useEffect cleans up before the next run.\n",
    "react/hooks.md": "# Custom hooks\n\nA custom hook is a function whose name "
    "starts with use and that calls other hooks such as useEffect or useState; "
    "custom hooks share logic, not state.\n",
    "react/useEffect.md": "# useEffect\n\nuseEffect is a hook that lets you "
    "synchronize a component with an external system.\n\n## Custom hooks\n\n"
    "Wrapping your own logic into custom hooks keeps your components short and "
    "readable for everyone who reads them later on.\n",
    "ops/backup.md": "# Backups\n\nCopy the data directory to another disk every "
    "night and keep a week of backup copies in the archive folder.\n",
}


@pytest.fixture
def docs(tree: Tree) -> Path:
    root = tree(DOCS)
    run("scan", str(root), "--quiet")
    return root


def test_every_hit_has_a_coverage(docs: Path) -> None:
    out = run_json("query", "rate limiting limiter plugin", "--top", "20")
    assert out["hits"] and all(0.0 <= h["coverage"] <= 1.0 for h in out["hits"])
    whole = [h for h in out["hits"] if h["rel_path"] == "plugins/throttle.md"]
    assert whole and whole[0]["coverage"] == 1.0
    assert out["hint"] is None


def test_an_off_topic_query_is_called_a_weak_match(docs: Path) -> None:
    out = run_json("query", "tidb backup to s3")
    assert out["hits"][0]["score"] == 1.0  # the fused score alone cannot tell
    assert out["hits"][0]["coverage"] < 0.5
    assert out["hint"]["weak_match"] is True
    assert out["hint"]["unmatched_words"] == ["tidb", "s3"]
    assert "weak match" in out["hint"]["suggestion"]
    assert "no document contains 'tidb'" in out["hint"]["suggestion"]
    text = run("query", "tidb backup to s3").stdout
    assert "hint: weak match" in text


def test_a_typo_is_corrected_from_the_index_vocabulary(docs: Path) -> None:
    out = run_json("query", "useEfect")
    assert out["did_you_mean"] == {"useefect": "useeffect"}
    assert out["corrected"] == "useeffect"
    assert out["hits"] and out["query"] == "useEfect"
    assert any(h["rel_path"] == "react/useEffect.md" for h in out["hits"])
    text = run("query", "useEfect").stdout
    assert "no hits for 'useEfect'; showing hits for 'useeffect'" in text
    # lexical mode suggests and does not search the correction (its hits are
    # those of the name's word "use", issue #47)
    lexical = run_json("query", "useEfect", "--mode", "lexical")
    assert lexical["corrected"] is None and lexical["did_you_mean"] == {
        "useefect": "useeffect"
    }
    # a correct word gets no suggestion; CJK is left alone
    assert run_json("query", "useEffect")["did_you_mean"] == {}
    assert run_json("query", "学习系统")["did_you_mean"] == {}


def test_total_counts_matches_whatever_the_page(tree: Tree) -> None:
    files = {f"z{i:02}.md": f"# Note {i}\n\nA zebra crossed here.\n" for i in range(25)}
    files["two.md"] = "# Two\n\n## One\n\nA zebra.\n\n## Other\n\nAnother zebra.\n"
    run("scan", str(tree(files)), "--quiet")
    for top in ("3", "10", "50"):
        out = run_json("query", "zebra", "--top", top)
        assert out["total"] == 27 and out["total_exact"] is True, top
        assert run_json("query", "zebra", "--top", top, "--files")["total"] == 26
    first = run_json("query", "zebra", "--top", "5", "--files")
    page2 = run_json("query", "zebra", "--top", "5", "--files", "--cursor",
                     first["next_cursor"])  # fmt: skip
    assert page2["total"] == 26 and page2["hits"]
    assert "5 of 27 hits" in run("query", "zebra", "--top", "5").stdout


def test_code_only_chunks_rank_below_the_prose(docs: Path) -> None:
    assert prose_words(f"```yaml\n{YAML}\n```") == 0
    assert prose_words(PROSE) >= 8
    hits = run_json("query", "how do I configure rate limiting", "--per-doc", "0")
    order = [(h["rel_path"], h["heading_path"][-1]) for h in hits["hits"]]
    example = order.index(("plugins/throttle.md", "Example"))
    prose = [i for i, (path, head) in enumerate(order) if head != "Example"]
    assert example > max(prose)
    # a query in code keeps code chunks where bm25 puts them
    assert is_code_query(parse_query("rate_limiting_3"))
    code = run_json("query", "rate_limiting_3")["hits"]
    assert code[0]["heading_path"][-1] == "Example"


def test_a_page_named_after_the_query_ranks_first(docs: Path) -> None:
    out = run_json("query", "how do I configure rate limiting", "--files")
    assert out["hits"][0]["rel_path"] == "tutorials/rate-limiting.md"


def _site(keywords: bool) -> dict[str, str | bytes]:
    """A Chinese docs site: every page tagged APISIX; the upstream page also
    tagged 上游 (when ``keywords``), the admin page saying 上游 most often."""

    def page(title: str, tags: list[str], body: str) -> str:
        listed = "".join(f"  - {t}\n" for t in ["APISIX", "API 网关", *tags])
        return f"---\ntitle: {title}\nkeywords:\n{listed}---\n\n{body}\n"

    site: dict[str, str | bytes] = {
        "terminology/upstream.md": page(
            "Upstream",
            ["上游", "Upstream"] if keywords else ["Upstream"],
            "## 描述\n\n上游是一组目标节点的虚拟主机抽象，APISIX 按上游的配置在节点"
            "之间做负载均衡。\n\n## 负载均衡\n\n"
            "节点之间按权重轮询，也可以按一致性哈希选择节点，失败的请求会重试下一个节点。",
        ),
        "admin-api.md": page(
            "Admin API",
            ["Admin API"],
            "## Route\n\n路由可以绑定上游，也可以直接写上游的节点；APISIX 会检查节点的"
            "健康状态，节点变化时无需重启。",
        ),
    }
    for i in range(12):
        site[f"plugins/p{i}.md"] = page(
            f"Plugin {i}", [f"p{i}"], f"## 描述\n\n插件 {i} 在请求转发之前处理它。"
        )
    return site


def test_a_front_matter_keyword_names_its_page(tree: Tree) -> None:
    root = tree(_site(keywords=True))
    run("scan", str(root), "--quiet")
    hits = run_json("query", "apisix 的上游是什么", "--files")["hits"]
    assert hits[0]["rel_path"] == "terminology/upstream.md"
    facets = run_json("stats")["facets"]
    assert {"APISIX", "API 网关", "上游", "Upstream"} <= set(facets["keywords"])
    only = run_json("query", "节点", "--where", "keywords=上游", "--files")["hits"]
    assert [h["rel_path"] for h in only] == ["terminology/upstream.md"]


def test_without_the_keyword_the_page_that_repeats_the_word_wins(tree: Tree) -> None:
    root = tree(_site(keywords=False))
    run("scan", str(root), "--quiet")
    hits = run_json("query", "apisix 的上游是什么", "--files")["hits"]
    assert hits[0]["rel_path"] == "admin-api.md"


def test_a_required_word_must_be_in_the_chunk_not_only_the_title(docs: Path) -> None:
    hits = run_json("query", "custom hooks +useEffect", "--per-doc", "0")["hits"]
    assert hits
    for hit in hits:
        # useEffect.md's "Custom hooks" section holds the word only in its title
        assert hit["heading_path"] != ["useEffect", "Custom hooks"]
    assert any(h["rel_path"] == "react/hooks.md" for h in hits)


def test_cjk_question_words_do_not_count() -> None:
    tokens = parse_query("apisix 如何开启 jwt 认证").tokens
    assert tokens == ("apisix", "jwt", "认证")
    assert parse_query("怎么更新 state").tokens == ("更新", "state")
    assert parse_query("如何").tokens == ("如何",)  # nothing else: kept
    assert parse_query("어떻게 설치").tokens == ("설치",)
    assert parse_query("どうやって検索").tokens == ("検索",)


def test_questions_in_words_are_told_from_claims_and_names() -> None:
    """A question skips RM3 feedback (#37): its words name the answer."""
    for text in (
        "how do I pass data from parent to child component in vue",
        "Why does my component render twice in development",
        "rate limiting in apisix?",
        "apisix 如何开启 jwt 认证",
        "vue 的插槽是什么",
        "useStateって何ですか",
        "설치는 어떻게 하나요",
    ):
        assert is_question(text) and parse_query(text).question, text
    for text in (
        "0-dimensional biomaterials show inductive properties.",  # a SciFact claim
        "rust rfc for const generics",
        "线段树 懒标记",
        "howto guide",
        "",
    ):
        assert not is_question(text), text


def test_edit_distance() -> None:
    assert edit_distance("useefect", "useeffect", 2) == 1
    assert edit_distance("recieve", "receive", 2) == 1  # a swap is one edit
    assert edit_distance("kitten", "sitting", 1) == 2  # stops past the limit
