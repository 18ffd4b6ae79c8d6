"""Korean: words with particles and endings match exactly and by their stem (#21).

Hangul runs are indexed as character unigrams and bigrams: an exact word
matches through all of its bigrams, a word with another particle or ending
(서울의 for 서울에서) through the bigrams of its stem. Whole-word terms were
measured and dropped (README, "How ranking works"). The sentences are from
KorQuAD 1.0 (CC BY-ND 2.0 KR), as in ``../shared/eval/ko-korquad1``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conftest import run, run_json

from docindex.text.tokenize import query_terms, terms

SENTENCE = "1989년 3월 12일 서울지방검찰청 공안부는 임종석의 사전구속영장을 발부받았다."
QUESTION = "임종석이 여의도 농민 폭력 시위를 주도한 혐의로 지명수배 된 날은?"


def test_a_sentence_is_indexed_as_syllables_and_bigrams() -> None:
    got = terms(SENTENCE)
    assert "1989" in got and "년" in got
    for gram in ("서울", "검찰", "공안", "임종", "종석", "석의", "영장", "발부"):
        assert gram in got
    assert "임종석의" not in got  # no whole-word terms (measured: they hurt)


def test_a_question_and_a_sentence_share_the_stem_not_the_particle() -> None:
    question = set(query_terms(QUESTION))
    sentence = set(terms(SENTENCE))
    # 임종석이 (question) and 임종석의 (sentence): the name matches, the particles not
    assert {"임종", "종석"} <= question & sentence
    assert "석이" in question and "석이" not in sentence
    assert "석의" not in question


def test_one_syllable_queries_still_match() -> None:
    assert query_terms("해") == ["해"]
    assert "해" in terms("같은 해 6월 30일")


def test_exact_word_first_then_the_same_stem_with_another_particle(
    tree: Callable[[dict[str, str | bytes]], Path],
) -> None:
    root = tree({
        "a.md": "# 인구\n\n서울의 인구는 천만 명이다.\n",
        "b.md": "# 행사\n\n행사는 서울에서 열렸다.\n",
        "c.md": "# 부산\n\n부산은 항구 도시이다.\n",
    })  # fmt: skip
    run("scan", str(root), "--quiet")
    for extra in ((), ("--files",)):
        hits = run_json("query", "서울에서", *extra)["hits"]
        assert [h["rel_path"] for h in hits][:2] == ["b.md", "a.md"], extra
        assert "c.md" not in [h["rel_path"] for h in hits]
