"""Who may read which root of a shared index (issue #48), on the real server.

Set up as the README's team section says, pasted in order: the DBA's roles,
a second reader role, a root granted to it; then what each role reads through
docindex and through its own SQL, and what a hidden root's words do to a
reader's scores (nothing: statistics are the visible roots').
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pgcluster
import pytest
from click.testing import CliRunner, Result
from conftest import write_tree

from docindex.cli.main import cli

pytestmark = pytest.mark.usefixtures("pg_server")

README = Path(__file__).resolve().parents[1] / "README.md"
#: A word only HR's files hold, and one a misspelling of it would suggest.
SECRET = "quokkabonus"
HANDBOOK = {
    "guide/leave.md": "# Leave\n\nAsk your manager for leave two weeks ahead.\n\n"
    "## Parental leave\n\nSixteen weeks of parental leave, paid.\n",
    "guide/travel.md": "# Travel\n\nBook travel through the portal; bonus miles "
    "stay with the traveller.\n",
    "ops/oncall.md": "---\ntags: [ops]\n---\n# On call\n\nThe on-call rota "
    "changes weekly; the bonus for a night call is paid monthly.\n",
}
HR = {
    "salaries.md": f"---\ntags: [payroll]\n---\n# Salaries 2027\n\nThe {SECRET} "
    "pool pays each band's bonus in March. Leave is not paid out.\n",
    "reviews/q3.md": "# Q3 reviews\n\nReview notes: the bonus for Dana is "
    f"{SECRET} band four.\n",
    "benefits.md": f"# Benefits\n\nThe {SECRET} scheme tops up pensions.\n",
}


def invoke(args: list[str], env: dict[str, str]) -> Result:
    """The CLI in-process as one party runs it (its own config and host)."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        return CliRunner().invoke(cli, args)


def _readme_sql(number: int) -> str:
    """The ``number``-th SQL block of the README's team section, verbatim."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Share an index with a team", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, re.DOTALL)[number]


@dataclass
class Team:
    """A database set up by the README, and each party's environment."""

    db: str
    hr_root: Path
    handbook: Path
    writer: dict[str, str]
    reader: dict[str, str]
    hr_reader: dict[str, str]

    def url(self, party: dict[str, str]) -> str:
        return party["DOCINDEX_DB"]


@contextlib.contextmanager
def _team(server: str, tmp_path: Path) -> Iterator[Team]:
    """The README's team SQL and its per-root SQL in a new database, pasted as
    written; the writer scans the handbook, adds HR, grants it, scans."""
    import psycopg

    name = "acc_" + uuid.uuid4().hex[:10]
    db = re.sub(r"/postgres$", f"/{name}", server)
    roles = ("docs_writer", "docs_reader", "hr_reader")
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(_readme_sql(0))
            conn.execute(_readme_sql(1))
        parties = {}
        for role, password in (("docs_writer", "writer-secret"),
                               ("docs_reader", "reader-secret"),
                               ("hr_reader", "hr-secret")):  # fmt: skip
            home = tmp_path / role
            parties[role] = {
                "DOCINDEX_DB": pgcluster.as_role(db, role, password),
                "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                "DOCINDEX_HOST": f"host-{role}",
            }  # fmt: skip
        share = tmp_path / "share"
        team = Team(db, write_tree(share / "hr", HR),
                    write_tree(share / "handbook", HANDBOOK), parties["docs_writer"],
                    parties["docs_reader"], parties["hr_reader"])  # fmt: skip
        w = team.writer
        for args in (["scan", str(team.handbook), "-q"],
                     ["roots", "add", str(team.hr_root)],
                     ["roots", "grant", "hr", "hr_reader"],
                     ["scan", "-q"]):  # fmt: skip
            done = invoke(args, w)
            assert done.exit_code == 0, (args, done.output)
        yield team
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            for role in roles:
                with contextlib.suppress(psycopg.Error):
                    conn.execute(f"DROP ROLE IF EXISTS {role}")


def _json(args: list[str], party: dict[str, str]) -> Any:
    done = invoke([*args, "--json"], party)
    assert done.exit_code == 0, (args, done.output)
    return json.loads(done.stdout)


def _query_paths(party: dict[str, str], text: str) -> tuple[int, set[str]]:
    out = _json(["query", text, "--top", "20"], party)
    return out["total"], {h["rel_path"] for h in out["hits"]}


