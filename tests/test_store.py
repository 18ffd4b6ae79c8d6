"""The index file: migrations, identity checks, transactions."""

import json
import sqlite3
from pathlib import Path

import pytest

from docindex.errors import (
    ForeignDatabaseError,
    IndexCorruptError,
    IndexNotFoundError,
    SchemaTooNewError,
)
from docindex.store import Store, migrations


def test_migrate_blank_gives_final_schema(tmp_path: Path) -> None:
    with Store.open(tmp_path / "i.db", create=True) as store:
        names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
        assert {"meta", "roots", "documents", "segments", "facets", "fts",
                "fts_vocab", "doc_terms", "doc_lengths", "doc_term_counts",
                "_docindex_migrations",
                "documents_fingerprint"} <= names  # fmt: skip
        assert store.conn.execute("PRAGMA application_id").fetchone()[0] == (
            migrations.APPLICATION_ID
        )
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == (
            migrations.SCHEMA_VERSION
        )
        assert migrations.applied(store.conn) == [
            m.__name__ for m in migrations.MIGRATIONS
        ]
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reopen_does_not_migrate_again(tmp_path: Path) -> None:
    Store.open(tmp_path / "i.db", create=True).close()
    with Store.open(tmp_path / "i.db") as store:
        assert migrations.migrate(store.conn) == []


def test_missing_index(tmp_path: Path) -> None:
    with pytest.raises(IndexNotFoundError):
        Store.open(tmp_path / "nope.db")


def test_foreign_database_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(ForeignDatabaseError, match="another application"):
        Store.open(path, create=True)


def test_newer_schema_refused(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    Store.open(path, create=True).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {migrations.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNewError, match="newer docindex"):
        Store.open(path)


def test_not_sqlite_refused(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    path.write_bytes(b"this is not a database at all" * 10)
    with pytest.raises(IndexCorruptError, match="not an SQLite database"):
        Store.open(path)


def test_atomic_nests_and_rolls_back(tmp_path: Path) -> None:
    with Store.open(tmp_path / "i.db", create=True) as store:
        with store.atomic():
            store.set_meta("a", 1)
            with pytest.raises(RuntimeError), store.atomic():
                store.set_meta("b", 2)
                raise RuntimeError
        assert store.get_meta("a") == 1 and store.get_meta("b") is None
        with pytest.raises(RuntimeError), store.atomic():
            store.set_meta("c", 3)
            raise RuntimeError
        assert store.get_meta("c") is None


def test_index_from_schema_1_is_migrated_and_rescanned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tree
) -> None:
    """m002 rebuilds segments in the compact form; the next scan re-indexes."""
    from conftest import run_json

    docs = tree({"a.md": "# Alpha\n\nfirst words\n", "b.txt": "second words\n"})
    db = tmp_path / "old.db"
    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS", [migrations.m001_initial])
        Store.open(db, create=True).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO roots (id, path) VALUES (1, ?)", (str(docs),))
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('settings', ?)",
        (json.dumps({"roots": [str(docs)]}),),
    )
    # What the previous release recorded: older tokenizer and embedder versions.
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('tokenizer', ?), ('embedder', ?)",
        (
            json.dumps({"version": 1, "cjk_ngram": 2, "stem": True}),
            json.dumps({"provider": "ngram", "version": 1, "dim": 256}),
        ),
    )
    conn.execute(
        "INSERT INTO documents VALUES (1, 1, 'a.md', 'md', 'Alpha', 1, 1, 'x', "
        "zeroblob(1), NULL, 1, 0)"
    )
    conn.execute(
        "INSERT INTO segments (id, doc_id, ordinal, chunk_id, start_line, end_line, "
        "char_start, char_end, hash) VALUES (1, 1, 0, 'a.md', 1, 1, 0, 1, 'h')"
    )
    conn.execute("INSERT INTO fts (rowid, title, body) VALUES (1, 'alpha', 'first')")
    conn.commit()
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.close()
    # A root the index names is read once this user names it here (#44).
    out = run_json("scan", str(docs), "--db", str(db))
    assert out["indexed"] == 2 and out["unchanged"] == 0
    hits = run_json("query", "first", "--db", str(db))["hits"]
    assert hits[0]["chunk_id"] == "a.md#alpha" and hits[0]["heading_path"] == ["Alpha"]
    with Store.open(db) as store:
        assert migrations.applied(store.conn)[-1] == migrations.MIGRATIONS[-1].__name__


