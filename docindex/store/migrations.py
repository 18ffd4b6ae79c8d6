"""Ordered, append-only schema migrations recorded in ``_docindex_migrations``.

Never edit a released migration; append ``m00N_*``. Each runs in a transaction
together with its record, and ``PRAGMA user_version`` tracks the count so a
newer index is refused by an older docindex.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

APPLICATION_ID = 0x446F6349  # "DocI"


def m001_initial(conn: sqlite3.Connection) -> None:
    """Roots, documents (text stored once, zlib), segments with vectors, FTS5."""
    _run(
        conn,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE roots (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);
        CREATE TABLE documents (
            id INTEGER PRIMARY KEY,
            root_id INTEGER NOT NULL REFERENCES roots(id),
            rel_path TEXT NOT NULL,
            kind TEXT NOT NULL,
            title TEXT,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            hash TEXT NOT NULL,
            body BLOB NOT NULL,
            meta TEXT,
            n_segments INTEGER NOT NULL,
            indexed_at REAL NOT NULL,
            UNIQUE (root_id, rel_path)
        );
        CREATE TABLE segments (
            id INTEGER PRIMARY KEY,
            doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            chunk_id TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            char_start INTEGER NOT NULL,
            char_end INTEGER NOT NULL,
            heading TEXT,
            page INTEGER,
            slide INTEGER,
            sheet TEXT,
            cells TEXT,
            hash TEXT NOT NULL,
            vec BLOB
        );
        CREATE INDEX segments_doc ON segments (doc_id, ordinal);
        CREATE TABLE facets (
            doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            value TEXT NOT NULL
        );
        CREATE INDEX facets_kv ON facets (key, value);
        CREATE INDEX facets_doc ON facets (doc_id);
        -- Contentless: the text lives once, compressed, in documents.body.
        CREATE VIRTUAL TABLE fts USING fts5(
            title, body, content='', tokenize='unicode61 remove_diacritics 0'
        );
        CREATE VIRTUAL TABLE fts_vocab USING fts5vocab(fts, 'row');
        """,
    )


def m002_compact_segments(conn: sqlite3.Connection) -> None:
    """Smaller segments (issue #7: index size at most 2x the corpus).

    Heading paths and chunk-id anchors move to one ``documents.sections``
    list per document (zlib-compressed JSON; they repeat along a section), a
    segment keeps its section's index and its piece number, and its chunk id
    is rebuilt from them (``frag`` holds the rare id that cannot be); the
    unused per-segment hash goes. A document's segments have consecutive ids
    from ``documents.first_segment``, which replaces the ``segments_doc``
    index (and the foreign key that needed it) and the ``ordinal`` column;
    ends are stored as lengths (``lines``, ``chars``: smaller varints). Segments and the contentless
    FTS rows cannot be converted in place, so the documents are dropped (with
    the tokenizer and embedder they were built with) and the next scan
    re-indexes them; roots and settings are kept.
    """
    _run(
        conn,
        """
        DROP TABLE fts_vocab;
        DROP TABLE fts;
        DROP TABLE segments;
        DELETE FROM facets;
        DELETE FROM documents;
        DELETE FROM meta WHERE key IN ('tokenizer', 'embedder');
        ALTER TABLE documents ADD COLUMN sections BLOB;
        ALTER TABLE documents ADD COLUMN first_segment INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE segments (
            id INTEGER PRIMARY KEY,
            doc_id INTEGER NOT NULL,
            section INTEGER,
            part INTEGER,
            frag TEXT,
            start_line INTEGER NOT NULL,
            lines INTEGER NOT NULL,
            char_start INTEGER NOT NULL,
            chars INTEGER NOT NULL,
            page INTEGER,
            slide INTEGER,
            sheet TEXT,
            cells TEXT,
            vec BLOB
        );
        CREATE VIRTUAL TABLE fts USING fts5(
            title, body, content='', tokenize='unicode61 remove_diacritics 0'
        );
        CREATE VIRTUAL TABLE fts_vocab USING fts5vocab(fts, 'row');
        """,
    )


def m003_skipped(conn: sqlite3.Connection) -> None:
    """Files left out, with reason and message, until they change (issue #23).

    One row per file: the stat fingerprint (and content hash, when the file
    was read) lets a rescan pass over an unchanged skipped file without
    reading it again or repeating its warning. Indexed-but-cut files
    (``truncated``, ``partial``) have a row here and a document.
    """
    _run(
        conn,
        """
        CREATE TABLE skipped (
            root_id INTEGER NOT NULL REFERENCES roots(id),
            rel_path TEXT NOT NULL,
            reason TEXT NOT NULL,
            message TEXT NOT NULL,
            size INTEGER,
            mtime_ns INTEGER,
            hash TEXT,
            skipped_at REAL NOT NULL,
            PRIMARY KEY (root_id, rel_path)
        ) WITHOUT ROWID;
        CREATE INDEX skipped_reason ON skipped (reason)
        """,
    )