def test_a_granted_root_is_read_by_its_readers_alone(
    tmp_path: Path, pg_server: str
) -> None:
    with _team(pg_server, tmp_path) as team:
        reader, hr, writer = team.reader, team.hr_reader, team.writer
        # docs_reader: nothing of HR, through any command
        assert _query_paths(reader, SECRET) == (0, set())
        total, paths = _query_paths(reader, "bonus")
        assert paths == {"guide/travel.md", "ops/oncall.md"} and total == 2
        misspelt = ["query", SECRET + "s", "--mode", "lexical"]
        found = _json(misspelt, reader)  # no "did you mean" from HR
        assert found["did_you_mean"] == {} and found["corrected"] is None
        listed = _json(["list"], reader)
        assert {d["rel_path"] for d in listed["documents"]} == set(HANDBOOK)
        assert _json(["stats"], reader)["documents"] == len(HANDBOOK)
        roots = _json(["roots"], reader)["roots"]
        assert [r["path"] for r in roots] == [str(team.handbook)]
        assert "payroll" not in json.dumps(_json(["stats"], reader))  # facets
        for args in (["outline", "salaries.md"], ["show", "salaries.md:5"],
                     ["section", "salaries.md", "Salaries 2027"],
                     ["related", "salaries.md"]):  # fmt: skip
            done = invoke(args, reader)
            assert done.exit_code != 0 and SECRET not in done.output, args
        related = invoke(["related", "guide/travel.md", "--json"], reader)
        assert related.exit_code == 0 and "salaries" not in related.output
        exported = invoke(["export"], reader)
        assert exported.exit_code == 0
        assert (
            SECRET not in exported.output and str(team.hr_root) not in exported.output
        )
        # hr_reader (a member of docs_reader): both roots; the owner too
        assert _query_paths(hr, SECRET) == (3, set(HR))
        suggested = _json(misspelt, hr)
        assert SECRET in json.dumps([suggested["did_you_mean"], suggested["corrected"]])
        assert _query_paths(hr, "bonus")[0] == 4
        assert _query_paths(writer, SECRET)[0] == 3
        assert _json(["stats"], hr)["documents"] == len(HANDBOOK) + len(HR)
        shown = _json(["roots"], writer)["roots"]
        assert [(r["path"], r["grants"]) for r in shown] == [
            (str(team.handbook), []), (str(team.hr_root), ["hr_reader"])
        ]  # fmt: skip
        # only the owner grants and revokes
        denied = invoke(["roots", "grant", "hr", "docs_reader"], hr)
        assert denied.exit_code == 1
        assert "only the index's owner (role docs_writer)" in denied.output
        revoked = invoke(["roots", "revoke", str(team.hr_root), "hr_reader"], writer)
        assert revoked.exit_code == 0, revoked.output
        assert "every reader reads it" in revoked.output
        assert _query_paths(reader, SECRET)[0] == 3


def test_a_readers_own_sql_sees_no_row_of_a_hidden_root(
    tmp_path: Path, pg_server: str
) -> None:
    import psycopg

    with _team(pg_server, tmp_path) as team:
        owner = _rows(team.url(team.writer))
        hr_id = owner["roots"][[r[1] for r in owner["roots"]].index("hr")][0]
        assert SECRET in repr(owner["postings"]) and str(team.hr_root) in repr(owner)
        seen = _rows(team.url(team.reader))
        assert set(seen) == set(owner)  # every table: readable, filtered
        text = repr(seen)
        assert SECRET not in text and str(team.hr_root) not in text
        for table, column in ROOT_COLUMNS.items():
            assert _count(team.url(team.writer), table, column, hr_id) > 0, table
            assert _count(team.url(team.reader), table, column, hr_id) == 0, table
        assert len(seen["documents"]) == len(HANDBOOK)
        # the policy cannot be switched off by the reader
        with psycopg.connect(team.url(team.reader), autocommit=True) as conn:
            conn.execute("SET row_security = off")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT count(*) FROM documents").fetchone()
        hr_sees = _rows(team.url(team.hr_reader))
        assert SECRET in repr(hr_sees["postings"])
        assert len(hr_sees["documents"]) == len(HANDBOOK) + len(HR)


#: The tables that hold a root's rows, and the column naming the root.
ROOT_COLUMNS = {
    "roots": "id", "root_paths": "root_id", "root_grants": "root_id",
    "documents": "root_id", "segments": "root_id", "facets": "root_id",
    "postings": "root_id", "vocab": "root_id",
}  # fmt: skip


