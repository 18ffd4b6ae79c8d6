"""The opt-in synonym file (issue #47): Recoll's format, expansion below the
typed terms, shown by --explain, nothing without the file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run, run_json

from docindex.text.synonyms import expand, parse_groups

Tree = Callable[[dict[str, str | bytes]], Path]

# The case of issue #37: the Chinese jwt-auth page says 身份验证, never 认证.
APISIX = {
    "zh/jwt-auth.md": "---\ntitle: jwt-auth\n---\n\n# 描述\n\n"
    "jwt-auth 插件支持使用 JSON Web Token（JWT）作为客户端在访问上游资源之前"
    "进行身份验证的机制。\n\n## 启用插件\n\n在路由上启用 jwt-auth 插件。\n",
    "zh/basic-auth.md": "---\ntitle: basic-auth\n---\n\n# 描述\n\n"
    "basic-auth 插件为消费者添加基本访问认证，客户端需要提供用户名和密码才能认证。\n",
    "zh/key-auth.md": "---\ntitle: key-auth\n---\n\n# 描述\n\n"
    "key-auth 插件用于认证消费者，客户端携带密钥访问，认证通过后转发请求。\n",
    "zh/jwt-token.md": "---\ntitle: JWT 令牌\n---\n\n# 令牌\n\n"
    "JWT 令牌由三段组成，每段 Base64 编码。jwt 的签名算法可以选择。\n",
    "zh/changelog.md": "# 变更日志\n\n修复 jwt 插件的认证问题；认证插件支持更多算法。\n",
}
QUERY = "apisix 如何开启 jwt 认证"


def test_groups_read_as_recoll_writes_them() -> None:
    text = (
        "# comment\n\n认证 身份验证 authentication\n"
        '限流 "rate limiting" \\\n  速率限制\nlonely\n'
    )
    assert parse_groups(text) == [
        ("认证", "身份验证", "authentication"),
        ("限流", "rate limiting", "速率限制"),
    ]
    with pytest.raises(ValueError, match="line 2"):
        parse_groups('a b\n"rate limiting b\n')


def test_a_member_the_query_holds_adds_the_others() -> None:
    groups = [("认证", "身份验证"), ("rate limiting", "限流")]
    found = expand(("jwt", "认证"), groups)
    assert [(e.matched, e.added) for e in found] == [("认证", ("身份验证",))]
    assert found[0].member_terms == (("身份", "份验", "验证"),)
    # every word of a phrase member must be there
    assert expand(("rate",), groups) == []
    assert [e.matched for e in expand(("rate", "limit"), groups)] == ["rate limiting"]


def _files(*args: str) -> list[str]:
    out = run_json("query", QUERY, "--files", *args)
    return [h["rel_path"] for h in out["hits"]]


def test_synonym_file_finds_the_page_that_says_the_other_word(
    tree: Tree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run("scan", str(tree(APISIX)), "--quiet")
    before = run_json("query", QUERY, "--files", "--explain")
    assert before["synonyms"] == {}
    assert [h["rel_path"] for h in before["hits"]][0] != "zh/jwt-auth.md"
    syn = tmp_path / "synonyms.txt"
    syn.write_text("# auth\n认证 身份验证 鉴权\n", encoding="utf-8")
    monkeypatch.setenv("DOCINDEX_SYNONYMS", str(syn))
    after = run_json("query", QUERY, "--files", "--explain")
    assert after["synonyms"] == {"认证": ["身份验证", "鉴权"]}
    assert after["hits"][0]["rel_path"] == "zh/jwt-auth.md"
    text = run("query", QUERY, "--explain").stdout
    assert "synonyms: 认证 -> 身份验证, 鉴权" in text
    assert "synonyms:" not in run("query", QUERY).stdout


def test_expansion_weighs_less_than_the_typed_term(
    tree: Tree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page with the typed word outranks one with only its synonym."""
    root = tree({
        "typed.md": "# Setup\n\nEnable 认证 on the route.\n",
        "synonym.md": "# Setup\n\nEnable 身份验证 on the route.\n",
    })  # fmt: skip
    run("scan", str(root), "--quiet")
    syn = tmp_path / "s.txt"
    syn.write_text("认证 身份验证\n", encoding="utf-8")
    monkeypatch.setenv("DOCINDEX_SYNONYMS", str(syn))
    hits = run_json("query", "认证", "--files")["hits"]
    assert [h["rel_path"] for h in hits] == ["typed.md", "synonym.md"]
    assert hits[1]["score"] < hits[0]["score"]


def test_nothing_changes_without_a_matching_group(
    tree: Tree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run("scan", str(tree(APISIX)), "--quiet")
    plain = run_json("query", QUERY, "--explain")
    syn = tmp_path / "s.txt"
    syn.write_text("限流 速率限制\n", encoding="utf-8")
    monkeypatch.setenv("DOCINDEX_SYNONYMS", str(syn))
    other = run_json("query", QUERY, "--explain")
    for result in (plain, other):
        result.pop("took_ms")
    assert other == plain


def test_config_file_names_the_synonyms_beside_it(tree: Tree, tmp_path: Path) -> None:
    run("scan", str(tree(APISIX)), "--quiet")
    db = tmp_path / "db"
    (db / "synonyms.txt").write_text("认证 身份验证\n", encoding="utf-8")
    (db / "config.toml").write_text('synonyms = "synonyms.txt"\n', encoding="utf-8")
    assert _files()[0] == "zh/jwt-auth.md"
    (db / "synonyms.txt").unlink()
    result = run("query", QUERY, ok=False)
    assert result.exit_code == 1
    assert "cannot read synonyms file" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
