"""The PostgreSQL index's schema: ordered, append-only migrations (issue #34).

As in ``store/migrations.py``: never edit a released migration; append
``m00N_*``. Each runs in one transaction with its record in
``docindex_migrations``; the count is the schema version, and an index
written by a newer docindex (more records than ``SCHEMA_VERSION``) is
refused. Two processes that create the schema at once serialise on an
advisory lock.

Full-text data (chosen over ``tsvector``, whose positions stop at 256 per
lexeme and 16,383 per text, so term frequencies would be capped): since
m003 a ``postings`` table holds one row per term and document, with the
document's hits of the term in its fields (``fld``: title and headings
packed in one number), in its body (``body``), the segments holding it and
their packed hits (arrays), and the document's length; ``documents.lens``
holds its segments' lengths. A btree on ``(term, doc)`` that includes the
document's figures answers the document stage from the index alone; bm25 is
computed in the server as FTS5's ``bm25()`` does (``ranking.py``). Up to
schema 2 each segment held a ``jsonb`` term -> hits object with a GIN index,
and a query read every matching segment's object (issue #34: 20 ms of a
query's 110 went to the document stage alone).

``vocab`` holds how many segments and documents hold each term, as deltas:
each writing transaction appends one row per term it changed (no row is
updated, so concurrent writers never wait on each other) and
``PgStore.compact_vocab`` folds them. Counting with the GIN index instead
cost 60-120 ms per SciFact query. Rows whose term starts with a space are
the totals (`` rows``: segments, documents; `` tokens``: their tokens;
`` body``: documents' body tokens).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import TupleRow

LOCK_KEY = 0x446F6349  # "DocI": schema changes


def m001_initial(conn: Connection[TupleRow]) -> None:
    """Settings, roots with per-host paths, documents, segments, facets, skips."""
    for statement in _M001.split(";"):
        if statement.strip():
            conn.execute(statement)


_M001 = """
CREATE TABLE docindex_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE roots (
    id bigserial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    path text COLLATE "C" NOT NULL
);
CREATE TABLE root_paths (
    root_id bigint NOT NULL REFERENCES roots(id) ON DELETE CASCADE,
    host text NOT NULL,
    path text COLLATE "C" NOT NULL,
    PRIMARY KEY (root_id, host),
    UNIQUE (host, path)
);
CREATE TABLE documents (
    id bigserial PRIMARY KEY,
    root_id bigint NOT NULL REFERENCES roots(id),
    rel_path text COLLATE "C" NOT NULL,
    kind text NOT NULL,
    title text,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    hash text NOT NULL,
    body bytea NOT NULL,
    meta text,
    n_segments integer NOT NULL,
    indexed_at double precision NOT NULL,
    sections bytea,
    first_segment bigint NOT NULL,
    terms text,
    ftf jsonb NOT NULL,
    len integer NOT NULL,
    body_len integer NOT NULL,
    seg_len bigint NOT NULL,
    UNIQUE (root_id, rel_path)
);
CREATE INDEX documents_ftf ON documents USING gin (ftf);
CREATE TABLE segments (
    id bigint PRIMARY KEY,
    doc_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    section integer,
    part integer,
    frag text,
    start_line integer NOT NULL,
    lines integer NOT NULL,
    char_start integer NOT NULL,
    chars integer NOT NULL,
    page integer,
    slide integer,
    sheet text,
    cells text,
    vec bytea,
    tf jsonb NOT NULL,
    len integer NOT NULL
);
CREATE INDEX segments_doc ON segments (doc_id);
CREATE INDEX segments_tf ON segments USING gin (tf);
CREATE TABLE facets (
    doc_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    key text NOT NULL,
    value text NOT NULL
);
CREATE INDEX facets_kv ON facets (key, value);
CREATE INDEX facets_doc ON facets (doc_id);
CREATE TABLE skipped (
    root_id bigint NOT NULL REFERENCES roots(id),
    rel_path text COLLATE "C" NOT NULL,
    reason text NOT NULL,
    message text NOT NULL,
    size bigint,
    mtime_ns bigint,
    hash text,
    skipped_at double precision NOT NULL,
    PRIMARY KEY (root_id, rel_path)
);
CREATE INDEX skipped_reason ON skipped (reason);
CREATE TABLE vocab (
    term text COLLATE "C" NOT NULL,
    segs bigint NOT NULL,
    docs bigint NOT NULL
);
CREATE INDEX vocab_term ON vocab (term)
"""


def m002_segment_prose(conn: Connection[TupleRow]) -> None:
    """Each segment's words of prose, capped (issue #37; SQLite's m006).

    Rows written before stay NULL and their queries read the text instead
    (``search.quality``) until their documents are written again.
    """
    conn.execute("ALTER TABLE segments ADD COLUMN prose smallint")


def m003_postings(conn: Connection[TupleRow]) -> None:
    """A postings table replaces the ``jsonb`` term frequencies and their GIN
    indexes (issue #34: a query read every matching segment's ``jsonb``).

    One row per term and document: ``fld`` its packed hits in the document's
    fields (title << 24 | headings), ``body`` its body hits summed over the
    segments, ``n`` the segments holding it, ``dlen`` the document's tokens;
    ``segs``/``hits`` the ordinal and packed hits (title << 24 | body) of
    each segment holding it; ``documents.lens`` each segment's tokens. The
    btree on ``(term, doc)`` includes the document's figures, so the
    document stage reads the index only; the chunk bm25 and the counts read
    the arrays of the rows they need. Existing rows are converted here, in
    the migration's transaction; a new index gets its btrees after its first
    load (``_M003_INDEXES``; ``POSTINGS_INDEXES`` since m004).
    """
    for statement in _M003.split(";"):
        if statement.strip():
            conn.execute(statement)
    if one(conn.execute("SELECT EXISTS (SELECT 1 FROM postings)").fetchone())[0]:
        for statement in _M003_INDEXES:
            conn.execute(statement)


# The postings btrees as m003 made them (frozen: m003 builds these).
_M003_INDEXES = (
    "CREATE INDEX IF NOT EXISTS postings_term ON postings (term, doc) "
    "INCLUDE (fld, body, n, dlen)",
    "CREATE INDEX IF NOT EXISTS postings_doc ON postings (doc)",
)


_M003 = f"""
CREATE TABLE postings (
    term text COLLATE "C" NOT NULL,
    doc bigint NOT NULL,
    fld bigint NOT NULL,
    body bigint NOT NULL,
    n integer NOT NULL,
    dlen integer NOT NULL,
    segs integer[] NOT NULL,
    hits bigint[] NOT NULL
);
ALTER TABLE documents ADD COLUMN lens integer[];
UPDATE documents d SET lens = ARRAY(
    SELECT s.len FROM segments s WHERE s.doc_id = d.id ORDER BY s.id
);
INSERT INTO postings (term, doc, fld, body, n, dlen, segs, hits)
SELECT coalesce(s.term, f.term), coalesce(s.doc, f.doc), coalesce(f.fld, 0),
       coalesce(s.body, 0), coalesce(s.n, 0), d.len,
       coalesce(s.segs, '{{}}'), coalesce(s.hits, '{{}}')
FROM (
    SELECT x.doc, x.term, sum(x.hit & {(1 << 24) - 1}) AS body, count(*) AS n,
           array_agg(x.ord ORDER BY x.ord) AS segs,
           array_agg(x.hit ORDER BY x.ord) AS hits
    FROM (
        SELECT s.doc_id AS doc, k.term, (s.id - d.first_segment)::integer AS ord,
               (s.tf ->> k.term)::bigint AS hit, s.len
        FROM segments s JOIN documents d ON d.id = s.doc_id
        CROSS JOIN LATERAL jsonb_object_keys(s.tf) AS k(term)
    ) x GROUP BY x.doc, x.term
) s
FULL JOIN (
    SELECT d.id AS doc, k.term, (d.ftf ->> k.term)::bigint AS fld
    FROM documents d CROSS JOIN LATERAL jsonb_object_keys(d.ftf) AS k(term)
) f ON f.doc = s.doc AND f.term = s.term
JOIN documents d ON d.id = coalesce(s.doc, f.doc);
DROP INDEX segments_tf;
DROP INDEX documents_ftf;
ALTER TABLE segments DROP COLUMN tf;
ALTER TABLE documents DROP COLUMN ftf
"""


def m004_root_access(conn: Connection[TupleRow]) -> None:
    """Per-root grants, enforced by the server's row-level security (issue #48).

    ``root_grants`` names the roles that may read a root; a root without a
    row there stays readable by every role that may read the index. Every
    table that holds a root's rows, its text or what is derived from it gets
    the root's id (``segments``, ``facets``, ``postings`` and ``vocab`` did
    not have it) and a policy that hides the rows of the roots granted to
    none of the current role's roles (``docindex_hidden_roots``: a
    SECURITY DEFINER function, so that it reads every grant while its
    callers see only theirs). The tables' owner (and a member of it, and a
    superuser) bypasses the policies: it reads and writes every root.

    ``vocab`` is counted again per root from the postings and documents, so
    a reader's idf, N and average length sum over the roots it may read.
    The settings row stops listing roots and the roots' pins move to their
    host's ``root_paths`` row: both would name the folders of hidden roots.
    """
    from psycopg import sql

    conn.execute(
        "CREATE TABLE root_grants (root_id bigint NOT NULL REFERENCES roots(id) "
        "ON DELETE CASCADE, role text NOT NULL, PRIMARY KEY (root_id, role))"
    )
    conn.execute("ALTER TABLE root_paths ADD COLUMN pin bigint[]")
    conn.execute("DROP INDEX IF EXISTS postings_term")
    conn.execute("DROP INDEX IF EXISTS postings_doc")
    conn.execute(
        "DELETE FROM postings p WHERE NOT EXISTS "
        "(SELECT 1 FROM documents d WHERE d.id = p.doc)"
    )
    for table, doc in (("postings", "doc"), ("segments", "doc_id"),
                       ("facets", "doc_id")):  # fmt: skip
        conn.execute(f"ALTER TABLE {table} ADD COLUMN root_id bigint")
        conn.execute(
            f"UPDATE {table} t SET root_id = d.root_id FROM documents d "
            f"WHERE d.id = t.{doc}"
        )
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN root_id SET NOT NULL")
    for statement in _M004_VOCAB:
        conn.execute(statement)
    _m004_meta(conn)
    name = one(conn.execute("SELECT current_schema()").fetchone())[0]
    for function in _M004_FUNCTIONS:
        conn.execute(sql.SQL(function).format(schema=sql.Identifier(str(name))))
    for table, column in _M004_TABLES:
        conn.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        # Rows are read where their root is among the visible ones (a list the
        # planner estimates as most rows, as they mostly are: a NOT IN list
        # of the hidden ones was estimated at one row, and a reader's plans
        # went wrong: 6x slower); a new row may go anywhere but a hidden root
        # (a root made in the same statement is in neither list yet).
        visible = (
            f"{column} = ANY ((SELECT docindex_visible_roots(current_user))::bigint[])"
        )
        if table == "root_grants":
            conn.execute(
                f"CREATE POLICY docindex_root_access ON {table} FOR SELECT "
                f"USING ({visible})"
            )
            continue
        conn.execute(
            f"CREATE POLICY docindex_root_access ON {table} USING ({visible}) "
            f"WITH CHECK (NOT ({column} = ANY ((SELECT docindex_hidden_roots("
            "current_user))::bigint[])))"
        )
    if one(conn.execute("SELECT EXISTS (SELECT 1 FROM postings)").fetchone())[0]:
        for statement in _M004_INDEXES:
            conn.execute(statement)


# Each root's share of the counts, from the rows themselves (m004).
_M004_VOCAB = (
    "DELETE FROM vocab",
    "ALTER TABLE vocab ADD COLUMN root_id bigint",
    "INSERT INTO vocab (root_id, term, segs, docs) SELECT root_id, term, sum(n), "
    "count(*) FILTER (WHERE fld <> 0 OR body > 0) FROM postings "
    "GROUP BY root_id, term",
    "INSERT INTO vocab (root_id, term, segs, docs) SELECT root_id, x.term, "
    "sum(x.segs), sum(x.docs) FROM documents CROSS JOIN LATERAL (VALUES "
    "(' rows', n_segments::bigint, 1::bigint), (' tokens', seg_len, len::bigint), "
    "(' body', 0::bigint, body_len::bigint)) AS x(term, segs, docs) "
    "GROUP BY root_id, x.term",
    "ALTER TABLE vocab ALTER COLUMN root_id SET NOT NULL",
)

# The roots granted to none of ``who``'s roles, and the others (m004): every
# root and grant is read as the functions' owner (the tables' owner, whom
# the policies do not apply to), not as the caller. PL/pgSQL keeps their
# plans for the session; a SQL function with a SET clause is planned at
# every call (0.3-0.6 ms, twice per statement of a reader).
_M004_FUNCTIONS = (
    """
