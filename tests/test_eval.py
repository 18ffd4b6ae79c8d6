"""``docindex eval``: BEIR loading, metrics on hand-computed examples, the command."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import run, run_json

from docindex.api.evaluate import (
    evaluate,
    load_beir,
    mrr_at_k,
    ndcg_at_k,
    recall_at_k,
    sample_queries,
)
from docindex.errors import DocindexError

CORPUS = [
    {"_id": "cats", "title": "Cats", "text": "Cats purr when they are content."},
    {"_id": "dogs", "title": "Dogs", "text": "Dogs bark at the mail carrier."},
    {"_id": "a/b c", "title": "Odd id", "text": "Parrots imitate human speech."},
    {"_id": "zh1", "title": "猫", "text": "猫喜欢在阳光下睡觉。"},
]
QUERIES = [
    {"_id": "q1", "text": "why do cats purr"},
    {"_id": "q2", "text": "barking dogs"},
    {"_id": "q3", "text": "parrots speech"},
    {"_id": "q4", "text": "猫睡觉"},
    {"_id": "q5", "text": "unjudged query"},
]
QRELS = (
    "query-id\tcorpus-id\tscore\nq1\tcats\t1\nq2\tdogs\t2\nq3\ta/b c\t1\nq4\tzh1\t1\n"
)


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    for name, rows in (("corpus.jsonl", CORPUS), ("queries.jsonl", QUERIES)):
        text = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows)
        (folder / name).write_text(text + "\n", encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(QRELS, encoding="utf-8")
    return folder


def test_ndcg_hand_computed() -> None:
    rels = {"a": 1, "b": 1}
    # Relevant at ranks 1 and 3: DCG = 1 + 1/log2(4); ideal = 1 + 1/log2(3).
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["a", "x", "b"], rels, 10) == pytest.approx(expected)
    assert ndcg_at_k(["a", "b"], rels) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "y"], rels) == 0.0
    # Linear gains: a grade-2 document at rank 2 behind a grade-1 one.
    graded = {"g2": 2, "g1": 1}
    dcg = 1 + 2 / math.log2(3)
    idcg = 2 + 1 / math.log2(3)
    assert ndcg_at_k(["g1", "g2"], graded) == pytest.approx(dcg / idcg)
    # Only the top k counts.
    assert ndcg_at_k(["x"] * 10 + ["a"], rels, 10) == 0.0


def test_recall_and_mrr_hand_computed() -> None:
    rels = {"a": 1, "b": 1, "c": 1, "d": 1}
    assert recall_at_k(["a", "x", "c"], rels, 100) == pytest.approx(0.5)
    assert recall_at_k(["x", "a"], rels, 1) == 0.0
    assert mrr_at_k(["x", "y", "b"], rels, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x"] * 10 + ["a"], rels, 10) == 0.0
    assert recall_at_k(["a"], {}, 100) == 0.0


def test_sampling_is_repeatable_and_sorted() -> None:
    ids = [f"q{i}" for i in range(50)]
    a = sample_queries(ids, 10, seed=13)
    assert a == sample_queries(list(reversed(ids)), 10, seed=13)
    assert a == sorted(a) and len(set(a)) == 10
    assert a != sample_queries(ids, 10, seed=14)
    assert sample_queries(ids, None, seed=13) == sorted(ids)
    assert sample_queries(ids, 500, seed=13) == sorted(ids)


def test_load_beir_keeps_judged_queries_only(beir: Path) -> None:
    data = load_beir(beir)
    assert set(data.queries) == {"q1", "q2", "q3", "q4"}
    assert data.qrels["q2"] == {"dogs": 2}
    assert data.corpus["a/b c"] == ("Odd id", "Parrots imitate human speech.")


def test_load_beir_prefers_queries_test(beir: Path) -> None:
    (beir / "queries-test.jsonl").write_text('{"_id": "q1", "text": "cats"}\n')
    assert list(load_beir(beir).queries) == ["q1"]


def test_missing_files_are_reported(tmp_path: Path) -> None:
    with pytest.raises(DocindexError, match="corpus.jsonl"):
        load_beir(tmp_path)


def test_evaluate_scores_every_mode(beir: Path, tmp_path: Path) -> None:
    report = evaluate(beir, workdir=tmp_path / "work")
    assert [(m.mode, m.view) for m in report.modes] == [
        (mode, view) for mode in ("auto", "lexical", "semantic")
        for view in ("chunks", "files")
    ]  # fmt: skip
    assert report.documents == 4 and report.queries == 4
    for m in report.modes:
        assert m.ndcg_at_10 == pytest.approx(1.0), m
        assert m.recall_at_100 == 1.0 and m.mrr_at_10 == 1.0
        assert m.degraded == 0
    # Each document was written as <stem>.md with "# title" first.
    assert (tmp_path / "work" / "docs" / "cats.md").read_text().startswith("# Cats\n")


def test_eval_command_json_and_table(beir: Path) -> None:
    out = run_json("eval", str(beir), "--mode", "lexical", "--queries", "2", "--quiet")
    assert out["queries"] == 2 and out["judged_queries"] == 4
    assert [(m["mode"], m["view"]) for m in out["modes"]] == [
        ("lexical", "chunks"), ("lexical", "files")
    ]  # fmt: skip
    assert set(out["modes"][0]) >= {"ndcg_at_10", "recall_at_100", "mrr_at_10"}
    table = run("eval", str(beir), "--mode", "auto", "--quiet").stdout
    assert "nDCG@10" in table and "auto" in table
    assert "chunks" in table and "files" in table


def test_eval_view_chunks_counts_each_document_once(tmp_path: Path) -> None:
    # One long document whose many chunks all match, one short relevant one:
    # the chunk view ranks documents by their best chunk, so the long
    # document's other chunks do not push the relevant one down.
    folder = tmp_path / "set"
    (folder / "qrels").mkdir(parents=True)
    long_text = "\n\n".join(f"## Part {i}\n\nOtters swim in rivers, part {i}."
                            for i in range(40))  # fmt: skip
    corpus = [
        {"_id": "long", "title": "Otters", "text": long_text},
        {"_id": "short", "title": "River otters", "text": "Otters swim."},
    ]
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8"
    )
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "q", "text": "otters swim"}) + "\n", encoding="utf-8"
    )
    (folder / "qrels" / "test.tsv").write_text("q\tshort\t1\n", encoding="utf-8")
    out = run_json("eval", str(folder), "--mode", "lexical", "--view", "chunks",
                   "--quiet")  # fmt: skip
    [row] = out["modes"]
    assert row["view"] == "chunks"
    assert row["mrr_at_10"] >= 0.5  # rank 1 or 2, never behind the long one's chunks


def test_eval_command_rejects_a_non_beir_folder(tmp_path: Path) -> None:
    result = run("eval", str(tmp_path), ok=False)
    assert result.exit_code == 1
    assert "not a BEIR set" in result.stderr