def m004_fingerprint_index(conn: sqlite3.Connection) -> None:
    """A covering index for what every rescan reads of every document (issue #24).

    A rescan reads (rel_path, size, mtime_ns, hash) of every document, and a
    scan that changes something sums ``n_segments`` against the caps. From
    the table, the first is a lookup per row among the compressed texts, and
    the second reads every text (``n_segments`` comes after ``body``): about
    60 and 30 ms for 21,660 documents; from this index, 25 and 3 ms.
    """
    _run(
        conn,
        "CREATE INDEX documents_fingerprint "
        "ON documents (root_id, rel_path, size, mtime_ns, hash, n_segments)",
    )


def m005_document_fields(conn: sqlite3.Connection) -> None:
    """Documents as FTS5 rows with fields, and their salient terms (issue #21).

    ``doc_fts`` holds one contentless row per document (rowid = document id):
    its title and file name words, its headings, and its whole text, so
    ``bm25(doc_fts, title, heads, body)`` ranks whole documents with field
    weights (BM25F-like) in C; ``doc_vocab`` gives document frequencies.
    ``documents.terms`` keeps each document's most frequent content terms
    (JSON) for query feedback. Existing documents have no such row and
    contentless rows cannot be made from the stored postings, so (as in
    m002) the documents are dropped and the next scan re-indexes them; roots,
    settings and skip records are kept.
    """
    _run(
        conn,
        """
        DROP TABLE fts_vocab;
        DROP TABLE fts;
        DELETE FROM segments;
        DELETE FROM facets;
        DELETE FROM documents;
        DELETE FROM meta WHERE key IN ('tokenizer', 'embedder');
        ALTER TABLE documents ADD COLUMN terms TEXT;
        CREATE VIRTUAL TABLE fts USING fts5(
            title, body, content='', tokenize='unicode61 remove_diacritics 0'
        );
        CREATE VIRTUAL TABLE fts_vocab USING fts5vocab(fts, 'row');
        CREATE VIRTUAL TABLE doc_fts USING fts5(
            title, heads, body, content='', tokenize='unicode61 remove_diacritics 0'
        );
        CREATE VIRTUAL TABLE doc_vocab USING fts5vocab(doc_fts, 'row')
        """,
    )


def m006_segment_prose(conn: sqlite3.Connection) -> None:
    """Each segment's words of prose, capped (issue #37).

    A query demotes fragments (a YAML block, the closing lines of a JSX
    example: under ``MIN_PROSE_WORDS`` words of prose) and used to learn
    which from the documents' text, decompressing whole bodies: about half
    of a query's time. The scan now stores the count (``segment_prose``).
    Existing segments get it here, from the stored text, rather than on the
    next scan: a scan passes over unchanged files, so they would never get
    it, and their queries would stay slow. It costs one read of every
    document's text (seconds for the 21,660 documents of the shared corpus),
    once, and gives exactly what a new scan would store.
    """
    import zlib

    from docindex.text.prose import segment_prose

    conn.execute("ALTER TABLE segments ADD COLUMN prose INTEGER")
    docs = conn.execute(
        "SELECT id, body, first_segment, n_segments FROM documents ORDER BY id"
    )
    for _doc_id, body, first, count in docs.fetchall():
        spans = conn.execute(
            "SELECT id, char_start, char_start + chars FROM segments "
            "WHERE id >= ? AND id < ? ORDER BY id",
            (first, first + count),
        ).fetchall()
        if not spans:
            continue
        text = zlib.decompress(body).decode("utf-8")
        words = segment_prose(text, ((start, end) for _, start, end in spans))
        conn.executemany(
            "UPDATE segments SET prose = ? WHERE id = ?",
            [(n, sid) for n, (sid, _, _) in zip(words, spans, strict=True)],
        )


