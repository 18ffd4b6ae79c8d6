"""Indexer speed-ups keep results identical (issue #7): workers, tokens, vectors."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docindex.config import Config
from docindex.embed.ngram import NgramEmbedder
from docindex.ingest import indexer, pool
from docindex.store import Store
from docindex.text.stem import stem
from docindex.text.tokenize import _CJK, identifier_words, normalize, term_parts, terms


def _reference_terms(text: str, cjk_ngram: int = 2, use_stem: bool = True) -> list[str]:
    """The tokenizer written plainly over one regex, for comparison: the latin
    words in text order, then each n-gram size over every CJK run in order."""
    words, grams = [], []
    found = re.findall(rf"([{_CJK}]+)|([^\W_{_CJK}]+)", normalize(text))
    runs = [cjk for cjk, word in found if cjk]
    for _, word in found:
        if word:
            words.append(stem(word) if use_stem else word)
    # identifiers' words and joined names follow the words (issue #47)
    words += [stem(w) if use_stem else w for w in identifier_words(text)]
    for size in range(1, cjk_ngram + 1):
        for cjk in runs:
            grams.extend(cjk[i : i + size] for i in range(len(cjk) - size + 1))
    return words + grams


TEXT = st.text(
    alphabet=st.sampled_from(list("aZ9_-' .\n\tIİﬁé²全文检索エン색\U00020000ǅ")),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.sampled_from([1, 2, 3]), st.booleans())
def test_terms_match_the_reference(text: str, n: int, use_stem: bool) -> None:
    assert terms(text, cjk_ngram=n, use_stem=use_stem) == _reference_terms(
        text, n, use_stem
    )


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_ascii_fast_path_matches_the_reference(text: str) -> None:
    assert terms(text) == _reference_terms(text)


CJK_RUN = st.text(alphabet=st.sampled_from(list("全文检索エン색〇\U00020000\U000323af")),
                  min_size=1, max_size=7)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(CJK_RUN, max_size=4), min_size=1, max_size=6),
       st.sampled_from([1, 2, 3]))  # fmt: skip
def test_cjk_ngram_texts_match_the_reference(
    run_lists: list[list[str]], n: int
) -> None:
    """The numpy n-gram text of big CJK files (issue #7) is the plain join."""
    from docindex.text.tokenize import cjk_ngram_texts

    expected = [" ".join(_reference_terms(" ".join(runs), n)) for runs in run_lists]
    assert cjk_ngram_texts(run_lists, n) == expected


def test_fts_rows_of_a_cjk_heavy_file_are_what_delete_replays() -> None:
    """A file past CJK_NUMPY_MIN takes the numpy path; each FTS row must still be
    ``fts_row`` of its segment, or deleting the file would corrupt the index."""
    from docindex.ingest.segment import segment_document

    paras = [
        f"段落{i}：全文检索和向量检索 mixes English words 第{i}节。" for i in range(60)
    ]
    doc = "# 标题 Title\n\n" + "\n\n".join(paras[:30]) + "\n\n## 第二 Part\n\n"
    doc += "\n\n".join(paras[30:]) + "\n\n## English\n\nonly latin words here\n"
    from docindex.ingest import analyze
    from docindex.ingest.extract import ExtractLimits, get_extractor
    from docindex.text import fields

    cfg = Config(roots=("/x",))
    extracted = get_extractor("md")(doc.encode(), "a.md", ExtractLimits())
    _, segments = segment_document(extracted, "a.md", cfg.segment_chars)
    assert len(segments) > 3
    runs = [term_parts(s.text)[1] for s in segments]
    assert sum(len(r) for rs in runs for r in rs) >= analyze.CJK_NUMPY_MIN
    doc_title = fields.title_text(extracted.title, "a.md")
    # bulk: as in a scan's worker process, where numpy is loaded
    fts, vectors = analyze.analyze_segments(
        cfg, extracted.title, doc_title, segments, bulk=True
    )
    assert vectors is not None and len(vectors) == len(segments)
    assert list(fts) == [
        analyze.fts_row(cfg, doc_title, s.heading_path, s.text) for s in segments
    ]
    assert any(not rs for rs in runs)  # a segment without CJK text is covered too


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=4), st.sampled_from([1, 2, 3]))
def test_embed_parts_is_embed(texts: list[str], n: int) -> None:
    """The indexer's split path (latin terms + CJK code points) = ``embed``."""
    emb = NgramEmbedder(cjk_ngram=n)
    parts = [term_parts(t, identifiers=False) for t in texts]
    a = emb.embed(texts)
    b = emb.embed_parts([p[0] for p in parts], [p[1] for p in parts])
    assert np.allclose(a, b, atol=1e-6)


