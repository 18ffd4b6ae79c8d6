"""The PostgreSQL index (issue #34), against a real server (conftest ``pg_url``).

Same answers as SQLite on the same files, selection by URL, masked
passwords, a read-only role, schema versions, concurrent writers, a killed
writer, and roots shared by two hosts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pgcluster
import pytest
from click.testing import CliRunner, Result
from conftest import write_tree

from docindex.cli.main import cli

pytestmark = pytest.mark.usefixtures("pg_server")

DOCS = {
    "guide/rate-limits.md": "# Rate limiting\n\nThe limit-req plugin limits the "
    "request rate with a leaky bucket.\n\n## Redis\n\nShare counters in Redis "
    "so every node sees the same rate.\n",
    "guide/auth.md": "---\ntags: [security, login]\nkeywords:\n  - Key Auth\n---\n"
    "# Authentication\n\nKey auth and "
    "basic auth plugins check credentials. Anonymous consumers get a rate limit.\n",
    "ops/deploy.md": "# Deploying\n\nRun the gateway in containers; scale nodes "
    "horizontally. Redis keeps shared state.\n",
    "zh/限流.md": "# 限流插件\n\n限流插件使用漏桶算法限制请求速率。\n",
    "notes.txt": "Plain notes about caching, rate windows and retries.\n",
}
QUERIES = [
    "rate limit", "redis", "auth plugins", "限流", '"rate limit" -anonymous',
    "+redis nodes", "containers scale", "nothing-matches-this", "what is key auth",
]  # fmt: skip


def invoke(args: list[str]) -> Result:
    """The CLI in-process; exceptions become exit codes and messages, as for users."""
    return CliRunner().invoke(cli, args)


def _corpus(base: Path) -> Path:
    return write_tree(base / "docs", DOCS)


def _hits(db: str, query: str, *extra: str) -> list[tuple[str, float]]:
    result = invoke(["query", query, "--db", db, "--json", "--top", "10", *extra])
    assert result.exit_code == 0, result.output
    return [
        (h["chunk_id"], round(h["score"], 6)) for h in json.loads(result.stdout)["hits"]
    ]


def test_same_top_ten_as_sqlite(tmp_path: Path, pg_url: str) -> None:
    docs = _corpus(tmp_path)
    sqlite = str(tmp_path / "lite" / "index.db")
    assert invoke(["scan", str(docs), "--db", sqlite, "-q"]).exit_code == 0
    assert invoke(["scan", str(docs), "--db", pg_url, "-q"]).exit_code == 0
    for query in QUERIES:
        for mode in ("auto", "lexical", "semantic"):
            assert _hits(pg_url, query, "--mode", mode) == _hits(
                sqlite, query, "--mode", mode
            ), (query, mode)
    assert _hits(pg_url, "rate", "--files") == _hits(sqlite, "rate", "--files")
    assert _hits(pg_url, "rate", "--path", "guide/") == _hits(
        sqlite, "rate", "--path", "guide/"
    )
    assert _hits(pg_url, "auth", "--where", "tags=security") == _hits(
        sqlite, "auth", "--where", "tags=security"
    )
    login = _hits(pg_url, "auth", "--where", "tags=login")  # one row per listed tag
    assert login and login == _hits(sqlite, "auth", "--where", "tags=login")
    for query in [*QUERIES, "rate OR redis", "rate redis -auth"]:  # the hits' totals
        for extra in ((), ("--files",), ("--path", "guide/")):
            assert _total(pg_url, query, *extra) == _total(sqlite, query, *extra), (
                query,
                extra,
            )


def _total(db: str, query: str, *extra: str) -> int:
    result = invoke(["query", query, "--db", db, "--json", *extra])
    assert result.exit_code == 0, result.output
    return int(json.loads(result.stdout)["total"])


def test_a_scan_in_worker_processes_answers_as_sqlite(
    tmp_path: Path, pg_url: str
) -> None:
    """1,100 files: the scan's workers count the terms and render the
    postings, the writer sends them in batches, two of them from its thread
    while it collects the next (issue #34); the answers, the totals and
    the term counts are SQLite's."""
    words = ["gateway", "limit", "redis", "consumer", "route", "plugin", "限流", "认证"]
    files = {
        f"d{i:04}.md": f"# Page {i}\n\n## {words[i % 8]} notes\n\n"
        + " ".join(words[(i + k) % 8] for k in range(i % 5 + 3))
        + f" and some words about item {i}.\n\n## More\n\nA second section {i}.\n"
        for i in range(1100)
    }
    docs = write_tree(tmp_path / "many", files)
    sqlite = str(tmp_path / "lite" / "index.db")
    assert invoke(["scan", str(docs), "--db", sqlite, "-q"]).exit_code == 0
    assert invoke(["scan", str(docs), "--db", pg_url, "-q"]).exit_code == 0
    for query in ("gateway limit", "redis consumer notes", "限流 认证", "item 7"):
        for extra in ((), ("--files",)):
            lite = invoke(["query", query, "--db", sqlite, "--json", *extra])
            pg = invoke(["query", query, "--db", pg_url, "--json", *extra])
            a, b = json.loads(lite.stdout), json.loads(pg.stdout)
            assert a["hits"] and a["total"] == b["total"], (query, extra)
            assert [h["chunk_id"] for h in a["hits"]] == [
                h["chunk_id"] for h in b["hits"]
            ], (query, extra)
    assert _consistent(pg_url)[0] == 1100


def test_every_reading_command_works(tmp_path: Path, pg_url: str) -> None:
    docs = _corpus(tmp_path)
    assert invoke(["scan", str(docs), "--db", pg_url, "-q"]).exit_code == 0
    first = json.loads(invoke(["query", "rate", "--db", pg_url, "--json", "--top",
                               "1"]).stdout)  # fmt: skip
    assert first["next_cursor"]
    page2 = invoke(["query", "rate", "--db", pg_url, "--json", "--top", "1",
                    "--cursor", first["next_cursor"]])  # fmt: skip
    assert page2.exit_code == 0, page2.output
    assert (
        json.loads(page2.stdout)["hits"][0]["chunk_id"] != first["hits"][0]["chunk_id"]
    )
    chunk = first["hits"][0]["chunk_id"]
    for args in (
        ["show", chunk], ["outline", "guide/rate-limits.md"],
        ["section", "guide/rate-limits.md", "Redis"], ["list"],
        ["related", "guide/rate-limits.md"], ["stats"], ["skipped"], ["roots"],
        ["query", "redis", "--explain"], ["vacuum"],
    ):  # fmt: skip
        result = invoke([*args, "--db", pg_url, "--json"])
        assert result.exit_code == 0, (args, result.output)
    stats = json.loads(invoke(["stats", "--db", pg_url, "--json"]).stdout)
    assert stats["documents"] == len(DOCS)


def test_rescan_edit_remove_and_full_reindex(tmp_path: Path, pg_url: str) -> None:
    docs = _corpus(tmp_path)
    invoke(["scan", str(docs), "--db", pg_url, "-q"])
    again = json.loads(invoke(["scan", str(docs), "--db", pg_url, "--json"]).stdout)
    assert again["unchanged"] == len(DOCS) and again["indexed"] == 0
    (docs / "ops" / "deploy.md").write_text("# Deploying\n\nUse zeppelins.\n")
    (docs / "notes.txt").unlink()
    edit = json.loads(invoke(["scan", str(docs), "--db", pg_url, "--json"]).stdout)
    assert edit["updated"] == 1 and edit["removed"] == 1
    assert _hits(pg_url, "zeppelins")[0][0].startswith("ops/deploy.md")
    assert _hits(pg_url, "caching") == []
    full = invoke(["reindex", "--full", "--db", pg_url, "--json"])
    assert full.exit_code == 0, full.output
    stats = json.loads(invoke(["stats", "--db", pg_url, "--json"]).stdout)
    assert stats["documents"] == len(DOCS) - 1
    sqlite = str(tmp_path / "lite.db")
    invoke(["scan", str(docs), "--db", sqlite, "-q"])
    for query in QUERIES:  # idf and totals stay right through edits and deletes
        assert _hits(pg_url, query) == _hits(sqlite, query), query


def test_url_from_environment_and_config_file(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _corpus(tmp_path)
    monkeypatch.setenv("DOCINDEX_DB", pg_url)
    assert invoke(["scan", str(docs), "-q"]).exit_code == 0
    assert _hits(pg_url, "redis")
    monkeypatch.delenv("DOCINDEX_DB")
    conf = tmp_path / "team.toml"
    conf.write_text(f'[db]\nurl = "{pg_url}"\n')
    monkeypatch.setenv("DOCINDEX_CONFIG", str(conf))
    monkeypatch.chdir(tmp_path)
    result = invoke(["query", "redis", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["hits"]


def test_password_is_masked_everywhere(
    tmp_path: Path, pg_url: str, pg_server: str
) -> None:
    import psycopg

    docs = _corpus(tmp_path)
    role = "secretive_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD 'hunter2pw'")
    url = pgcluster.as_role(pg_url, role, "hunter2pw")
    outputs = [
        invoke(["scan", str(docs), "--db", url, "--json"]),
        invoke(["stats", "--db", url, "--json"]),
        invoke(["config", "--db", url]),
        invoke(["roots", "--db", url, "--json"]),
        invoke(
            ["query", "x", "--db", re.sub(r":\d+/", ":1/", url, count=1), "--json"]
        ),  # unreachable: nothing listens on port 1
        invoke(["stats", "--db", url.replace("hunter2pw", "wrongpw")]),
    ]
    for result in outputs:
        assert "hunter2pw" not in result.output and "wrongpw" not in result.output
    stats = json.loads(outputs[1].stdout)
    assert f"{role}:***@" in stats["db"]
    assert outputs[4].exit_code == 1 and "cannot reach index" in outputs[4].output


def test_read_only_role_reads_but_cannot_write(
    tmp_path: Path, pg_url: str, pg_server: str
) -> None:
    import psycopg

    docs = _corpus(tmp_path)
    invoke(["scan", str(docs), "--db", pg_url, "-q"])
    schema = pg_url.split("search_path%3D")[1]
    role = "reader_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_server, autocommit=True) as conn:
        # the reader GRANTs of the README's "Share an index with a team"
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'r3ader pw'")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
    url = pgcluster.as_role(pg_url, role, "r3ader pw")
    assert _hits(url, "redis")
    assert invoke(["outline", "guide/auth.md", "--db", url]).exit_code == 0
    (docs / "new.md").write_text("# New\n\nfresh text\n")
    for args in (["scan", str(docs)], ["reindex", "--full"], ["vacuum"]):
        result = invoke([*args, "--db", url])
        assert result.exit_code == 1, (args, result.output)
        assert "may only read the index" in result.output, result.output
        assert "Traceback" not in result.output


def test_newer_schema_is_refused_with_upgrade_command(
    tmp_path: Path, pg_url: str
) -> None:
    import psycopg

    invoke(["scan", str(_corpus(tmp_path)), "--db", pg_url, "-q"])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO docindex_migrations VALUES ('m999_future', 0)")
    result = invoke(["query", "redis", "--db", pg_url])
    assert result.exit_code == 1
    assert "newer docindex" in result.output and "pip install -U" in result.output


# An index of schema 4 as schema 3 wrote it (issue #48): no grants, no
# policies, no root ids beside the documents', ``vocab`` folded per term, the
# roots in the settings row and their pins in ``root_pins``.
_AS_M003 = """
DROP POLICY docindex_root_access ON roots;
DROP POLICY docindex_root_access ON root_paths;
DROP POLICY docindex_root_access ON documents;
DROP POLICY docindex_root_access ON segments;
DROP POLICY docindex_root_access ON facets;
DROP POLICY docindex_root_access ON postings;
DROP POLICY docindex_root_access ON skipped;
DROP POLICY docindex_root_access ON vocab;
ALTER TABLE roots DISABLE ROW LEVEL SECURITY;
ALTER TABLE root_paths DISABLE ROW LEVEL SECURITY;
ALTER TABLE documents DISABLE ROW LEVEL SECURITY;
ALTER TABLE segments DISABLE ROW LEVEL SECURITY;
ALTER TABLE facets DISABLE ROW LEVEL SECURITY;
ALTER TABLE postings DISABLE ROW LEVEL SECURITY;
ALTER TABLE skipped DISABLE ROW LEVEL SECURITY;
ALTER TABLE vocab DISABLE ROW LEVEL SECURITY;
DROP TABLE root_grants;
DROP FUNCTION docindex_visible_roots(name);
DROP FUNCTION docindex_hidden_roots(name);
INSERT INTO docindex_meta (key, value) SELECT 'root_pins', json_object_agg(path,
    pin)::text FROM root_paths WHERE pin IS NOT NULL HAVING count(*) > 0;
UPDATE docindex_meta SET value = (value::jsonb || jsonb_build_object('roots',
    (SELECT jsonb_agg(path ORDER BY root_id) FROM root_paths)))::text
    WHERE key = 'settings';
ALTER TABLE root_paths DROP COLUMN pin;
ALTER TABLE segments DROP COLUMN root_id;
ALTER TABLE facets DROP COLUMN root_id;
CREATE TABLE folded AS SELECT term, sum(segs) AS segs, sum(docs) AS docs
    FROM vocab GROUP BY term;
DELETE FROM vocab;
ALTER TABLE vocab DROP COLUMN root_id;
INSERT INTO vocab SELECT * FROM folded;
DROP TABLE folded;
DROP INDEX postings_term;
DROP INDEX postings_doc;
ALTER TABLE postings DROP COLUMN root_id;
CREATE INDEX postings_term ON postings (term, doc) INCLUDE (fld, body, n, dlen);
CREATE INDEX postings_doc ON postings (doc);
DELETE FROM docindex_migrations WHERE name = 'm004_root_access'
"""
_AS_M002 = (
    _AS_M003
    + """;
ALTER TABLE segments ADD COLUMN tf jsonb;
UPDATE segments s SET tf = coalesce((SELECT jsonb_object_agg(p.term, p.hits[k])
    FROM documents d JOIN postings p ON p.doc = d.id
    CROSS JOIN LATERAL generate_subscripts(p.segs, 1) k
    WHERE d.id = s.doc_id AND p.segs[k] = s.id - d.first_segment), '{}');
ALTER TABLE documents ADD COLUMN ftf jsonb;
UPDATE documents d SET ftf = coalesce((SELECT jsonb_object_agg(p.term, p.fld)
    FROM postings p WHERE p.doc = d.id AND p.fld <> 0), '{}');
CREATE INDEX segments_tf ON segments USING gin (tf);
CREATE INDEX documents_ftf ON documents USING gin (ftf);
DROP TABLE postings;
ALTER TABLE documents DROP COLUMN lens;
DELETE FROM docindex_migrations WHERE name = 'm003_postings'
"""
)


def test_index_of_schema_2_migrates_to_postings(tmp_path: Path, pg_url: str) -> None:
    """m003 fills the postings of an index written with jsonb term frequencies
    (schema 2, rebuilt here from a new index) exactly as a scan writes them."""
    import psycopg

    invoke(["scan", str(_corpus(tmp_path)), "--db", pg_url, "-q"])
    before = {q: _hits(pg_url, q) for q in QUERIES}
    table = "SELECT * FROM postings ORDER BY term, doc"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        postings = conn.execute(table).fetchall()
        with conn.transaction():
            for statement in _AS_M002.split(";"):
                conn.execute(statement)
    result = invoke(["scan", str(tmp_path / "docs"), "--db", pg_url, "-q"])
    assert result.exit_code == 0, result.output
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute(table).fetchall() == postings
        names = {
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
            )
        }
        assert {"postings_term", "postings_doc"} <= names
        assert "segments_tf" not in names
    assert {q: _hits(pg_url, q) for q in QUERIES} == before


def test_index_of_schema_3_migrates_to_per_root_rows(
    tmp_path: Path, pg_url: str
) -> None:
    """m004 (issue #48) gives every row its root and counts ``vocab`` per
    root: the owner's answers, raw scores and counts are those of schema 3;
    the settings row stops naming roots and the pins move to their rows."""
    import psycopg

    docs = _corpus(tmp_path)
    more = write_tree(tmp_path / "more", {"m.md": "# More\n\nredis rate notes\n"})
    assert invoke(["scan", str(docs), "--db", pg_url, "-q"]).exit_code == 0
    added = invoke(["scan", "--root", str(more), "--db", pg_url, "-q"])
    assert added.exit_code == 0, added.output
    before = {q: _raw(pg_url, q) for q in QUERIES}
    folded = (
        "SELECT term, sum(segs), sum(docs) FROM vocab GROUP BY term "
        "HAVING sum(segs) <> 0 OR sum(docs) <> 0 ORDER BY term"
    )
    with psycopg.connect(pg_url, autocommit=True) as conn:
        counts = conn.execute(folded).fetchall()
        with conn.transaction():
            for statement in _AS_M003.split(";"):
                conn.execute(statement)
        settings = conn.execute(
            "SELECT key, value FROM docindex_meta WHERE key IN ('settings', "
            "'root_pins') ORDER BY key"
        ).fetchall()
    assert [k for k, _ in settings] == ["root_pins", "settings"]
    assert str(more) in settings[0][1] and str(more) in settings[1][1]
    outdated = invoke(["query", "redis", "--db", pg_url])
    assert outdated.exit_code == 1
    assert "must be upgraded by the owner of its tables" in outdated.output
    result = invoke(["scan", str(docs), "--db", pg_url, "-q"])
    assert result.exit_code == 0, result.output
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute(folded).fetchall() == counts
        per_root = conn.execute(
            "SELECT count(DISTINCT root_id) FROM vocab WHERE term = ' rows'"
        ).fetchone()
        assert per_root == (2,)
        meta = dict(conn.execute("SELECT key, value FROM docindex_meta").fetchall())
        assert "root_pins" not in meta and "roots" not in json.loads(meta["settings"])
        pins = conn.execute("SELECT count(pin) FROM root_paths").fetchone()
        assert pins == (2,)
        for table in ("segments", "facets", "postings"):
            orphans = conn.execute(
                f"SELECT count(*) FROM {table} t JOIN documents d ON d.id = "
                f"t.{'doc' if table == 'postings' else 'doc_id'} "
                "WHERE t.root_id <> d.root_id"
            ).fetchone()
            assert orphans == (0,), table
    assert {q: _raw(pg_url, q) for q in QUERIES} == before
    roots = invoke(["roots", "--db", pg_url, "--json"])
    assert [r["path"] for r in json.loads(roots.stdout)["roots"]] == [
        str(docs),
        str(more),
    ]


def _raw(db: str, query: str) -> tuple[int, list[tuple[str, float | None]]]:
    """The total and each hit's chunk and raw bm25 (not relative to the best)."""
    result = invoke(["query", query, "--db", db, "--json", "--explain"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    return out["total"], [
        (h["chunk_id"], h["explain"].get("lexical", {}).get("raw")) for h in out["hits"]
    ]


def _btrees(url: str) -> set[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = 'postings'"
        )
        return {str(r[0]) for r in rows}


def test_postings_btrees_come_after_the_first_load(tmp_path: Path, pg_url: str) -> None:
    """A new index gets its postings btrees when its first scan ends; a writer
    that finds them missing (that scan was killed) builds them."""
    import psycopg

    docs = _corpus(tmp_path)
    assert invoke(["scan", str(docs), "--db", pg_url, "-q"]).exit_code == 0
    assert _btrees(pg_url) == {"postings_term", "postings_doc"}
    before = _hits(pg_url, "rate limit")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP INDEX postings_term, postings_doc")
    assert _hits(pg_url, "rate limit") == before  # a reader does not build them
    assert _btrees(pg_url) == set()
    assert invoke(["scan", str(docs), "--db", pg_url, "-q"]).exit_code == 0
    assert _btrees(pg_url) == {"postings_term", "postings_doc"}


def test_missing_btrees_are_named_to_a_writer_that_cannot_build_them(
    tmp_path: Path, pg_server: str, pg_url: str
) -> None:
    """A first scan stopped before its btrees were built, then a writer that
    does not own the tables: scan and stats say what to run; the owner's
    vacuum builds them."""
    import psycopg

    docs = _corpus(tmp_path)
    assert invoke(["scan", str(docs), "--db", pg_url, "-q"]).exit_code == 0
    schema = pg_url.split("search_path%3D")[1]
    role = "writer_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_server, autocommit=True) as conn:
        # the writer GRANTs of the README's "Share an index with a team"
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'wr1ter pw'")
        conn.execute(f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {role}")
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} "
            f"TO {role}"
        )
        conn.execute(
            f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}"
        )
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP INDEX postings_term, postings_doc")  # as a stopped scan
    writer = pgcluster.as_role(pg_url, role, "wr1ter pw")
    (docs / "new.md").write_text("# New\n\nfresh words\n")
    result = invoke(["scan", str(docs), "--db", writer])
    assert result.exit_code == 0, result.output
    assert "postings btrees are missing" in result.output
    assert "(role postgres) runs `docindex vacuum`" in result.output
    assert _hits(writer, "fresh words")
    notices = json.loads(invoke(["stats", "--db", writer, "--json"]).stdout)["notices"]
    assert len(notices) == 1 and "role postgres" in notices[0]
    assert "postings btrees" in invoke(["stats", "--db", writer]).output
    assert invoke(["vacuum", "--db", pg_url]).exit_code == 0  # the owner
    assert (
        json.loads(invoke(["stats", "--db", writer, "--json"]).stdout)["notices"] == []
    )
    _consistent(pg_url)


def test_missing_driver_is_one_line_with_install_command(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from docindex.cli.main import cli\n"
        "cli(['stats', '--db', 'postgresql://u@127.0.0.1:1/x'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0, out.stderr
    assert "pip install 'docindex-cli[postgres]'" in out.stderr


def _scan_proc(root: Path, url: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.Popen(
        [sys.executable, "-m", "docindex", "scan", str(root), "--db", url, "-q"],
        env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _consistent(url: str) -> tuple[int, int]:
    """(documents, segments), asserting no duplicates and no orphans."""
    import psycopg

    with psycopg.connect(url) as conn:
        dup = conn.execute(
            "SELECT count(*) FROM (SELECT root_id, rel_path FROM documents "
            "GROUP BY 1, 2 HAVING count(*) > 1) x"
        ).fetchone()[0]
        assert dup == 0
        docs, segs = conn.execute(
            "SELECT count(*), coalesce(sum(n_segments), 0) FROM documents"
        ).fetchone()
        assert conn.execute("SELECT count(*) FROM segments").fetchone()[0] == segs
        assert (
            conn.execute(
                "SELECT count(*) FROM segments s LEFT JOIN documents d ON d.id = s.doc_id "
                "WHERE d.id IS NULL OR s.id < d.first_segment "
                "OR s.id >= d.first_segment + d.n_segments"
            ).fetchone()[0]
            == 0
        )
        vocab = conn.execute(
            "SELECT sum(segs), sum(docs) FROM vocab WHERE term = ' rows'"
        ).fetchone()
        assert (int(vocab[1] or 0), int(vocab[0] or 0)) == (docs, segs)
        drift = conn.execute(
            "SELECT count(*) FROM (SELECT term, sum(segs) AS segs, sum(docs) AS docs "
            "FROM vocab WHERE term NOT LIKE ' %' GROUP BY term) v FULL JOIN ("
            "SELECT term, sum(n) AS segs, count(*) FILTER (WHERE fld <> 0 OR body > 0) "
            "AS docs FROM postings GROUP BY term) p USING (term) "
            "WHERE coalesce(v.segs, 0) <> coalesce(p.segs, 0) "
            "OR coalesce(v.docs, 0) <> coalesce(p.docs, 0)"
        ).fetchone()[0]
        assert drift == 0  # every term's counts are its postings'
        return int(docs), int(segs)


def test_two_writers_of_different_roots_at_once(tmp_path: Path, pg_url: str) -> None:
    a = write_tree(tmp_path / "a", {"a.md": "# A\n\nalpha\n"})
    b = write_tree(tmp_path / "b", {"b.md": "# B\n\nbeta\n"})
    invoke(["scan", str(a), "--db", pg_url, "-q"])
    assert invoke(["scan", "--root", str(b), "--db", pg_url, "-q"]).exit_code == 0
    write_tree(a, {f"a{i}.md": f"# A {i}\n\nalpha {i} words\n" for i in range(60)})
    write_tree(b, {f"b{i}.md": f"# B {i}\n\nbeta {i} words\n" for i in range(60)})
    procs = [_scan_proc(b, pg_url), _scan_proc(a, pg_url)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert _consistent(pg_url)[0] == 122
    assert len(_hits(pg_url, "alpha")) == 10 and len(_hits(pg_url, "beta")) == 10


def test_two_writers_of_the_same_files_index_each_once(
    tmp_path: Path, pg_url: str
) -> None:
    root = write_tree(tmp_path / "same", {
        f"d{i}.md": f"# Doc {i}\n\nshared words {i} and more\n" for i in range(120)
    })  # fmt: skip
    procs = [_scan_proc(root, pg_url), _scan_proc(root, pg_url)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert _consistent(pg_url)[0] == 120
    assert len(_hits(pg_url, '"shared words 7"')) >= 1


def _document(store: Any, root_id: int, rel_path: str, text: str) -> Any:
    """A ``NewDocument`` made by the scan's own stages."""
    from docindex.config import Config
    from docindex.ingest.analyze import analyze_segments, document_fields
    from docindex.ingest.segment import segment_document
    from docindex.models import Extracted, Unit
    from docindex.store import NewDocument, compress_body, encode_segments
    from docindex.text.fields import title_text

    cfg = Config(roots=("/r",))
    body, segments = segment_document(
        Extracted(units=(Unit(text=text, markdown=True),), kind="md"), rel_path, 200
    )
    title = title_text(None, rel_path)
    fts, vectors = analyze_segments(cfg, None, title, segments)
    return NewDocument(
        root_id=root_id, rel_path=rel_path, kind="md", title=None, size=len(text),
        mtime_ns=1, hash=text, body=compress_body(body),
        segments=encode_segments(segments, rel_path, body), fts=fts,
        vectors=vectors or (), meta={"team": "docs"},
        fields=document_fields(cfg, title, (s.heading_path for s in segments)),
    )  # fmt: skip


def test_a_second_writer_waits_and_its_copy_replaces_the_first(pg_url: str) -> None:
    """Writers take turns (issue #44): a second writer waits for the first's
    commit instead of meeting its rows halfway; then its copy of a file the
    first one wrote replaces it, and each file is there once."""
    import threading

    from docindex.store import open_index
    from docindex.store.location import ServerUrl

    url = ServerUrl(pg_url)
    done = threading.Event()

    def other_writer() -> None:
        with open_index(url, busy_timeout=30) as other:
            rid = other.root_id("/r")
            other.add_document(_document(other, rid, "a.md", "# A\n\ntheirs gamma\n"))
        done.set()

    with open_index(url, create=True) as mine:
        rid = mine.root_id("/r")
        with mine.atomic():
            kept = mine.add_document(
                _document(mine, rid, "a.md", "# A\n\nmine alpha\n")
            )
            mine.add_document(_document(mine, rid, "b.md", "# B\n\nmine beta\n"))
            thread = threading.Thread(target=other_writer)
            thread.start()
            assert not done.wait(1.0)  # it waits for this transaction
            assert mine.document(kept) is not None  # read in the transaction
        thread.join(30)
        assert done.is_set()
        assert mine.fingerprints(rid)["a.md"].hash == "# A\n\ntheirs gamma\n"
    _consistent(pg_url)
    assert [c for c, _ in _hits(pg_url, "alpha")] == []
    assert len(_hits(pg_url, "gamma")) == 1 and len(_hits(pg_url, "beta")) == 1


def test_killed_writer_leaves_a_consistent_index(tmp_path: Path, pg_url: str) -> None:
    root = write_tree(tmp_path / "big", {
        f"d{i}.md": f"# Doc {i}\n\n" + ("some words here. " * 200) for i in range(300)
    })  # fmt: skip
    invoke(["scan", str(_corpus(tmp_path)), "--db", pg_url, "-q"])
    before = _consistent(pg_url)
    proc = _scan_proc(root, pg_url, {"DOCINDEX_HOST": "killer"})
    time.sleep(2.5)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    after = _consistent(pg_url)
    assert after == before or after[0] == before[0] + 300


def test_two_hosts_share_roots_by_name(tmp_path: Path, pg_url: str) -> None:
    one = _corpus(tmp_path / "host1")
    two = tmp_path / "host2" / "mnt" / "docs"
    shutil.copytree(one, two)
    env = {"DOCINDEX_HOST": "h1"}
    for root, host in ((one, env), (two, {"DOCINDEX_HOST": "h2"})):
        proc = _scan_proc(root, pg_url, host)
        assert proc.communicate(timeout=60) and proc.returncode == 0
    assert _consistent(pg_url)[0] == len(DOCS)  # one set of documents
    out = subprocess.run(
        [sys.executable, "-m", "docindex", "query", "redis", "--db", pg_url, "--json"],
        env={**os.environ, "DOCINDEX_HOST": "h2"}, capture_output=True, text=True,
    )  # fmt: skip
    paths = [h["path"] for h in json.loads(out.stdout)["hits"]]
    assert paths and all(p.startswith(str(two)) for p in paths), paths


def test_export_import_across_engines_keeps_everything(
    tmp_path: Path, pg_url: str
) -> None:
    docs = _corpus(tmp_path)
    sqlite = str(tmp_path / "a.db")
    invoke(["scan", str(docs), "--db", sqlite, "-q"])
    dump = invoke(["export", "--db", sqlite])
    assert dump.exit_code == 0, dump.output
    (tmp_path / "dump.ndjson").write_text(dump.stdout, encoding="utf-8")
    loaded = invoke(["import", str(tmp_path / "dump.ndjson"), "--db", pg_url, "--json"])
    assert loaded.exit_code == 0, loaded.output
    assert json.loads(loaded.stdout)["documents"] == len(DOCS)
    assert _btrees(pg_url) == {"postings_term", "postings_doc"}
    assert invoke(["export", "--db", pg_url]).stdout == dump.stdout  # ids, vectors
    back = str(tmp_path / "b.db")
    result = CliRunner().invoke(cli, ["import", "-", "--db", back], input=dump.stdout)
    assert result.exit_code == 0, result.output
    for query in QUERIES:
        assert _hits(pg_url, query) == _hits(sqlite, query) == _hits(back, query)
    again = invoke(["import", str(tmp_path / "dump.ndjson"), "--db", pg_url])
    assert again.exit_code == 2 and "empty index" in again.output


def test_watch_keeps_a_server_index_current(tmp_path: Path, pg_url: str) -> None:
    docs = _corpus(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "docindex", "watch", "--root", str(docs), "--db", pg_url,
         "--debounce-ms", "50"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert "catch-up" in proc.stdout.readline()
        (docs / "zebra.md").write_text("# Zebra\n\nstripes everywhere\n")
        deadline = time.monotonic() + 20
        while not _hits(pg_url, "stripes") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _hits(pg_url, "stripes")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