CREATE FUNCTION docindex_hidden_roots(who name) RETURNS bigint[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $f$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(g.root_id ORDER BY g.root_id), ARRAY[]::bigint[])
        FROM (
            SELECT x.root_id FROM {schema}.root_grants x GROUP BY x.root_id
            HAVING NOT bool_or(EXISTS (SELECT 1 FROM pg_roles r
                                       WHERE r.rolname = x.role
                                       AND pg_has_role(who, r.oid, 'MEMBER')))
        ) g
    );
END
$f$
""",
    """
CREATE FUNCTION docindex_visible_roots(who name) RETURNS bigint[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $f$
DECLARE
    hidden bigint[] := {schema}.docindex_hidden_roots(who);
BEGIN
    RETURN (
        SELECT coalesce(array_agg(r.id ORDER BY r.id), ARRAY[]::bigint[])
        FROM {schema}.roots r WHERE r.id <> ALL (hidden)
    );
END
$f$
""",
)

_M004_TABLES = (
    ("roots", "id"), ("root_paths", "root_id"), ("root_grants", "root_id"),
    ("documents", "root_id"), ("segments", "root_id"), ("facets", "root_id"),
    ("postings", "root_id"), ("skipped", "root_id"), ("vocab", "root_id"),
)  # fmt: skip

# The postings btrees since m004: the root's id is in the covering index, so
# a reader's policy is checked without reading the table (index-only scans).
_M004_INDEXES = (
    "CREATE INDEX IF NOT EXISTS postings_term ON postings (term, doc) "
    "INCLUDE (fld, body, n, dlen, root_id)",
    "CREATE INDEX IF NOT EXISTS postings_doc ON postings (doc)",
)


def _m004_meta(conn: Connection[TupleRow]) -> None:
    """The settings row without roots; the roots' pins into ``root_paths``."""
    import json

    row = conn.execute(
        "SELECT value FROM docindex_meta WHERE key = 'settings'"
    ).fetchone()
    if row is not None:
        settings = json.loads(row[0])
        if isinstance(settings, dict) and "roots" in settings:
            del settings["roots"]
            conn.execute(
                "UPDATE docindex_meta SET value = %s WHERE key = 'settings'",
                (json.dumps(settings, sort_keys=True),),
            )
    row = conn.execute(
        "DELETE FROM docindex_meta WHERE key = 'root_pins' RETURNING value"
    ).fetchone()
    pins = json.loads(row[0]) if row is not None else {}
    for path, pin in pins.items() if isinstance(pins, dict) else ():
        conn.execute(
            "UPDATE root_paths SET pin = %s WHERE path = %s",
            ([int(v) for v in pin], path),
        )


#: The postings btrees a loaded index has (``PgStore.index_postings``): one
#: CREATE INDEX over the loaded rows costs a fraction of keeping the btree on
#: ``term`` up to date row by row while they are written (issue #34).
POSTINGS_INDEXES = _M004_INDEXES

MIGRATIONS: list[Callable[[Connection[TupleRow]], None]] = [
    m001_initial,
    m002_segment_prose,
    m003_postings,
    m004_root_access,
]
SCHEMA_VERSION = len(MIGRATIONS)


def one(row: TupleRow | None) -> TupleRow:
    """The row a one-row statement (``count(*)``, ``to_regclass``) returns."""
    if row is None:
        raise LookupError("the statement returned no row")
    return row


def version(conn: Connection[TupleRow]) -> int:
    """Migrations applied (0: no docindex schema here)."""
    row = one(conn.execute("SELECT to_regclass('docindex_migrations')").fetchone())
    if row[0] is None:
        return 0
    count = conn.execute("SELECT count(*) FROM docindex_migrations").fetchone()
    return int(one(count)[0])


def foreign(conn: Connection[TupleRow]) -> bool:
    """True when the schema holds tables of another application named like ours."""
    row = conn.execute(
        "SELECT to_regclass('documents') IS NOT NULL "
        "AND to_regclass('docindex_migrations') IS NULL"
    ).fetchone()
    return bool(one(row)[0])


def migrate(conn: Connection[TupleRow]) -> list[str]:
    """Apply pending migrations (autocommit connection); the names applied now."""
    ran: list[str] = []
    conn.execute("BEGIN")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS docindex_migrations "
            "(name text PRIMARY KEY, applied_at double precision NOT NULL)"
        )
        done = {r[0] for r in conn.execute("SELECT name FROM docindex_migrations")}
        for fn in MIGRATIONS:
            if fn.__name__ in done:
                continue
            fn(conn)
            conn.execute(
                "INSERT INTO docindex_migrations (name, applied_at) VALUES (%s, %s)",
                (fn.__name__, time.time()),
            )
            ran.append(fn.__name__)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return ran