def m007_document_counts(conn: sqlite3.Connection) -> None:
    """Documents' exact term counts instead of their words as positions (#46).

    ``doc_fts`` (title, heads, body with every body word's position) gives
    way to ``doc_terms`` (``detail=none``: each document's terms in slots
    that spell their counts, ``store.doccounts``), ``doc_term_counts`` (a
    count too wide for its slots) and ``doc_lengths``; the document stage
    computes FTS5's ``bm25()`` from them, to the same scores; ``doc_totals``
    (kept by triggers) holds their count and total lengths, which every query
    reads. The segments' ``fts`` puts the body first: FTS5 marks every hit outside its first
    column with two bytes, and most hits are body hits (about 6.5 MB on the
    shared corpus); ``bm25(fts, 1.0, title_weight)`` reads it.

    Contentless rows cannot be moved, so both tables are rebuilt here from
    each document's stored text with the tokenizer the index records
    (seconds per corpus copy, once); documents, segments and vectors stay.
    """
    _run(
        conn,
        """
        DROP TABLE doc_vocab;
        DROP TABLE doc_fts;
        DROP TABLE fts_vocab;
        DROP TABLE fts;
        DELETE FROM meta WHERE key IN ('fts_stale', 'fts_pending');
        CREATE VIRTUAL TABLE fts USING fts5(
            body, title, content='', tokenize='unicode61 remove_diacritics 0'
        );
        CREATE VIRTUAL TABLE fts_vocab USING fts5vocab(fts, 'row');
        CREATE VIRTUAL TABLE doc_terms USING fts5(
            terms, content='', detail=none, columnsize=0,
            tokenize='unicode61 remove_diacritics 0'
        );
        CREATE TABLE doc_lengths (
            id INTEGER PRIMARY KEY, length INTEGER NOT NULL, body INTEGER NOT NULL
        );
        CREATE TABLE doc_totals (
            documents INTEGER NOT NULL, length INTEGER NOT NULL, body INTEGER NOT NULL
        );
        INSERT INTO doc_totals VALUES (0, 0, 0);
        CREATE TABLE doc_term_counts (
            doc_id INTEGER NOT NULL,
            term TEXT NOT NULL,
            title INTEGER NOT NULL,
            heads INTEGER NOT NULL,
            body INTEGER NOT NULL,
            PRIMARY KEY (doc_id, term)
        ) WITHOUT ROWID
        """,
    )
    # (one statement each: ``_run`` splits at semicolons)
    conn.execute(
        "CREATE TRIGGER doc_lengths_added AFTER INSERT ON doc_lengths BEGIN "
        "UPDATE doc_totals SET documents = documents + 1, "
        "length = length + new.length, body = body + new.body; END"
    )
    conn.execute(
        "CREATE TRIGGER doc_lengths_removed AFTER DELETE ON doc_lengths BEGIN "
        "UPDATE doc_totals SET documents = documents - 1, "
        "length = length - old.length, body = body - old.body; END"
    )
    _rebuild_fts(conn)


def _rebuild_fts(conn: sqlite3.Connection) -> None:
    """Every document's ``fts`` and ``doc_terms`` rows from its stored text, as
    a scan makes them (``text.fields``), with the recorded tokenizer."""
    import json
    import zlib

    from docindex.config import Config
    from docindex.store._sql import decode_section, decode_sections, insert_doc_terms
    from docindex.store.doccounts import body_counts, doc_terms
    from docindex.text.fields import document_fields, fts_row, title_text

    row = conn.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
    if row is None:
        return  # nothing indexed yet
    recorded = json.loads(row[0])
    cfg = Config().replace(cjk_ngram=int(recorded["cjk_ngram"]),
                           stem=bool(recorded["stem"]))  # fmt: skip
    docs = conn.execute(
        "SELECT id, title, rel_path, body, sections, first_segment, n_segments "
        "FROM documents ORDER BY id"
    ).fetchall()
    for doc_id, title, rel_path, body, sections_blob, first, count in docs:
        text = zlib.decompress(body).decode("utf-8")
        sections = decode_sections(sections_blob)
        doc_title = title_text(title, rel_path)
        rows: list[tuple[int, str, str]] = []
        headings: list[list[str]] = []
        for sid, section, start, chars in conn.execute(
            "SELECT id, section, char_start, chars FROM segments "
            "WHERE id >= ? AND id < ? ORDER BY id",
            (first, first + count),
        ).fetchall():
            heading = decode_section(sections, section)[0]
            headings.append(heading)
            rows.append(
                (sid, *fts_row(cfg, doc_title, heading, text[start : start + chars]))
            )
        conn.executemany("INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)", rows)
        fields = document_fields(cfg, doc_title, headings)
        insert_doc_terms(
            conn, doc_id, doc_terms(fields, body_counts(b for _, _, b in rows))
        )


def _run(conn: sqlite3.Connection, script: str) -> None:
    """Execute statements one by one: ``executescript`` would COMMIT our transaction."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    m001_initial,
    m002_compact_segments,
    m003_skipped,
    m004_fingerprint_index,
    m005_document_fields,
    m006_segment_prose,
    m007_document_counts,
]
SCHEMA_VERSION = len(MIGRATIONS)


def applied(conn: sqlite3.Connection) -> list[str]:
    """Names of migrations already applied, in order."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = '_docindex_migrations'"
    ).fetchone()
    if not exists:
        return []
    return [
        r[0]
        for r in conn.execute("SELECT name FROM _docindex_migrations ORDER BY rowid")
    ]


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply pending migrations; return the names applied now.

    The connection must be in autocommit mode (``isolation_level=None``).
    """
    done = set(applied(conn))
    ran: list[str] = []
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while we waited for the write
            # lock (two first scans at once, issue #8): look again under the lock.
            if fn.__name__ in applied(conn):
                conn.execute("COMMIT")
                continue
            conn.execute(
                "CREATE TABLE IF NOT EXISTS _docindex_migrations "
                "(name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
            )
            fn(conn)
            conn.execute(
                "INSERT INTO _docindex_migrations (name, applied_at) VALUES (?, ?)",
                (fn.__name__, time.time()),
            )
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(fn) + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        ran.append(fn.__name__)
    return ran