def test_embed_parts_on_mixed_text() -> None:
    texts = [
        "Indexing the indexes: configure upstream health checks",
        "全文检索 SQLite FTS5 全文检索 and the 検索エンジン 𠀀𠀁𠀂",
        "",
        "the the the",  # only stopwords: a zero row
        "word " * 70 + "other",  # tf above the log table
        "中" * 80 + " 文",  # a CJK tf above the log table
    ]
    emb = NgramEmbedder()
    a = emb.embed(texts)
    parts = [term_parts(t, identifiers=False) for t in texts]
    b = emb.embed_parts([p[0] for p in parts], [p[1] for p in parts])
    assert a.dtype == b.dtype == np.float32 and np.allclose(a, b, atol=1e-6)
    assert not a[3].any() and not b[3].any() and not b[2].any()
    # Context + "\n" + text splits as context then text.
    words, runs = term_parts("Guide > 设置\nInstall 它")
    assert (words, runs) == (["guid", "instal"], ["设置", "它"])
    assert terms("设置它") == ["设", "置", "它", "设置", "置它"]


def test_cjk_ngram_hashes_are_zlib_crc32() -> None:
    import zlib

    from docindex.embed.hashing import utf8_crcs

    chars = ["中", "ア", "한", "〇", "𠀀", "\U000323af"]
    keys, expected = [], []
    for a in chars:
        for b in ["", *chars]:
            for c in ["", *chars] if b else [""]:
                text = a + b + c
                key = 0
                for ch in text:
                    key = (key << 21) | ord(ch)
                keys.append(key)
                expected.append(zlib.crc32(text.encode("utf-8")))
    got = utf8_crcs(np.array(keys, dtype=np.int64))
    assert got.tolist() == expected


def test_table_crcs_of_cjk_unigrams_and_bigrams_are_zlib_crc32() -> None:
    """The affine-combination CRCs (issue #7) equal zlib's, astral planes too."""
    import random
    import zlib

    from docindex.embed.hashing import ngram_crcs

    rng = random.Random(7)
    pool = ["中", "ア", "한", "〇", "𠀀", "\U000323af", "\u1100", "\uff9f"]
    pool += [chr(rng.randrange(0x4E00, 0xA000)) for _ in range(40)]
    pool += [chr(rng.randrange(0x20000, 0x323B0)) for _ in range(40)]
    texts = pool + [a + b for a in pool for b in pool]
    keys = [ord(t[0]) if len(t) == 1 else (ord(t[0]) << 21) | ord(t[1]) for t in texts]
    got = ngram_crcs(np.array(keys, dtype=np.int64))
    assert got.tolist() == [zlib.crc32(t.encode("utf-8")) for t in texts]


def _files(n: int) -> dict[str, str]:
    files = {}
    for i in range(n):
        filler = "text " * (i * 7)
        files[f"d{i % 3}/f{i:02}.md"] = (
            f"# Title {i}\n\n## Setup {i}\n\nInstall widget {i} and configure it.\n\n"
            f"## 配置\n\n全文检索 第{i}节 settings for module_{i}.\n\n{filler}"
        )
    return files


