"""Issue #19: the query language, --path, per-document folding, stopword-only queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from docindex.cli.main import cli
from docindex.search.query import NO_WORDS, parse_query

DOCS = {
    "en/apisix/limit-count.md": (
        "# limit-count\n\n## Description\n\nRate limiting by a fixed window of "
        "requests per consumer.\n\n## Anonymous consumers\n\nRate limiting for "
        "anonymous consumers uses the remote address.\n\n## Redis policy\n\n"
        "Rate limiting shared across nodes with a redis cluster.\n\n## Reset\n\n"
        "The rate of limiting resets every window.\n"
    ),
    "en/apisix/limit-req.md": (
        "# limit-req\n\nLeaky bucket rate limiting of requests, with a burst.\n"
    ),
    "en/react/hooks.md": "# Hooks\n\nCustom hooks share rate limiting logic.\n",
    "zh/配置.md": "# 配置\n\n修改配置文件中的限流参数。\n",
}


@pytest.fixture
def db(tmp_path: Path) -> str:
    root = tmp_path / "docs"
    for name, text in DOCS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    path = str(tmp_path / "i.db")
    result = CliRunner().invoke(cli, ["scan", str(root), "--db", path, "--quiet"])
    assert result.exit_code == 0, result.output
    return path


def query(db: str, text: str, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(
        cli, ["query", text, "--db", db, "--json", "--top", "20", *args],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def chunks(result: dict[str, object]) -> list[str]:
    hits = result["hits"]
    assert isinstance(hits, list)
    out = []
    for hit in hits:
        out.append(hit["chunk_id"])
        out.extend(f["chunk_id"] for f in hit["folded"])
    return out


def test_parse_query_fields() -> None:
    q = parse_query('"rate limiting" -anonymous +redis -"leaky bucket" C++ x-y --path')
    assert q.phrases == ("rate limiting",)
    assert q.excluded == ("anonymous", "leaky bucket")
    assert q.required == ("redis",)
    assert q.words == ("C++", "x-y", "--path")
    assert set(q.required_tokens[1]) <= set(q.tokens)  # +redis is ranked
    assert not set(q.excluded_tokens[0]) & set(q.tokens)  # -anonymous is not
    assert q.searchable and q.constrained


def test_unclosed_quote_and_lone_signs_are_text() -> None:
    q = parse_query('"rate limiting - + -2 +1 nucleosomes')
    assert q.phrases == () and q.excluded == () and q.required == ()
    assert "-2" in q.words and "+1" in q.words
    assert q.searchable


def test_phrase_requires_adjacent_words(db: str) -> None:
    got = chunks(query(db, '"rate limiting"', "--per-doc", "0"))
    assert "en/apisix/limit-count.md#limit-count/reset" not in got  # "rate of limiting"
    assert "en/apisix/limit-count.md#limit-count/description" in got
    loose = chunks(query(db, "rate limiting", "--per-doc", "0"))
    assert "en/apisix/limit-count.md#limit-count/reset" in loose


def test_exclusion_and_required(db: str) -> None:
    got = chunks(query(db, '"rate limiting" -anonymous', "--per-doc", "0"))
    assert got and not any("anonymous" in c for c in got)
    got = chunks(query(db, "rate limiting +redis", "--per-doc", "0"))
    assert got == ["en/apisix/limit-count.md#limit-count/redis-policy"]
    got = chunks(query(db, 'rate -"leaky bucket"', "--per-doc", "0"))
    assert "en/apisix/limit-req.md" not in got and got


def test_cjk_required_and_excluded(db: str) -> None:
    assert chunks(query(db, "+配置 限流")) == ["zh/配置.md#配置"]
    assert chunks(query(db, "限流 -配置")) == []


@pytest.mark.parametrize("text", ["the", "the of and", "-rate", '""', "   "])
def test_no_searchable_words(db: str, text: str) -> None:
    # "--" ends the options: a query may start with "-".
    result = CliRunner().invoke(cli, ["query", "--db", db, "--json", "--", text])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["hits"] == []
    assert data["hint"]["suggestion"].startswith(NO_WORDS)
    plain = CliRunner().invoke(cli, ["query", "--db", db, "--", text])
    assert NO_WORDS in plain.stdout


@pytest.mark.parametrize(
    "text",
    ['rate AND limiting', 'NEAR(rate limiting)', 'title:rate', 'rate*', '"rate',
     'rate OR', '(rate', 'rate NOT', '^rate', '-', '+', '- -"'],
)  # fmt: skip
def test_fts5_syntax_is_text(db: str, text: str) -> None:
    result = CliRunner().invoke(cli, ["query", "--db", db, "--json", "--", text])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)


@given(st.text(max_size=40))
def test_parse_query_never_raises(text: str) -> None:
    q = parse_query(text)
    assert q.text == text
    assert all(q.tokens) and all(all(g) for g in q.required_tokens)


def test_path_folder_prefix_exact_file_and_glob(db: str) -> None:
    for path in ("en/apisix", "en/apisix/", "./en/apisix/"):
        got = {c.split("#")[0] for c in chunks(query(db, "rate", "--path", path))}
        assert got == {"en/apisix/limit-count.md", "en/apisix/limit-req.md"}
    got = {
        c.split("#")[0]
        for c in chunks(query(db, "rate", "--path", "en/react/hooks.md"))
    }
    assert got == {"en/react/hooks.md"}
    got = {
        c.split("#")[0] for c in chunks(query(db, "rate", "--path", "en/*/limit-*.md"))
    }
    assert got == {"en/apisix/limit-count.md", "en/apisix/limit-req.md"}
    assert chunks(query(db, "rate", "--path", "en/apis")) == []  # not a folder


def test_per_doc_folds_without_changing_scores(db: str) -> None:
    all_hits = query(db, "rate limiting", "--per-doc", "0")
    folded = query(db, "rate limiting")
    hits = folded["hits"]
    assert isinstance(hits, list)
    per_doc: dict[str, int] = {}
    for hit in hits:
        per_doc[hit["rel_path"]] = per_doc.get(hit["rel_path"], 0) + 1
    assert max(per_doc.values()) == 2
    assert sorted(chunks(all_hits)) == sorted(chunks(folded))  # nothing lost
    assert sum(h["folded_count"] for h in hits) == len(chunks(folded)) - len(hits)
    scores = {h["chunk_id"]: h["score"] for h in all_hits["hits"]}  # type: ignore[union-attr]
    for hit in hits:
        assert scores[hit["chunk_id"]] == hit["score"]
        for f in hit["folded"]:
            assert scores[f["chunk_id"]] == f["score"] <= hit["score"]
    # total counts the matching chunks, folded or not (issue #37)
    assert folded["total"] == all_hits["total"] >= len(chunks(folded))
    shown = [h["chunk_id"] for h in hits]
    assert shown == [c for c in chunks(all_hits) if c in shown]  # order kept
    text = CliRunner().invoke(cli, ["query", "rate limiting", "--db", db]).stdout
    assert "more here" in text


def test_per_doc_pages_with_cursor(db: str) -> None:
    first = query(db, "rate limiting", "--top", "2")
    assert first["next_cursor"]
    second = query(
        db, "rate limiting", "--top", "2", "--cursor", str(first["next_cursor"])
    )
    seen = chunks(first)
    assert not set(seen) & set(chunks(second))


def test_queries_file_and_files_mode_use_the_language(db: str) -> None:
    result = CliRunner().invoke(
        cli,
        ["query", "--queries", "-", "--db", db],
        input='"rate limiting" +redis\nthe\n',
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [h["chunk_id"] for h in lines[0]["hits"]] == [
        "en/apisix/limit-count.md#limit-count/redis-policy"
    ]
    assert lines[1]["hits"] == [] and NO_WORDS in lines[1]["hint"]["suggestion"]
    files = query(db, "rate limiting -anonymous", "--files")
    assert all(h["folded"] == [] for h in files["hits"])  # type: ignore[union-attr]
