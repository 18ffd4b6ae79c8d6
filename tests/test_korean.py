"""Korean: whole Hangul words next to character n-grams (issue #21).

The sentences are from KorQuAD 1.0 (CC BY-ND 2.0 KR), as in
``../shared/eval/ko-korquad1``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conftest import run, run_json

from docindex.tokenize import query_terms, terms

SENTENCE = "1989년 3월 12일 서울지방검찰청 공안부는 임종석의 사전구속영장을 발부받았다."


def test_a_sentence_keeps_its_words_with_their_particles() -> None:
    got = terms(SENTENCE)
    for word in ("서울지방검찰청", "공안부는", "임종석의", "사전구속영장을", "발부받았다"):
        assert word in got
    # ... and the character bigrams a stem-like prefix matches through
    for gram in ("임종", "종석", "공안", "영장"):
        assert gram in got
    assert "1989" in got and "년" in got


def test_short_words_are_their_own_bigram_and_not_doubled() -> None:
    got = terms("같은 해 6월")
    assert got.count("같은") == 1
    assert "해" in got


def test_a_query_keeps_the_exact_word_and_its_bigrams() -> None:
    got = query_terms("임종석이 여의도 농민 폭력 시위를 주도한 혐의로 지명수배 된 날은?")
    assert "임종석이" in got and "시위를" in got and "지명수배" in got
    assert "임종" in got and "종석" in got and "혐의" in got
    assert "석이" in got  # the particle's bigram is a term too; the word is rarer


def test_chinese_and_japanese_get_no_word_terms() -> None:
    assert terms("全文检索系统") == terms("全文检索系统", cjk_ngram=2)
    assert "全文检索系统" not in terms("全文检索系统")
    assert "エンジン" not in terms("検索エンジン")


def test_exact_word_outranks_its_bigrams_alone(
    tree: Callable[[dict[str, str | bytes]], Path],
) -> None:
    # a.md holds every bigram of 서울에서 (서울에, 학교에서) but not the word;
    # b.md, longer, holds the word itself, which ranks it first.
    root = tree({
        "a.md": "# 학교\n\n서울에 있는 학교에서 배웠다.\n",
        "b.md": "# 학생\n\n그는 서울에서 오래 공부했고 나중에 부산의 회사에 다녔다.\n",
    })  # fmt: skip
    run("scan", str(root), "--quiet")
    for extra in ((), ("--files",)):
        hits = run_json("query", "서울에서", "--mode", "lexical", *extra)["hits"]
        assert [h["rel_path"] for h in hits] == ["b.md", "a.md"]
    # a particle-free query finds both by the stem's bigram
    both = run_json("query", "서울", "--files")["hits"]
    assert {h["rel_path"] for h in both} == {"a.md", "b.md"}
