"""Document rows made smaller without a ranking change (issue #35).

The ``doc_fts`` body holds the document's tokens sorted (bm25 reads counts
and lengths only) and ``documents.terms`` is stored compressed. An index
written before (bodies in text order, plain-text terms) keeps working: its
rows delete cleanly and its terms read back.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

from docindex.config import Config
from docindex.ingest import indexer
from docindex.store import Store, document_body

ROWS = [
    ("install widget", "widget install widget configure the widget now"),
    ("配置", "全文 文检 检索 全文 configure widget"),
    ("other", "nothing to see here at all the the the"),
    ("setup", "configure configure install"),
]
QUERIES = ['"widget"', '"configure" OR "install"', '"全文" OR "the"', '"now"']


def _ranked(body_of: list[str]) -> dict[str, list[tuple[int, float]]]:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE d USING fts5(title, heads, body, content='', "
        "tokenize='unicode61 remove_diacritics 0')"
    )
    for rowid, ((title, _), body) in enumerate(zip(ROWS, body_of, strict=True), 1):
        conn.execute(
            "INSERT INTO d (rowid, title, heads, body) VALUES (?, ?, '', ?)",
            (rowid, title, body),
        )
    out = {
        q: conn.execute(
            "SELECT rowid, bm25(d, 0.2, 0.2, 1.0) FROM d WHERE d MATCH ? "
            "ORDER BY rowid",
            (q,),
        ).fetchall()
        for q in QUERIES
    }
    conn.close()
    return out


def test_sorted_document_bodies_rank_as_text_order_does() -> None:
    in_order = [body for _, body in ROWS]
    sorted_ = [document_body([("", body)]) for _, body in ROWS]
    assert sorted_ != in_order  # the bodies did change order
    assert _ranked(sorted_) == _ranked(in_order)


def _folder(tmp_path: Path, name: str = "docs") -> Path:
    root = tmp_path / name
    (root / "d").mkdir(parents=True)
    for i in range(6):
        (root / "d" / f"f{i}.md").write_text(
            f"# Title {i}\n\n## Setup\n\nInstall widget {i}, then configure it.\n\n"
            f"## 配置\n\n全文检索 第{i}节 widget settings.\n",
            encoding="utf-8",
        )
    return root


def _vocab(db: Path) -> list[tuple[str, int, int]]:
    conn = sqlite3.connect(db)
    try:
        conn.execute(
            "INSERT INTO doc_fts (doc_fts, rank) VALUES ('integrity-check', 0)"
        )
        return conn.execute(
            "SELECT term, doc, cnt FROM doc_vocab ORDER BY term"
        ).fetchall()
    finally:
        conn.close()


def _make_old(store: Store, cfg: Config, doc_id: int) -> str:
    """Rewrite a document's rows as an index before issue #35 held them."""
    rows, fields = indexer.document_fts(store, cfg, doc_id) or ([], ("", ""))
    in_order = " ".join(b for _, _, b in rows if b)
    c = store.conn
    c.execute(
        "INSERT INTO doc_fts (doc_fts, rowid, title, heads, body) "
        "VALUES ('delete', ?, ?, ?, ?)",
        (doc_id, *fields, document_body((t, b) for _, t, b in rows)),
    )
    c.execute(
        "INSERT INTO doc_fts (rowid, title, heads, body) VALUES (?, ?, ?, ?)",
        (doc_id, *fields, in_order),
    )
    (blob,) = c.execute(
        "SELECT terms FROM documents WHERE id = ?", (doc_id,)
    ).fetchone()
    plain = zlib.decompress(blob).decode("utf-8")
    c.execute("UPDATE documents SET terms = ? WHERE id = ?", (plain, doc_id))
    return plain


def test_terms_are_stored_compressed(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    cfg = Config(roots=(str(root),))
    with Store.open(tmp_path / "i.db", create=True) as store:
        indexer.scan(store, cfg)
        raw = store.conn.execute("SELECT id, terms FROM documents").fetchall()
        assert raw and all(isinstance(t, bytes) for _, t in raw)
        terms = store.document_terms([d for d, _ in raw])
    for doc_id, blob in raw:
        length, kept = json.loads(terms[doc_id])
        assert terms[doc_id] == zlib.decompress(blob).decode("utf-8")
        assert length > 0 and "widget" in kept


def test_an_index_written_before_keeps_working(tmp_path: Path) -> None:
    """Old rows read back, delete cleanly, and the index ends as a fresh one."""
    root = _folder(tmp_path)
    cfg = Config(roots=(str(root),))
    db = tmp_path / "old.db"
    with Store.open(db, create=True) as store:
        indexer.scan(store, cfg)
        ids = [int(r[0]) for r in store.conn.execute("SELECT id FROM documents")]
        with store.atomic():
            plain = {d: _make_old(store, cfg, d) for d in ids}
        assert store.document_terms(ids) == plain
    # Every file changes: each old row is deleted by replaying sorted tokens.
    for path in sorted((root / "d").iterdir()):
        path.write_text(path.read_text("utf-8") + "\nMore text.\n", encoding="utf-8")
    with Store.open(db) as store:
        result = indexer.scan(store, cfg)
        assert result.updated == len(ids)
    fresh = tmp_path / "fresh.db"
    with Store.open(fresh, create=True) as store:
        indexer.scan(store, cfg)
    assert _vocab(db) == _vocab(fresh)