def test_index_from_schema_4_gets_document_rows_by_a_rescan(
    tmp_path: Path, tree
) -> None:
    """m005 (issue #21): documents need their doc_fts row; the next scan re-indexes."""
    from conftest import run_json

    docs = tree({"unzip.md": "# unzip\n\nExtract files.\n", "b.txt": "unzip unzip\n"})
    db = tmp_path / "old.db"
    assert run_json("scan", str(docs), "--db", str(db))["indexed"] == 2
    conn = sqlite3.connect(db)  # back to schema 4, before the document rows
    for statement in (
        "DROP TABLE doc_terms", "DROP TABLE doc_lengths", "DROP TABLE doc_term_counts",
        "DROP TABLE doc_totals",
        "ALTER TABLE documents DROP COLUMN terms",
        "DELETE FROM _docindex_migrations WHERE name IN "
        "('m005_document_fields', 'm007_document_counts')",
        "PRAGMA user_version = 4",
    ):  # fmt: skip
        conn.execute(statement)
    conn.commit()
    conn.close()
    with Store.open(db) as store:  # migrated on open: documents dropped, roots kept
        assert migrations.applied(store.conn)[-2:] == [
            "m005_document_fields",
            "m007_document_counts",
        ]
        assert store.counts().documents == 0
    # A root the index names is read once this user names it here (#44).
    out = run_json("scan", str(docs), "--db", str(db))
    assert out["indexed"] == 2 and out["unchanged"] == 0
    hits = run_json("query", "unzip", "--db", str(db), "--files")["hits"]
    assert sorted(h["rel_path"] for h in hits) == ["b.txt", "unzip.md"]


def test_new_index_reclaims_free_pages_after_a_big_change(tmp_path: Path) -> None:
    """auto_vacuum=INCREMENTAL on new files; reclaim() shrinks the free list."""
    with Store.open(tmp_path / "i.db", create=True) as store:
        c = store.conn
        assert c.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        c.execute("CREATE TABLE junk (x BLOB)")
        c.executemany("INSERT INTO junk VALUES (zeroblob(3000))", [()] * 500)
        assert store.reclaim() == 0  # nothing free yet
        c.execute("DELETE FROM junk")
        free = c.execute("PRAGMA freelist_count").fetchone()[0]
        assert free > 100
        with store.atomic():  # never inside a caller's transaction
            assert store.reclaim() == 0
        assert store.reclaim() == free
        assert c.execute("PRAGMA freelist_count").fetchone()[0] == 0


def test_body_cache_follows_writes_of_other_connections(tmp_path: Path) -> None:
    """A reader that keeps its Store open never pairs old text with new offsets."""
    from docindex.store import EncodedSegments, NewDocument, compress_body

    path = tmp_path / "i.db"
    with Store.open(path, create=True) as writer, Store.open(path) as reader:
        rid = writer.root_id("/r")
        doc = writer.add_document(
            NewDocument(
                root_id=rid, rel_path="a.md", kind="md", title=None, size=1,
                mtime_ns=1, hash="h", body=compress_body("old text"),
                segments=EncodedSegments(),
            )
        )  # fmt: skip
        assert reader.body(doc) == "old text"
        writer.conn.execute(
            "UPDATE documents SET body = ? WHERE id = ?", (compress_body("new"), doc)
        )
        assert reader.body(doc) == "new"


def test_bodies_are_zlib_format_whichever_compressor_wrote_them() -> None:
    """zlib-ng writes them when installed; the standard zlib reads them (#7)."""
    import zlib

    from docindex.store import compress_body

    text = "Indexing 全文检索 " * 500
    assert zlib.decompress(compress_body(text)).decode("utf-8") == text