def _count(url: str, table: str, column: str, root: int) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            f"SELECT count(*) FROM {table} WHERE {column} = %s", (root,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def _rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the index, as this role reads it."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [str(r[0]) for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )]  # fmt: skip
        return {t: conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables}


def test_a_hidden_roots_words_move_no_readers_score(
    tmp_path: Path, pg_url: str, pg_server: str
) -> None:
    """A reader's scores, totals and counts are those of an index of the roots
    it may read alone (SQLite, same files), before and after a hidden root
    gains a document full of the reader's words and a rare one; the owner's
    move (the check can fail)."""
    import psycopg

    visible = write_tree(tmp_path / "handbook", HANDBOOK)
    hidden = write_tree(tmp_path / "hr", HR)
    schema = pg_url.split("search_path%3D")[1]
    role, other = "rd_" + uuid.uuid4().hex[:8], "hr_" + uuid.uuid4().hex[:8]
    owner_env = {"DOCINDEX_DB": pg_url}
    try:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            for name in (role, other):
                conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'pw pw'")
        for args in (["scan", str(visible), "-q"], ["roots", "add", str(hidden)],
                     ["roots", "grant", str(hidden), other], ["scan", "-q"]):  # fmt: skip
            assert invoke(args, owner_env).exit_code == 0, args
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
            conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
        reader = {"DOCINDEX_DB": pgcluster.as_role(pg_url, role, "pw pw")}
        lite = {"DOCINDEX_DB": str(tmp_path / "lite.db")}
        assert invoke(["scan", str(visible), "-q"], lite).exit_code == 0
        queries = ["bonus", "paid leave", "bonus paid monthly", "travel portal",
                   '"parental leave"', "leave -travel"]  # fmt: skip
        alone = {q: _raw(lite, q) for q in queries}
        before = {q: _raw(reader, q) for q in queries}
        owner_before = {q: _raw(owner_env, q) for q in queries}
        assert before == alone
        assert (
            _json(["stats"], reader)["segments"] == _json(["stats"], lite)["segments"]
        )
        (hidden / "more.md").write_text(
            "# Bonus leave\n\n"
            + "bonus paid leave monthly travel. " * 30
            + "\n\nzyzzogeton\n"
        )
        assert invoke(["scan", "-q"], owner_env).exit_code == 0
        assert {q: _raw(reader, q) for q in queries} == alone
        assert _json(["query", "zyzzogeton"], reader)["total"] == 0
        assert "zyzzogeton" not in json.dumps(_json(["query", "zyzzogetn"], reader))
        owner_after = {q: _raw(owner_env, q) for q in queries}
        assert owner_after != owner_before
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            for name in (role, other):
                conn.execute(f"DROP OWNED BY {name}")
                conn.execute(f"DROP ROLE {name}")


def _raw(party: dict[str, str], text: str) -> tuple[int, list[tuple[str, Any]]]:
    """Total, and each hit's chunk and raw bm25 to 6 decimals."""
    out = _json(["query", text, "--explain", "--mode", "lexical"], party)
    return out["total"], [
        (h["chunk_id"], round(h["explain"]["lexical"]["raw"], 6)) for h in out["hits"]
    ]


def test_a_sqlite_index_has_no_roles(tmp_path: Path) -> None:
    docs = write_tree(tmp_path / "docs", HANDBOOK)
    env = {"DOCINDEX_DB": str(tmp_path / "i.db")}
    assert invoke(["scan", str(docs), "-q"], env).exit_code == 0
    with sqlite3.connect(tmp_path / "i.db") as conn:
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    for verb in ("grant", "revoke"):
        done = invoke(["roots", verb, str(docs), "someone"], env)
        assert done.exit_code == 2
        assert "a SQLite index has no roles" in done.output
        assert done.output.strip().count("\n") == 0
    with sqlite3.connect(tmp_path / "i.db") as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == tables
    assert "grants" in json.dumps(_json(["roots"], env))


def test_grant_names_what_it_cannot_find(tmp_path: Path, pg_url: str) -> None:
    docs = write_tree(tmp_path / "docs", HANDBOOK)
    env = {"DOCINDEX_DB": pg_url}
    assert invoke(["scan", str(docs), "-q"], env).exit_code == 0
    done = invoke(["roots", "grant", "nowhere", "postgres"], env)
    assert done.exit_code == 2 and "nowhere is not a root" in done.output
    assert "roots: docs" in done.output
    done = invoke(["roots", "grant", "docs", "no_such_role_48"], env)
    assert done.exit_code == 2 and "no role no_such_role_48" in done.output
    done = invoke(["roots", "revoke", "docs", "postgres"], env)
    assert done.exit_code == 0 and "was not granted" in done.output


@pytest.mark.slow
def test_mcp_of_a_reader_offers_no_hidden_word(tmp_path: Path, pg_server: str) -> None:
    """The MCP server of a reader: its tool schemas (facet values) and its
    answers hold nothing of a hidden root."""
    with _team(pg_server, tmp_path) as team:
        lines = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "doc_query", "arguments": {"query": f"{SECRET} bonus"}}},
        ]  # fmt: skip
        script = "".join(json.dumps(line) + "\n" for line in lines)
        outs = {}
        for party in (team.reader, team.hr_reader):
            proc = subprocess.run(
                [sys.executable, "-m", "docindex", "mcp"], input=script,
                capture_output=True, text=True, timeout=120,
                env={**_base_env(), **party},
            )  # fmt: skip
            outs[party["DOCINDEX_HOST"]] = proc.stdout
        assert "ops" in outs["host-docs_reader"]  # a facet value it may see
        for word in ("payroll", "salaries.md", "Salaries 2027"):
            assert word not in outs["host-docs_reader"], word
            assert word in outs["host-hr_reader"], word


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