def _snapshot(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        return {
            "docs": conn.execute(
                "SELECT id, rel_path, hash, body, n_segments, sections, first_segment "
                "FROM documents "
                "ORDER BY id"
            ).fetchall(),
            "segments": conn.execute(
                "SELECT id, doc_id, section, part, frag, char_start, vec "
                "FROM segments ORDER BY id"
            ).fetchall(),
            "vocab": conn.execute(
                "SELECT term, doc, cnt FROM fts_vocab ORDER BY term"
            ).fetchall(),
            "match": conn.execute(
                "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH 'widget OR 检索' "
                "ORDER BY bm25(fts), rowid"
            ).fetchall(),
        }
    finally:
        conn.close()


def test_one_or_two_workers_build_the_same_index(
    tree: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(_files(14)).resolve()
    # Small thresholds so 14 files go through the pool in several chunks.
    monkeypatch.setattr(pool, "POOL_THRESHOLD", 2)
    monkeypatch.setattr(pool, "CHUNK_FILES", 3)
    monkeypatch.setattr(pool, "IN_FLIGHT", 1)
    snaps = []
    for workers in (1, 2):
        db = tmp_path / f"w{workers}.db"
        cfg = Config(roots=(str(root),), workers=workers)
        with Store.open(db, create=True) as store:
            result = indexer.scan(store, cfg)
        assert result.indexed == 14 and result.embedded == result.segments
        snaps.append(_snapshot(db))
    assert snaps[0] == snaps[1]


def test_chunks_keep_walk_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool, "CHUNK_FILES", 4)
    monkeypatch.setattr(pool, "CHUNK_BYTES", 100)
    items = list(range(11))
    chunks = list(pool.chunked(items, lambda i: 30))
    assert [j for c in chunks for j in c] == items
    assert [len(c) for c in chunks] == [4, 4, 3]


def test_nested_block_without_savepoint_rolls_back_the_transaction(
    tmp_path: Path,
) -> None:
    with Store.open(tmp_path / "a.db", create=True) as store:
        with pytest.raises(RuntimeError), store.atomic():
            store.set_meta("outer", 1)
            with store.atomic(savepoint=False):
                store.set_meta("inner", 2)
                raise RuntimeError("boom")
        assert store.get_meta("outer") is None and store.get_meta("inner") is None
        with store.atomic(), store.atomic(savepoint=False):
            store.set_meta("kept", 3)
        assert store.get_meta("kept") == 3


def test_caps_hold_without_counting_the_segments_table(
    tree: Any, tmp_path: Path
) -> None:
    root = tree(_files(4)).resolve()
    cfg = Config(roots=(str(root),), workers=1, max_embedded=7, max_segments=40)
    with Store.open(tmp_path / "c.db", create=True) as store:
        result = indexer.scan(store, cfg)
        counts = store.counts()
        assert result.embedded == counts.embedded == 7
        assert "max-embedded" in result.skipped
        assert counts.segments == result.segments <= 40
        assert store.fill_counts() == (counts.documents, counts.segments)


MD_LINE = st.one_of(
    TEXT,
    st.builds(lambda t: f"# {t}", TEXT),
    st.builds(lambda t: f"## {t}", TEXT),
    st.sampled_from(["the the a", "words words words", "全文检索 全文", "中" * 30]),
)


def _analyses(text: str, bulk: bool) -> tuple[Any, Any, list[Any]]:
    from docindex.ingest import analyze
    from docindex.ingest.extract import ExtractLimits, get_extractor
    from docindex.ingest.segment import segment_document
    from docindex.text import fields

    cfg = Config(roots=("/x",))
    extracted = get_extractor("md")(text.encode(), "a-b.md", ExtractLimits())
    _, segments = segment_document(extracted, "a-b.md", cfg.segment_chars)
    doc_title = fields.title_text(extracted.title, "a-b.md")
    args = (cfg, extracted.title, doc_title, segments)
    return (
        analyze.analyze_document(*args, bulk=bulk),
        analyze.analyze_segments(*args, bulk=bulk),
        segments,
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(MD_LINE, min_size=1, max_size=40), st.booleans())
def test_analyze_document_counts_what_document_terms_counts(
    lines: list[str], bulk: bool
) -> None:
    """A scan counts salient terms from token lists (issue #22); the stored
    string must be ``document_terms`` of the FTS rows, as before."""
    from docindex.ingest import analyze
    from docindex.text.tokenize import stopword_terms

    doc, plain, _ = _analyses("\n\n".join(lines), bulk)
    assert (doc.fts, doc.vectors) == tuple(plain)
    assert doc.terms == analyze.document_terms(doc.fts, stopword_terms(True))


def test_salient_terms_of_a_big_cjk_file_and_ties() -> None:
    """Past CJK_NUMPY_MIN and past TERMS_KEPT distinct terms, with count ties
    at the cut: the kept terms are ordered by count, then term."""
    import json

    from docindex.ingest import analyze
    from docindex.text.tokenize import stopword_terms

    paras = [f"段落{i}：全文检索 term{i} term{i % 7} 第{i}节。" for i in range(300)]
    doc, _, segments = _analyses("# 标题\n\n" + "\n\n".join(paras), bulk=True)
    assert len(segments) > 3
    assert doc.terms == analyze.document_terms(doc.fts, stopword_terms(True))
    length, kept = json.loads(doc.terms)
    assert len(kept) == analyze.TERMS_KEPT
    assert length == sum(len(body.split()) for _, body in doc.fts)
    ranked = [(-n, t) for t, n in kept.items()]
    assert ranked == sorted(ranked)