def test_first_scan_writes_with_a_rollback_journal_then_returns_to_wal(
    tmp_path: Path,
) -> None:
    """An empty index's first scan writes pages once (#7); the index ends in WAL."""
    import sqlite3

    from docindex.config import Config
    from docindex.ingest.indexer import scan

    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha beta\n")
    db = tmp_path / "i.db"
    with Store.open(db, create=True) as store:
        with store.bulk_journal() as switched:
            assert switched
            mode = store.conn.execute("PRAGMA journal_mode").fetchone()[0]
            assert mode == "delete"
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        scan(store, Config(roots=(str(root),)))
        with store.bulk_journal() as switched:
            assert not switched  # the index has documents now
    assert not Path(f"{db}-journal").exists()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 1


def test_bulk_journal_never_waits_for_another_connection(tmp_path: Path) -> None:
    """Another open connection keeps the index in WAL, without a busy wait."""
    import sqlite3
    import time

    db = tmp_path / "i.db"
    Store.open(db, create=True).close()
    other = sqlite3.connect(db)
    other.execute("SELECT count(*) FROM documents").fetchone()
    with Store.open(db, busy_timeout=30) as store:
        started = time.perf_counter()
        with store.bulk_journal() as switched:
            assert not switched
        assert time.perf_counter() - started < 5
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30000
    other.close()


def test_bulk_journal_returns_to_wal_once_a_reader_lets_go(tmp_path: Path) -> None:
    """A reader mid-read when the first scan ends delays the switch, not loses it."""
    import sqlite3
    import threading

    db = tmp_path / "i.db"
    with Store.open(db, create=True) as store:
        with store.bulk_journal() as switched:
            assert switched
            reader = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM documents").fetchone()
            threading.Timer(0.3, lambda: reader.execute("COMMIT")).start()
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        reader.close()


def test_recording_a_skip_keeps_fts_terms_in_memory(tmp_path: Path) -> None:
    """A skip record mid-scan must not make FTS5 flush its pending terms to a
    new segment (issue #22: INSERT OR REPLACE did, through a statement
    journal, once per skipped file); a second record replaces the first."""
    store = Store.open(tmp_path / "i.db", create=True)
    try:
        rid = store.root_id(str(tmp_path))
        with store.atomic():
            store.restore_fts(1, [(1, "title", "some body terms")], ("title", ""))
            data = "SELECT count(*) FROM fts_data"
            before = store.conn.execute(data).fetchone()[0]
            store.record_skip(rid, "a.md", "empty", "blank", 1, 2, "h", 3.0)
            store.record_skip(rid, "a.md", "binary", "bytes", 4, 5, None, 6.0)
            assert store.conn.execute(data).fetchone()[0] == before
        rows = store.conn.execute(
            "SELECT rel_path, reason, message, size, mtime_ns, hash, skipped_at "
            "FROM skipped"
        ).fetchall()
        assert rows == [("a.md", "binary", "bytes", 4, 5, None, 6.0)]
    finally:
        store.close()


def test_term_frequencies_equal_the_fts5_vocabulary(tmp_path: Path) -> None:
    """``doc_freqs`` / ``document_freqs`` count by MATCH; they must give exactly
    fts5vocab's per-term row counts, for every term of a multilingual index,
    after documents were replaced and deleted (FTS5 then holds delete markers)."""
    import shutil

    import docindex

    root = tmp_path / "docs"
    example = Path(__file__).resolve().parents[1] / "example"
    shutil.copytree(example, root, ignore=shutil.ignore_patterns(".docindex"))
    (root / "extra.md").write_text("# x86_64 C++ utf-8\n\nv2 e.g. naïve café Ωmega\n")
    db = tmp_path / "i.db"
    docindex.open(str(db), roots=[str(root)]).scan()
    pages = sorted(root.rglob("*.md"))
    pages[0].unlink()
    pages[1].write_text(pages[1].read_text() + "\n\nAppended words: quasar nebula.\n")
    docindex.open(str(db)).scan()
    with Store.open(db) as store:
        store.conn.execute(
            "CREATE VIRTUAL TABLE temp.dv USING fts5vocab(main, doc_terms, 'instance')"
        )
        by_doc = {
            term: len(docs)
            for term, docs in _group(store.conn.execute(
                "SELECT DISTINCT term, doc >> 5 FROM temp.dv"
            ))
        }  # fmt: skip
        for vocab, counts in (
            (dict(store.conn.execute("SELECT term, doc FROM fts_vocab")),
             store.doc_freqs),
            (by_doc, store.document_freqs),
        ):  # fmt: skip
            expected = vocab
            assert len(expected) > 500
            assert counts(list(expected)) == expected
            assert counts(["no-such-term-anywhere", ""]) == {}


