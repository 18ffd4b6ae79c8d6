"""Documents ranked from their exact term counts (issue #46, #35's option b).

A document's terms are stored as counts (``doc_terms``, FTS5 ``detail=none``
slots; ``doc_term_counts`` for counts too wide; ``doc_lengths``), and the
document stage computes the score FTS5's ``bm25()`` gave over a
``(title, heads, body)`` row holding every term. The oracle here is that FTS5
table itself, built from the same rows: ids and scores must be equal, to the
last bit, for every query, after edits and deletes too.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from docindex.config import Config
from docindex.ingest import indexer
from docindex.search.docstage import FIELD_WEIGHTS
from docindex.store import DocFilter, Store, migrations

QUERIES = [
    '"widget"', '"configure" OR "install"', '"全文" OR "the"', '"now"',
    '"step" OR "widget" OR "配置"', '"title" OR "repeat"', '"京・" OR "・" OR "大阪"',
    '"kestrel" OR "index" OR "sqlite" OR "the"', '"nosuchterm"', '"旅行"',
]  # fmt: skip


def _folder(tmp_path: Path, name: str = "docs") -> Path:
    """A multilingual tree: the example workspace plus files whose counts need
    the wide slots (a title word 20 times, a heading word in 130 headings)
    and CJK text FTS5 splits (``・`` inside an n-gram)."""
    root = tmp_path / name
    shutil.copytree(Path(__file__).resolve().parents[1] / "example", root)
    (root / "d").mkdir()
    for i in range(6):
        (root / "d" / f"f{i}.md").write_text(
            f"# Title {i}\n\n## Setup\n\nInstall widget {i}, then configure it.\n\n"
            f"## 配置\n\n全文检索 第{i}节 widget settings. 東京・大阪の旅行 now.\n",
            encoding="utf-8",
        )
    (root / "d" / "wide.md").write_text(
        "# "
        + " ".join(["repeat"] * 20)
        + "\n\nThe title repeats.\n\n"
        + "".join(f"## Step {i} widget\n\nDo step {i}.\n\n" for i in range(130)),
        encoding="utf-8",
    )
    return root


def _oracle(store: Store, cfg: Config) -> sqlite3.Connection:
    """The old document table: every document's fields and body tokens in an
    FTS5 row of three columns (what ``doc_fts`` held before #46)."""
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE d USING fts5(title, heads, body, content='', "
        "tokenize='unicode61 remove_diacritics 0')"
    )
    for (doc_id,) in store.conn.execute("SELECT id FROM documents").fetchall():
        rows, fields = indexer.document_fts(store, cfg, doc_id) or ([], ("", ""))
        body = " ".join(b for _, _, b in rows if b)
        conn.execute(
            "INSERT INTO d (rowid, title, heads, body) VALUES (?, ?, ?, ?)",
            (doc_id, *fields, body),
        )
    return conn


def _same_as_fts5(store: Store, cfg: Config) -> None:
    oracle = _oracle(store, cfg)
    try:
        for q in QUERIES:
            want = oracle.execute(
                "SELECT rowid, -bm25(d, ?, ?, ?) AS s FROM d WHERE d MATCH ? "
                "ORDER BY s DESC, rowid LIMIT 30",
                (*FIELD_WEIGHTS, q),
            ).fetchall()
            got = [
                (h.id, h.score) for h in store.document_lexical(q, 30, FIELD_WEIGHTS)
            ]
            assert got == want, q  # exact: the same floating-point operations
        # a filter keeps the scores of the whole index (idf, mean length)
        txt = [
            r[0]
            for r in store.conn.execute("SELECT id FROM documents WHERE kind = 'txt'")
        ]
        assert txt
        want = oracle.execute(
            "SELECT rowid, -bm25(d, ?, ?, ?) AS s FROM d WHERE d MATCH ? AND rowid IN "
            f"({','.join(map(str, txt))}) ORDER BY s DESC, rowid LIMIT 30",
            (*FIELD_WEIGHTS, QUERIES[-3]),
        ).fetchall()
        got = store.document_lexical(
            QUERIES[-3], 30, FIELD_WEIGHTS, DocFilter(kinds=("txt",))
        )
        assert [(h.id, h.score) for h in got] == want and want
        n_docs = oracle.execute("SELECT count(*) FROM d").fetchone()[0]
        assert store.document_stats()[0] == n_docs
        oracle.execute("CREATE VIRTUAL TABLE v USING fts5vocab(d, 'row')")
        expected = dict(oracle.execute("SELECT term, doc FROM v"))
        assert store.document_freqs(list(expected)) == expected
    finally:
        oracle.close()


def test_document_scores_are_fts5_bm25_of_the_whole_rows(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    cfg = Config(roots=(str(root),))
    with Store.open(tmp_path / "i.db", create=True) as store:
        indexer.scan(store, cfg)
        wide = store.conn.execute("SELECT count(*) FROM doc_term_counts").fetchone()
        assert wide[0] >= 2  # "repeat" (title) and "step" (headings) stored whole
        _same_as_fts5(store, cfg)
    # Edits and a deletion: the old rows go by replaying their counts.
    for path in sorted((root / "d").iterdir())[:3]:
        path.write_text(path.read_text("utf-8") + "\nMore widget text now.\n")
    (root / "d" / "f5.md").unlink()
    (root / "d" / "wide.md").write_text("# Short now\n\nWidget.\n")
    with Store.open(tmp_path / "i.db") as store:
        result = indexer.scan(store, cfg)
        assert result.updated == 4 and result.removed == 1
        assert (
            store.conn.execute("SELECT count(*) FROM doc_term_counts").fetchone()[0]
            == 0
        )
        _same_as_fts5(store, cfg)
        store.conn.execute(
            "INSERT INTO doc_terms (doc_terms, rank) VALUES ('integrity-check', 0)"
        )


def _downgrade_to_schema_6(db: Path, cfg: Config) -> None:
    """Rewrite an index as schema 6 held it: ``fts(title, body)`` and a
    ``doc_fts`` row of every document's words (before #46)."""
    with Store.open(db) as store:
        c = store.conn
        docs = [int(r[0]) for r in c.execute("SELECT id FROM documents")]
        rows = {d: indexer.document_fts(store, cfg, d) for d in docs}
        with store.atomic():
            for name in ("doc_terms", "doc_lengths", "doc_totals", "doc_term_counts",
                         "fts_vocab",
                         "fts"):  # fmt: skip
                c.execute(f"DROP TABLE {name}")
            c.execute(
                "CREATE VIRTUAL TABLE fts USING fts5(title, body, content='', "
                "tokenize='unicode61 remove_diacritics 0')"
            )
            c.execute("CREATE VIRTUAL TABLE fts_vocab USING fts5vocab(fts, 'row')")
            c.execute(
                "CREATE VIRTUAL TABLE doc_fts USING fts5(title, heads, body, "
                "content='', tokenize='unicode61 remove_diacritics 0')"
            )
            c.execute("CREATE VIRTUAL TABLE doc_vocab USING fts5vocab(doc_fts, 'row')")
            for doc_id, (seg_rows, fields) in rows.items():  # type: ignore[misc]
                c.executemany(
                    "INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)", seg_rows
                )
                c.execute(
                    "INSERT INTO doc_fts (rowid, title, heads, body) VALUES (?, ?, ?, ?)",
                    (doc_id, *fields, " ".join(b for _, _, b in seg_rows if b)),
                )
            c.execute(
                "DELETE FROM _docindex_migrations WHERE name = 'm007_document_counts'"
            )
            c.execute("PRAGMA user_version = 6")


def _answers(db: Path) -> list[list[tuple[str, float]]]:
    import docindex

    index = docindex.open(str(db))
    out = []
    for q in ("widget configure", "全文检索", "repeat step", "install sqlite index"):
        for files in (False, True):
            hits = index.query(q, files=files, explain=True).hits
            out.append([(h.chunk_id, (h.explain or {})["fused"]) for h in hits])
    return out


def test_an_index_of_schema_6_is_upgraded_in_place(tmp_path: Path) -> None:
    """m007 rebuilds both tables from the stored text: the same answers, and
    nothing to re-read (documents, segments and vectors kept)."""
    root = _folder(tmp_path)
    cfg = Config(roots=(str(root),))
    db = tmp_path / "i.db"
    with Store.open(db, create=True) as store:
        indexer.scan(store, cfg)
        vectors = store.counts().embedded
    before = _answers(db)
    _downgrade_to_schema_6(db, cfg)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 6
    conn.close()
    assert _answers(db) == before  # the first (query) open migrated it
    with Store.open(db) as store:
        assert migrations.applied(store.conn)[-1] == "m007_document_counts"
        names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
        assert "doc_fts" not in names and "doc_terms" in names
        c = store.conn  # the dropped tables' pages went back to the file system
        free = c.execute("PRAGMA freelist_count").fetchone()[0]
        assert free <= 0.01 * c.execute("PRAGMA page_count").fetchone()[0]
        assert store.counts().embedded == vectors
        result = indexer.scan(store, cfg)
        assert result.indexed == result.updated == 0 and result.unchanged > 0
        _same_as_fts5(store, cfg)


@pytest.mark.parametrize("count", [1, 2, 7, 16, 1000, (1 << 20) - 1, 1 << 20])
def test_counts_round_trip_through_the_slots(tmp_path: Path, count: int) -> None:
    """Any count reads back exactly: within its slots, or stored whole past them."""
    from collections import Counter

    from docindex.store import doc_terms

    stored = doc_terms(("word title", "word"), Counter({"word": count, "other": 3}))
    assert stored.length == 2 + 1 + count + 3 and stored.body == count + 3
    with Store.open(tmp_path / "i.db", create=True) as store, store.atomic():
        from docindex.store._sql import insert_doc_terms

        insert_doc_terms(store.conn, 7, stored)
        rows = store.conn.execute(
            "SELECT rowid FROM doc_terms WHERE doc_terms MATCH '\"word\"'"
        ).fetchall()
        escaped = [r for (r,) in rows if r & 31 == 31]
        assert len(escaped) == (count >= 1 << 20)
        assert store._piece_hits("word") == {7: (1, 1, count)}
