"""Readers on a hot standby (issue #48), against real servers.

The test starts a primary and a standby made from it with ``pg_basebackup
-R`` (``pgcluster.standby``), waits until the standby has replayed the
primary's last commit, and runs every reading command against it: each gives
the primary's answer. A writing command there stops in one line naming the
primary. ``[db] read_url`` sends reads to the standby, writes to the primary,
and keeps answering while the primary is down.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pgcluster
import pytest
from click.testing import CliRunner, Result
from conftest import _pg_unavailable, write_tree

from docindex.cli.main import cli

DOCS = {
    "guide/rate-limits.md": "---\ntags: [gateway]\n---\n# Rate limiting\n\nThe "
    "limit-req plugin limits the request rate with a leaky bucket.\n\n## Redis\n\n"
    "Share counters in Redis so every node sees the same rate.\n",
    "guide/auth.md": "# Authentication\n\nKey auth and basic auth plugins check "
    "credentials. Anonymous consumers get a rate limit.\n",
    "ops/deploy.md": "# Deploying\n\nRun the gateway in containers; scale nodes "
    "horizontally. Redis keeps shared state.\n",
    "zh/限流.md": "# 限流插件\n\n限流插件使用漏桶算法限制请求速率。\n",
}
#: A statement in the server's log (simple, or extended protocol: "execute").
_LOGGED = re.compile(r"LOG:  (?:statement|execute [^:]*): (.*)")
#: The keys that differ between two servers answering alike.
VOLATILE = {"took_ms", "db", "index"}


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[pgcluster.Server, pgcluster.Server]]:
    """A primary of this module's own and a hot standby of it."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _pg_unavailable("psycopg not installed: pip install 'docindex-cli[postgres]'")
    bin_dir = pgcluster.binaries()
    if bin_dir is None:
        _pg_unavailable(pgcluster.MISSING)
    assert bin_dir is not None
    with (
        pgcluster.server(bin_dir) as primary,
        # every statement the standby runs is logged: the reading path's are read
        pgcluster.standby(primary, options_more="-c log_statement=all") as standby,
    ):
        yield primary, standby


def invoke(args: list[str], **env: str) -> Result:
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        return CliRunner().invoke(cli, args)


def _on(server: pgcluster.Server, schema_url: str) -> str:
    """``schema_url`` (on the primary) as the same schema on ``server``."""
    return schema_url.replace(f":{schema_url.split(':')[3].split('/')[0]}/",
                              f":{server.port}/")  # fmt: skip