def _group(rows: object) -> list[tuple[str, set[int]]]:
    out: dict[str, set[int]] = {}
    for term, doc in rows:  # type: ignore[attr-defined]
        out.setdefault(term, set()).add(doc)
    return list(out.items())


def test_fingerprints_under_a_path_are_its_files_and_no_neighbour(
    tmp_path: Path,
) -> None:
    """``fingerprints(root, under)`` reads index ranges: "a" is ``a`` and ``a/…``,
    never ``a-b``, ``a.md``, ``ab`` or ``a0`` (which sort between them)."""
    import docindex

    names = ["a", "a/x.md", "a/b/y.md", "a-b/z.md", "a.md", "ab/w.md", "a0/v.md",
             "b/a/u.md", "é/t.md", "é/s/r.md", "éa/q.md"]  # fmt: skip
    root = tmp_path / "docs"
    for name in names[1:]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n\nwords about {name}\n")
    db = tmp_path / "i.db"
    docindex.open(str(db), roots=[str(root)]).scan()
    with Store.open(db) as store:
        (rid,) = store.roots()
        every = store.fingerprints(rid)
        assert len(every) == len(names) - 1
        for under, expected in (
            (["a"], {"a/x.md", "a/b/y.md"}),
            (["a/b"], {"a/b/y.md"}),
            (["a/x.md"], {"a/x.md"}),
            (["a.md", "b"], {"a.md", "b/a/u.md"}),
            (["é"], {"é/t.md", "é/s/r.md"}),
            ([""], set(every)),
            ([], set()),
        ):
            got = store.fingerprints(rid, under)
            assert set(got) == expected, under
            assert all(got[k] == every[k] for k in got)
    # Through `scan PATH`: files deleted under a/ go, a deleted neighbour stays
    # until a scan covers it.
    (root / "a" / "x.md").unlink()
    (root / "a-b" / "z.md").unlink()
    assert docindex.open(str(db)).scan(root / "a").removed == 1
    with Store.open(db) as store:
        (rid,) = store.roots()
        left = set(store.fingerprints(rid))
    assert "a/x.md" not in left and "a-b/z.md" in left
    assert docindex.open(str(db)).scan().removed == 1


def test_m006_stores_each_segments_prose_as_a_scan_does(tmp_path: Path, tree) -> None:
    """A scan stores each segment's capped prose count; an index from before
    m006 gets the same counts from its stored text when it is migrated."""
    from conftest import run

    fence = "```yaml\n" + "\n".join(f"key{i}: value{i}" for i in range(40)) + "\n```"
    prose = "The limit applies to every consumer of the route, counted per second."
    docs = tree({"a.md": f"# Limits\n\n{prose}\n\n## Config\n\n{fence}\n"})
    db = tmp_path / "i.db"
    run("scan", str(docs), "--db", str(db), "-q")
    conn = sqlite3.connect(db)
    scanned = conn.execute("SELECT id, prose FROM segments ORDER BY id").fetchall()
    counts = [n for _, n in scanned]  # the prose (capped), the YAML block
    assert max(counts) == 8 and min(counts) < 8
    conn.execute("ALTER TABLE segments DROP COLUMN prose")
    conn.execute("DELETE FROM _docindex_migrations WHERE name = 'm006_segment_prose'")
    conn.execute(f"PRAGMA user_version = {migrations.SCHEMA_VERSION - 1}")
    conn.commit()
    conn.close()
    with Store.open(db) as store:
        migrated = store.conn.execute("SELECT id, prose FROM segments ORDER BY id")
        assert migrated.fetchall() == scanned
        assert [r.prose for r in store.segments_of(1)] == counts
