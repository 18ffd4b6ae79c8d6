"""A shared index deployed as a team deploys it (issue #44).

Against the real server of the test cluster, which logs in with scram-sha-256
passwords (``tests/pgcluster.py``): a password full of URL specials on every
command, the README's team SQL pasted verbatim before and after the first
scan, two parties with their own config folders and host names, two writers
at once, a server restart under ``watch`` and ``mcp``, hostile imports.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pgcluster
import pytest
from click.testing import CliRunner, Result
from conftest import write_tree

from docindex.cli.main import cli

pytestmark = pytest.mark.usefixtures("pg_server")

#: A password with every character a URL must encode, and a space.
PASSWORD = "p?#%@/ :&=w0rd"
README = Path(__file__).resolve().parents[1] / "README.md"
DOCS = {
    "guide/auth.md": "# Authentication\n\nKey auth checks credentials.\n\n"
    "## Tokens\n\nRotate the tokens every month.\n",
    "ops/deploy.md": "# Deploying\n\nRun the gateway in containers.\n",
}


def invoke(args: list[str], **env: str) -> Result:
    """The CLI in-process, as a user runs it (errors become exit codes)."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        return CliRunner().invoke(cli, args)


def _proc(args: list[str], env: dict[str, str] | None = None, **kw: Any) -> Any:
    return subprocess.Popen(
        [sys.executable, "-m", "docindex", *args],
        env={**os.environ, "DOCINDEX_WATCHER": "off", **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,
    )  # fmt: skip


@contextlib.contextmanager
def _database(server: str) -> Iterator[str]:
    """A database of its own (the README's SQL names roles and ``public``)."""
    import psycopg

    name = "team_" + uuid.uuid4().hex[:10]
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield re.sub(r"/postgres$", f"/{name}", server)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@contextlib.contextmanager
def _roles(server: str, *names: str) -> Iterator[None]:
    """Drop these (cluster-wide) roles afterwards, whatever they came to own."""
    import psycopg

    try:
        yield
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            for name in names:
                with contextlib.suppress(psycopg.Error):
                    conn.execute(f"DROP OWNED BY {name}")
                conn.execute(f"DROP ROLE IF EXISTS {name}")


def _readme_team_sql() -> str:
    """The SQL block of the README's team section, verbatim."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Share an index with a team", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```sql\n(.*?)```", section, re.DOTALL)
    assert found, "the team section has no SQL block"
    return found.group(1)


def _as(url: str, role: str, password: str) -> str:
    return pgcluster.as_role(url, role, password)


def _paths(result: Result) -> list[str]:
    return [d["rel_path"] for d in json.loads(result.stdout)["documents"]]


# -- setup that works as written --------------------------------------------------


def test_the_readme_team_sql_before_and_after_the_first_scan(
    tmp_path: Path, pg_server: str
) -> None:
    docs = write_tree(tmp_path / "docs", DOCS)
    sql = _readme_team_sql()
    import psycopg

    with _roles(pg_server, "docs_writer", "docs_reader"):
        # 1. A DBA pastes the SQL into a new database; the writer scans first.
        with _database(pg_server) as db:
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute(sql)
            writer = _as(db, "docs_writer", "writer-secret")
            reader = _as(db, "docs_reader", "reader-secret")
            assert invoke(["scan", str(docs), "--db", writer, "-q"]).exit_code == 0
            got = invoke(["query", "rotate tokens", "--db", reader, "--json"])
            assert got.exit_code == 0, got.output
            assert json.loads(got.stdout)["hits"][0]["rel_path"] == "guide/auth.md"
            for args in (["stats"], ["list"], ["roots"], ["outline", "guide/auth.md"]):
                assert invoke([*args, "--db", reader]).exit_code == 0, args
            denied = invoke(["scan", str(docs), "--db", reader])
            assert denied.exit_code == 1
            assert "may only read the index" in denied.output
    with _roles(pg_server, "docs_writer", "docs_reader"):
        # 2. An index made before the SQL ran (by the database's owner).
        with _database(pg_server) as db:
            assert invoke(["scan", str(docs), "--db", db, "-q"]).exit_code == 0
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute(sql)
            reader = _as(db, "docs_reader", "reader-secret")
            writer = _as(db, "docs_writer", "writer-secret")
            assert invoke(["list", "--db", reader]).exit_code == 0
            (docs / "new.md").write_text("# New\n\nfresh words\n")
            done = invoke(["scan", str(docs), "--db", writer, "--json"])
            assert done.exit_code == 0, done.output
            got = invoke(["query", "fresh words", "--db", reader, "--json"])
            assert json.loads(got.stdout)["hits"][0]["rel_path"] == "new.md"


def test_a_role_that_may_not_read_is_told_the_grant(
    tmp_path: Path, pg_url: str, pg_server: str
) -> None:
    import psycopg

    assert invoke(["scan", str(write_tree(tmp_path / "d", DOCS)), "--db", pg_url,
                   "-q"]).exit_code == 0  # fmt: skip
    schema = pg_url.split("search_path%3D")[1]
    role = "noread_" + uuid.uuid4().hex[:8]
    with _roles(pg_server, role):
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw pw'")
            conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        got = invoke(["query", "auth"], DOCINDEX_DB=_as(pg_url, role, "pw pw"))
        assert got.exit_code == 1
        line = got.output.strip()
        assert "\n" not in line and "cannot read index" in line
        assert f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}" in line
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")


# -- connections ------------------------------------------------------------------


def test_a_password_with_specials_works_everywhere_and_never_prints(
    tmp_path: Path, pg_url: str, pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    docs = write_tree(tmp_path / "docs", DOCS)
    role = "pw_" + uuid.uuid4().hex[:8]
    encoded = quote(PASSWORD, safe="")
    secrets = [PASSWORD, encoded, "w0rd"]
    with _roles(pg_server, role):
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
        url = _as(pg_url, role, PASSWORD)
        more = write_tree(tmp_path / "more", {"m.md": "# More\n\nwords\n"})
        runs = [
            ["scan", str(docs)],
            ["scan", str(docs), "--json"],
            ["query", "tokens"],
            ["query", "tokens", "--json"],
            ["stats"],
            ["stats", "--json"],
            ["list"],
            ["roots"],
            ["roots", "--json"],
            ["outline", "guide/auth.md"],
            ["show", "guide/auth.md#tokens"],
            ["section", "guide/auth.md", "tokens"],
            ["related", "guide/auth.md"],
            ["skipped"],
            ["config"],
            ["config", "--json"],
            ["export"],
            ["roots", "add", str(more)],
            ["roots", "accept", str(more)],
            ["reindex"],
            ["vacuum"],
            ["scan", str(tmp_path)],  # outside the roots: a hint with --db in it
            ["query", "x", "--path", "[z-a]"],
            ["import", str(tmp_path / "nope.ndjson")],
        ]
        outputs = []
        for args in runs:
            result = invoke([*args, "--db", url])
            outputs.append((args, result))
        for args, result in outputs[:21]:
            assert result.exit_code == 0, (args, result.output)
        # the other spellings, and the places a URL comes from
        wrong = _as(pg_url, role, PASSWORD + "x")
        upper = url.replace("postgresql://", "POSTGRESQL://")
        raw = url.replace(encoded, PASSWORD)  # unencoded: libpq cannot parse it
        for args in (["stats", "--db", wrong], ["stats", "--db", upper],
                     ["stats", "--db", raw]):  # fmt: skip
            outputs.append((args, invoke(args)))
        assert outputs[-2][1].exit_code == 0  # the scheme in any case works
        outputs.append((["env"], invoke(["stats", "--json"], DOCINDEX_DB=url)))
        assert outputs[-1][1].exit_code == 0
        for args, result in outputs:
            for secret in secrets:
                assert secret not in result.output, (args, secret, result.output)
        said = outputs[0][1].stderr
        assert "the password in --db is visible to every user" in said
        assert f"{role}:***@" in json.loads(outputs[5][1].stdout)["db"]
        hint = outputs[21][1].output
        assert f"--db 'postgresql://{role}:***@" in hint
        assert "password authentication failed" in outputs[-4][1].output
        assert "~/.pgpass" in outputs[-4][1].output
        # ~/.pgpass and a service file: no password on any command line
        pgpass = tmp_path / "pgpass"
        host, port = re.search(r"@([^:/]+):(\d+)/", url).groups()  # type: ignore[union-attr]
        pgpass.write_text(
            f"{host}:{port}:*:{role}:{PASSWORD.replace(':', chr(92) + ':')}\n"
        )
        pgpass.chmod(0o600)
        bare = url.replace(f":{encoded}@", "@")
        got = invoke(
            ["query", "tokens", "--db", bare, "--json"], PGPASSFILE=str(pgpass)
        )
        assert got.exit_code == 0, got.output
        assert "visible to every user" not in got.stderr
        service = tmp_path / "pg_service.conf"
        schema = pg_url.split("search_path%3D")[1]
        service.write_text(
            f"[docs]\nhost={host}\nport={port}\ndbname=postgres\nuser={role}\n"
            f"options=-csearch_path={schema}\n"
        )
        got = invoke(["query", "tokens", "--json"], PGSERVICEFILE=str(service),
                     PGPASSFILE=str(pgpass), DOCINDEX_DB="postgresql://?service=docs")  # fmt: skip
        assert got.exit_code == 0, got.output
        assert json.loads(got.stdout)["hits"]


@pytest.mark.slow
def test_watch_mcp_and_an_interrupted_scan_never_print_the_password(
    tmp_path: Path, pg_url: str, pg_server: str
) -> None:
    import psycopg

    role = "pw_" + uuid.uuid4().hex[:8]
    with _roles(pg_server, role):
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
        url = _as(pg_url, role, PASSWORD)
        big = write_tree(tmp_path / "big", {
            f"d{i:04}.md": f"# Doc {i}\n\n" + "some words here. " * 40 for i in range(1500)
        })  # fmt: skip
        scan = _proc(["scan", str(big), "--db", url, "--json", "--progress"])
        for line in scan.stdout:  # Ctrl-C once files are being indexed
            if json.loads(line).get("phase") == "index":
                break
        scan.send_signal(signal.SIGINT)
        _, scan_err = scan.communicate(timeout=120)
        assert scan.returncode == 130, scan_err
        assert "interrupted" in scan_err and f"{role}:***@" in scan_err
        watch = _proc(["watch", "--db", url, "--json"])
        assert json.loads(watch.stdout.readline())["kind"] == "catch-up"
        watch.send_signal(signal.SIGINT)
        _, watch_err = watch.communicate(timeout=60)
        assert watch.returncode == 130, watch_err
        mcp = _proc(["mcp", "--db", url], stdin=subprocess.PIPE)
        mcp_out, mcp_err = mcp.communicate(_mcp_script(["tokens"]), timeout=60)
        assert '"isError": false' in mcp_out.replace(
            '"isError":false', '"isError": false'
        )
        for text in (scan_err, watch_err, mcp_out, mcp_err):
            for secret in (PASSWORD, quote(PASSWORD, safe=""), "w0rd"):
                assert secret not in text


def _mcp_script(queries: list[str]) -> str:
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {
            "name": "doc_query", "arguments": {"query": q, "top_k": 1}}}
          for i, q in enumerate(queries)),
    ]  # fmt: skip
    return "".join(json.dumps(line) + "\n" for line in lines)


# -- writers take turns -------------------------------------------------------------


def test_two_scans_at_once_both_finish(tmp_path: Path, pg_url: str) -> None:
    one = write_tree(tmp_path / "one", {
        f"a{i}.md": f"# A {i}\n\n" + "alpha words. " * 50 for i in range(400)
    })  # fmt: skip
    two = write_tree(
        tmp_path / "two", {f"b{i}.md": f"# B {i}\n\nbravo\n" for i in range(50)}
    )
    first = _proc(["scan", str(one), "--db", pg_url, "-q"])
    time.sleep(0.8)
    second = _proc(["scan", "--root", str(two), "--db", pg_url, "-q"],
                   {"DOCINDEX_BUSY_TIMEOUT_S": "0.5"})  # fmt: skip
    for proc in (first, second):
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    got = invoke(["list", "--db", pg_url, "--json", "--limit", "1000"])
    assert len(_paths(got)) == 450


def test_a_watch_and_a_scan_together_both_finish(tmp_path: Path, pg_url: str) -> None:
    root = write_tree(
        tmp_path / "docs", {f"d{i}.md": f"# D {i}\n\nword{i}\n" for i in range(30)}
    )
    assert invoke(["scan", str(root), "--db", pg_url, "-q"]).exit_code == 0
    watch = _proc(["watch", "--db", pg_url, "--json"])
    try:
        assert json.loads(watch.stdout.readline())["kind"] == "catch-up"
        for i in range(30, 60):
            (root / f"d{i}.md").write_text(f"# D {i}\n\nword{i}\n")
        scan = _proc(["scan", str(root), "--db", pg_url, "--force", "-q"])
        _, err = scan.communicate(timeout=120)
        assert scan.returncode == 0, err
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = invoke(["list", "--db", pg_url, "--json", "--limit", "100"])
            if len(_paths(got)) == 60:
                break
            time.sleep(0.3)
        assert len(_paths(got)) == 60
    finally:
        watch.send_signal(signal.SIGINT)
        watch.communicate(timeout=60)
    assert watch.returncode == 130


# -- what my scan reads is decided on my machine ------------------------------------


def _party(tmp_path: Path, name: str, host: str) -> dict[str, str]:
    home = tmp_path / f"home-{name}"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "DOCINDEX_HOST": host}  # fmt: skip


def test_a_root_planted_for_my_host_is_not_read_here(
    tmp_path: Path, pg_url: str
) -> None:
    shared = write_tree(tmp_path / "share", DOCS)
    private = write_tree(
        tmp_path / "b-home" / "private", {"salary.md": "# Pay\n\nhunter2\n"}
    )
    private.chmod(0o700)
    a, b = _party(tmp_path, "a", "host-a"), _party(tmp_path, "b", "host-b")
    assert invoke(["scan", str(shared), "--db", pg_url, "-q"], **a).exit_code == 0
    assert invoke(["scan", str(shared), "--db", pg_url, "-q"], **b).exit_code == 0
    # A adds B's private folder as a root, in B's name
    planted = invoke(["roots", "add", str(private), "--db", pg_url],
                     **{**a, "DOCINDEX_HOST": "host-b"})  # fmt: skip
    assert planted.exit_code == 0, planted.output
    got = invoke(["scan", "--db", pg_url], **b)
    assert got.exit_code == 0, got.output
    assert f"left out 1 root this machine has not accepted: {private}" in got.output
    assert f"docindex roots accept {private}" in got.output
    hits = invoke(["query", "hunter2", "--db", pg_url, "--json"], **a)
    assert json.loads(hits.stdout)["hits"] == []
    listed = json.loads(invoke(["roots", "--db", pg_url, "--json"], **b).stdout)
    assert {r["path"]: r["accepted"] for r in listed["roots"] if r["here"]} == {
        str(shared): True, str(private): False,
    }  # fmt: skip
    # B accepts it: now B's scan reads it
    assert invoke(["roots", "accept", str(private), "--db", pg_url], **b).exit_code == 0
    assert invoke(["scan", "--db", pg_url, "-q"], **b).exit_code == 0
    hits = invoke(["query", "hunter2", "--db", pg_url, "--json"], **a)
    assert json.loads(hits.stdout)["hits"]


def test_wider_settings_from_another_party_are_not_applied(
    tmp_path: Path, pg_url: str
) -> None:
    share_a = write_tree(tmp_path / "a" / "share", DOCS)
    share_b = write_tree(tmp_path / "b" / "share", DOCS)
    (share_b / ".env").write_text("DB_PASSWORD=hunter2\n")
    (share_b / ".private").mkdir()
    (share_b / ".private" / "notes.md").write_text("# Mine\n\nmy hidden notes\n")
    a, b = _party(tmp_path, "a", "host-a"), _party(tmp_path, "b", "host-b")
    config = tmp_path / "a-config.toml"
    config.write_text('text_extensions = [".env"]\n')
    done = invoke(["scan", str(share_a), "--hidden", "--db", pg_url, "-q"],
                  **a, DOCINDEX_CONFIG=str(config))  # fmt: skip
    assert done.exit_code == 0, done.output
    got = invoke(["scan", str(share_b), "--db", pg_url, "--json"], **b)
    assert got.exit_code == 0, got.output
    for word in ("hunter2", "hidden notes"):
        hits = invoke(["query", word, "--db", pg_url, "--json"], **a)
        assert json.loads(hits.stdout)["hits"] == [], word


def test_a_share_that_is_not_mounted_is_not_empty(tmp_path: Path, pg_url: str) -> None:
    share_a = write_tree(
        tmp_path / "a" / "handbook", {**DOCS, "only-a.md": "# A\n\nmine\n"}
    )
    mount_b = tmp_path / "b" / "handbook"
    mount_b.mkdir(parents=True)  # the mount point, nothing mounted on it
    a, b = _party(tmp_path, "a", "host-a"), _party(tmp_path, "b", "host-b")
    assert invoke(["scan", str(share_a), "--db", pg_url, "-q"], **a).exit_code == 0
    got = invoke(["scan", str(mount_b), "--db", pg_url], **b)
    assert got.exit_code == 0, got.output
    assert "is empty on this host" in got.output and "removed 0" in got.output
    listed = invoke(["list", "--db", pg_url, "--json"], **a)
    assert len(_paths(listed)) == 3
    # mounted now, without the file that exists on host A only: B's scan sees
    # the root as B has it, and A's next scan brings the file back
    write_tree(mount_b, DOCS)
    assert "removed 1" in invoke(["scan", "--db", pg_url], **b).output
    assert "indexed 1" in invoke(["scan", "--db", pg_url], **a).output


# -- restarts -----------------------------------------------------------------------


@pytest.fixture
def own_server() -> Iterator[pgcluster.Server]:
    """A cluster of this test's own, to restart and stop."""
    bin_dir = pgcluster.binaries()
    if bin_dir is None:
        pytest.skip(pgcluster.MISSING)
    with pgcluster.server(bin_dir) as running:
        yield running


@pytest.mark.slow
def test_watch_and_mcp_survive_a_restart_and_give_up_when_it_stays_away(
    tmp_path: Path, own_server: pgcluster.Server
) -> None:
    url = own_server.url
    root = write_tree(tmp_path / "docs", DOCS)
    assert invoke(["scan", str(root), "--db", url, "-q"]).exit_code == 0
    env = {"DOCINDEX_RECONNECT_TIMEOUT_S": "6"}
    watch = _proc(["watch", "--db", url, "--json"], env)
    mcp = _proc(["mcp", "--db", url], env, stdin=subprocess.PIPE)
    try:
        assert json.loads(watch.stdout.readline())["kind"] == "catch-up"
        own_server.restart()
        (root / "after.md").write_text("# After\n\nquokka sightings\n")
        deadline = time.monotonic() + 30
        hits: list[object] = []
        while time.monotonic() < deadline and not hits:
            time.sleep(0.5)
            got = invoke(["query", "quokka", "--db", url, "--json"])
            hits = json.loads(got.stdout)["hits"] if got.exit_code == 0 else []
        assert hits, "the edit after the restart was not indexed"
        out, _ = mcp.communicate(_mcp_script(["quokka"]), timeout=60)
        assert "after.md" in out
        own_server.stop()
        started = time.monotonic()
        _, err = watch.communicate(timeout=60)
        assert watch.returncode == 1, err
        assert time.monotonic() - started < 40  # gave up, no endless loop
        assert "reconnected to the index" in err  # after the restart
        assert "gave up after" in err and "Traceback" not in err
    finally:
        for proc in (watch, mcp):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        with contextlib.suppress(subprocess.CalledProcessError):
            own_server.start()


# -- hostile imports, globs ---------------------------------------------------------


def test_a_crafted_import_is_refused_or_left_unread(
    tmp_path: Path, pg_url: str
) -> None:
    docs = write_tree(tmp_path / "docs", DOCS)
    lite = tmp_path / "src.db"
    assert invoke(["scan", str(docs), "--db", str(lite), "-q"]).exit_code == 0
    records = [
        json.loads(x) for x in invoke(["export", "--db", str(lite)]).stdout.splitlines()
    ]
    doc = next(r for r in records if r["type"] == "document")
    etc = [
        *records,
        {"type": "root", "path": "/etc"},
        {**doc, "root": "/etc", "rel_path": "x.md"},
    ]
    path = tmp_path / "etc.ndjson"
    path.write_text("".join(json.dumps(r) + "\n" for r in etc))
    got = invoke(["import", str(path), "--db", pg_url, "--json"])
    assert got.exit_code == 0, got.output
    assert json.loads(got.stdout)["roots"] == 2
    scan = invoke(["scan", "--db", pg_url, "--json"])
    assert json.loads(scan.stdout)["indexed"] == 0  # /etc is not read here
    bad = [*records[:-1], {**doc, "rel_path": "../../../etc/passwd"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in bad))
    refused = invoke(
        ["import", str(path), "--db", pgcluster.new_schema(pg_url.split("?")[0])]
    )
    assert (
        refused.exit_code == 2
        and "line " in refused.output
        and "'..'" in refused.output
    )


def test_an_invalid_glob_is_the_same_error_on_both_engines(
    tmp_path: Path, pg_url: str
) -> None:
    docs = write_tree(tmp_path / "docs", DOCS)
    lite = str(tmp_path / "i.db")
    for db in (lite, pg_url):
        assert invoke(["scan", str(docs), "--db", db, "-q"]).exit_code == 0
    answers = [
        invoke(["query", "auth", "--path", "[z-a]*", "--db", db])
        for db in (lite, pg_url)
    ]
    assert [a.exit_code for a in answers] == [2, 2]
    errors = [a.output.strip().splitlines()[-1] for a in answers]
    assert errors[0] == errors[1]
    assert "runs backwards" in answers[0].output


def test_globs_match_alike_on_both_engines(pg_url: str) -> None:
    """PostgreSQL's translation of a GLOB matches what SQLite's GLOB matches."""
    import random
    import sqlite3

    import psycopg

    from docindex.errors import BadInputError
    from docindex.search.navigate import check_glob
    from docindex.store.postgres.filters import glob_regex

    rng = random.Random(44)
    lite = sqlite3.connect(":memory:")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for _ in range(1500):
            pattern = "".join(
                rng.choice("[]^-:az\\*?.=/") for _ in range(rng.randint(1, 7))
            )
            try:
                check_glob(pattern)
            except BadInputError:
                continue
            regex = glob_regex(pattern)
            for _ in range(3):
                text = "".join(
                    rng.choice("az[]^-:.\\=/") for _ in range(rng.randint(0, 5))
                )
                pg = conn.execute("SELECT %s ~ %s", (text, regex)).fetchone()
                assert pg is not None
                sqlite = lite.execute("SELECT ? GLOB ?", (text, pattern)).fetchone()[0]
                assert bool(pg[0]) == bool(sqlite), (pattern, text)
