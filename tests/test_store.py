"""The index file: migrations, identity checks, transactions."""

import sqlite3
from pathlib import Path

import pytest

from docindex import migrations
from docindex.errors import (
    ForeignDatabaseError,
    IndexCorruptError,
    IndexNotFoundError,
    SchemaTooNewError,
)
from docindex.store import Store


def test_migrate_blank_gives_final_schema(tmp_path: Path) -> None:
    with Store.open(tmp_path / "i.db", create=True) as store:
        names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
        assert {"meta", "roots", "documents", "segments", "facets", "fts",
                "fts_vocab", "_docindex_migrations"} <= names  # fmt: skip
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