def _stable(value: Any) -> Any:
    """A JSON answer without what differs between two servers answering alike."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


READING = [
    ["query", "rate limit"],
    ["query", "redis nodes", "--mode", "lexical"],
    ["query", "shared state of the gateway", "--mode", "semantic"],
    ["query", "auth plugins", "--mode", "auto", "--explain"],
    ["query", "redis", "--files", "--path", "guide/"],
    ["query", "限流"],
    ["stats"],
    ["list"],
    ["roots"],
    ["outline", "guide/rate-limits.md"],
    ["section", "guide/rate-limits.md", "Redis"],
    ["show", "guide/rate-limits.md:9", "--context", "1"],
    ["related", "guide/rate-limits.md"],
    ["skipped"],
]


def test_every_reading_command_answers_on_the_standby_as_on_the_primary(
    tmp_path: Path, pair: tuple[pgcluster.Server, pgcluster.Server]
) -> None:
    primary, standby = pair
    docs = write_tree(tmp_path / "docs", DOCS)
    db = pgcluster.new_schema(primary.url)
    replica = _on(standby, db)
    assert invoke(["scan", str(docs), "--db", db, "-q"]).exit_code == 0
    pgcluster.caught_up(primary.url, standby.url)
    log = standby.base / "log"
    start = log.stat().st_size
    for args in READING:
        answers = []
        for url in (db, replica):
            got = invoke([*args, "--db", url, "--json"])
            assert got.exit_code == 0, (args, got.output)
            answers.append(_stable(json.loads(got.stdout)))
        if args == ["roots"]:  # which roots a scan reads: no scan reads a replica
            assert (answers[0]["replica"], answers[1]["replica"]) == (False, True)
            for answer in answers:
                del answer["replica"]
                for root in answer["roots"]:
                    del root["accepted"]
        assert answers[0] == answers[1], args
    # the primary changes; once replayed, the standby answers the new state
    (docs / "ops" / "scale.md").write_text("# Scaling\n\nAdd redis replicas.\n")
    assert invoke(["scan", str(docs), "--db", db, "-q"]).exit_code == 0
    pgcluster.caught_up(primary.url, standby.url)
    batch = tmp_path / "queries.txt"
    batch.write_text("redis replicas\nrate limit\n")
    for args in (["query", "--queries", str(batch)], ["export"]):
        out = [invoke([*args, "--db", url]) for url in (db, replica)]
        assert out[0].exit_code == out[1].exit_code == 0, args
        lines = [[_stable(json.loads(x)) for x in o.stdout.splitlines()] for o in out]
        assert lines[0] == lines[1], args
    assert "scale.md" in out[1].stdout
    # What the reading commands ran on the standby: reads and session settings,
    # no lock, no temporary table, no write (which a standby would refuse).
    with log.open(encoding="utf-8", errors="replace") as fh:
        fh.seek(start)
        ran = [m[1] for line in fh if (m := _LOGGED.search(line))]
    assert len(ran) > 100
    for statement in ran:
        lowered = statement.lower()
        assert "advisory" not in lowered and " temp" not in lowered, statement
        assert not lowered.startswith(("lock", "insert", "update", "delete")), statement


def test_mcp_answers_from_the_standby(
    tmp_path: Path, pair: tuple[pgcluster.Server, pgcluster.Server]
) -> None:
    primary, standby = pair
    db = pgcluster.new_schema(primary.url)
    assert invoke(["scan", str(write_tree(tmp_path / "d", DOCS)), "--db", db,
                   "-q"]).exit_code == 0  # fmt: skip
    pgcluster.caught_up(primary.url, standby.url)
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "doc_query", "arguments": {"query": "leaky bucket", "top_k": 1}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "doc_stats", "arguments": {}}},
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    proc = subprocess.run(
        [sys.executable, "-m", "docindex", "mcp", "--db", _on(standby, db)],
        input="".join(json.dumps(x) + "\n" for x in lines), capture_output=True,
        text=True, timeout=120, env=env,
    )  # fmt: skip
    replies = {r.get("id"): r for r in map(json.loads, proc.stdout.splitlines())}
    for i in (1, 2):
        assert replies[i]["result"]["isError"] is False, proc.stderr
    assert "rate-limits.md" in replies[1]["result"]["content"][0]["text"]


def test_a_writing_command_on_the_standby_names_the_primary(
    tmp_path: Path, pair: tuple[pgcluster.Server, pgcluster.Server]
) -> None:
    import psycopg

    primary, standby = pair
    docs = write_tree(tmp_path / "docs", DOCS)
    db = pgcluster.new_schema(primary.url)
    replica = _on(standby, db)
    assert invoke(["scan", str(docs), "--db", db, "-q"]).exit_code == 0
    export = tmp_path / "i.ndjson"
    export.write_text(invoke(["export", "--db", db]).stdout)
    empty = _on(standby, pgcluster.new_schema(primary.url))
    role = "rr_" + uuid.uuid4().hex[:8]
    with psycopg.connect(primary.url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw pw'")
        schema = db.split("search_path%3D")[1]
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
    try:
        pgcluster.caught_up(primary.url, standby.url)
        writing = [
            ["scan", str(docs)], ["reindex"], ["vacuum"],
            ["roots", "add", str(write_tree(tmp_path / "more", {"m.md": "# M\n"}))],
            ["roots", "remove", str(docs)], ["roots", "grant", "docs", role],
            ["import", str(export)],
        ]  # fmt: skip
        for args in writing:
            into = empty if args[0] == "import" else replica
            got = invoke(args, DOCINDEX_DB=into)  # no --db: no password warning
            line = got.output.strip()
            assert got.exit_code == 1, (args, got.output)
            assert "\n" not in line, (args, line)
            assert "read-only replica" in line, (args, line)
            # the superuser sees the WAL receiver: host and port of the primary
            assert f"primary at 127.0.0.1:{primary.port}" in line, (args, line)
            assert pgcluster.PASSWORD not in line
        # a role that may not see the WAL receiver: where the last scan wrote
        plain = pgcluster.as_role(replica, role, "pw pw")
        got = invoke(["scan", str(docs)], DOCINDEX_DB=plain)
        assert got.exit_code == 1
        assert f"last scan wrote through postgresql://postgres:***@127.0.0.1:" \
               f"{primary.port}/" in got.output  # fmt: skip
        watch = subprocess.run(
            [sys.executable, "-m", "docindex", "watch", "--db", replica],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "DOCINDEX_WATCHER": "off"},
        )  # fmt: skip
        assert watch.returncode == 1, watch.stderr
        assert "read-only replica" in watch.stderr
        # nothing changed on the primary's side either
        assert invoke(["stats", "--db", db, "--json"]).exit_code == 0
        assert (
            json.loads(invoke(["roots", "--db", db, "--json"]).stdout)["roots"][0][
                "grants"
            ]
            == []
        )
    finally:
        with psycopg.connect(primary.url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_grants_hold_on_the_standby(
    tmp_path: Path, pair: tuple[pgcluster.Server, pgcluster.Server]
) -> None:
    """The policies and grants replicate: a reader of the standby sees no row
    of a root it was not granted, through docindex or its own SQL."""
    import psycopg

    primary, standby = pair
    db = pgcluster.new_schema(primary.url)
    open_root = write_tree(tmp_path / "open", DOCS)
    closed = write_tree(tmp_path / "closed", {"pay.md": "# Pay\n\nwombatpay bands\n"})
    role, other = "sr_" + uuid.uuid4().hex[:8], "so_" + uuid.uuid4().hex[:8]
    schema = db.split("search_path%3D")[1]
    with psycopg.connect(primary.url, autocommit=True) as conn:
        for name in (role, other):
            conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'pw pw'")
    try:
        for args in (["scan", str(open_root), "-q"], ["roots", "add", str(closed)],
                     ["roots", "grant", "closed", other], ["scan", "-q"]):  # fmt: skip
            assert invoke([*args, "--db", db]).exit_code == 0, args
        with psycopg.connect(primary.url, autocommit=True) as conn:
            for name in (role, other):
                conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {name}")
                conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {name}")
        pgcluster.caught_up(primary.url, standby.url)
        reader = pgcluster.as_role(_on(standby, db), role, "pw pw")
        granted = pgcluster.as_role(_on(standby, db), other, "pw pw")
        got = json.loads(
            invoke(["query", "wombatpay", "--db", reader, "--json"]).stdout
        )
        assert got["total"] == 0
        got = json.loads(
            invoke(["query", "wombatpay", "--db", granted, "--json"]).stdout
        )
        assert got["total"] == 1
        with psycopg.connect(reader, autocommit=True) as conn:
            rows = conn.execute("SELECT count(*) FROM postings WHERE term LIKE "
                                "'wombat%'").fetchone()  # fmt: skip
            assert rows == (0,)
    finally:
        with psycopg.connect(primary.url, autocommit=True) as conn:
            for name in (role, other):
                conn.execute(f"DROP OWNED BY {name}")
                conn.execute(f"DROP ROLE {name}")


def test_read_url_reads_the_standby_and_answers_while_the_primary_is_down(
    tmp_path: Path, pair: tuple[pgcluster.Server, pgcluster.Server]
) -> None:
    primary, standby = pair
    docs = write_tree(tmp_path / "docs", DOCS)
    db = pgcluster.new_schema(primary.url)
    config = tmp_path / "docindex.toml"
    config.write_text(
        f'[db]\nurl = "{db}"\nread_url = "{_on(standby, db)}"\n', encoding="utf-8"
    )
    config.chmod(0o600)
    env = {"DOCINDEX_CONFIG": str(config), "DOCINDEX_DB": ""}
    assert invoke(["scan", str(docs), "-q"], **env).exit_code == 0
    pgcluster.caught_up(primary.url, standby.url)
    shown = json.loads(invoke(["config", "--json"], **env).stdout)["db"]
    assert shown["read_path"] and f":{standby.port}/" in shown["read_path"]
    primary.stop()
    try:
        for args in (["query", "leaky bucket"], ["list"], ["stats"],
                     ["outline", "guide/rate-limits.md"]):  # fmt: skip
            got = invoke([*args, "--json"], **env)
            assert got.exit_code == 0, (args, got.output)
        hits = json.loads(invoke(["query", "leaky bucket", "--json"], **env).stdout)
        assert hits["hits"][0]["rel_path"] == "guide/rate-limits.md"
        down = invoke(["scan", "-q"], **env)
        assert down.exit_code == 1 and "cannot reach" in down.output
        # another index named by --db is read where it is
        other = invoke(["query", "leaky bucket", "--db", str(tmp_path / "x.db")], **env)
        assert other.exit_code == 1 and "no index" in other.output
    finally:
        primary.start()
