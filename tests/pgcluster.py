"""A throwaway PostgreSQL cluster for the tests and bench/postgres.py (issue #34).

``DOCINDEX_TEST_PG`` (a URL) names a server to use instead. Otherwise
``initdb`` and ``pg_ctl`` (PostgreSQL 15+, ``apt-get install postgresql``)
start a cluster in a temporary folder on a free port, as an unprivileged
user when we are root (``initdb`` refuses root), with password logins
(scram-sha-256) and a superuser password full of URL specials, as a team
deploys it (issue #44). Each test gets its own schema (``search_path`` in the
URL), which is cheaper than a database.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

MISSING = (
    "PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install postgresql"
)


def binaries() -> Path | None:
    """The folder with initdb and pg_ctl, newest version first, or None."""
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(found, "initdb").is_file():
            return Path(found)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: The superuser's password: every special character a URL must encode (#44).
PASSWORD = "s3cret?#%@/:&= pw"


@dataclass
class Server:
    """A running throwaway cluster: its URL (password included) and its life."""

    url: str
    data: Path
    base: Path
    port: int
    bin_dir: Path
    prefix: list[str]
    options: str

    def ctl(self, *args: str) -> None:
        subprocess.run(
            [*self.prefix, str(self.bin_dir / "pg_ctl"), "-D", str(self.data), *args],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every connection is cut, as in an upgrade."""
        self.ctl("-o", self.options, "-l", str(self.base / "log"), "-m", "fast",
                 "-w", "restart")  # fmt: skip

    def stop(self) -> None:
        self.ctl("-m", "fast", "-w", "stop")

    def start(self) -> None:
        self.ctl("-o", self.options, "-l", str(self.base / "log"), "-w", "start")


@contextlib.contextmanager
def server(bin_dir: Path, fast: bool = True) -> Iterator[Server]:
    """Start a cluster with password logins (scram-sha-256, never trust: #44).

    ``fast``: no fsync (tests); the bench keeps the server's defaults.
    """
    base = Path(tempfile.mkdtemp(prefix="docindex-pg-"))
    user = None
    if os.geteuid() == 0:
        for name in ("postgres", "nobody"):
            with contextlib.suppress(KeyError):
                user = pwd.getpwnam(name)
                break
        assert user is not None, "no unprivileged user to run initdb as"
        os.chown(base, user.pw_uid, user.pw_gid)
    prefix = ["runuser", "-u", user.pw_name, "--"] if user else []
    port = _free_port()
    data = base / "data"
    pwfile = base / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if user:
        os.chown(pwfile, user.pw_uid, user.pw_gid)
    subprocess.run(
        [*prefix, str(bin_dir / "initdb"), "-D", str(data), "-A", "scram-sha-256",
         f"--pwfile={pwfile}", "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8"],
        check=True, capture_output=True,
    )  # fmt: skip
    pwfile.unlink()
    options = (
        f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c max_connections=100"
    )
    if fast:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    url = f"postgresql://postgres:{quote(PASSWORD, safe='')}@127.0.0.1:{port}/postgres"
    running = Server(url, data, base, port, bin_dir, prefix, options)
    running.start()
    try:
        yield running
    finally:
        subprocess.run(
            [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate",
             "stop"],
            capture_output=True,
        )  # fmt: skip
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def standby(
    primary: Server, slot: str | None = None, options_more: str = ""
) -> Iterator[Server]:
    """A hot standby of ``primary``, as a DBA makes one (issue #48):
    ``pg_basebackup -R`` from the running primary (its replication login is
    the superuser's password), started on a port of its own. Its URL is the
    primary's with the standby's port. ``slot``: a replication slot made for
    it, so the primary keeps the WAL a lagging standby still needs (the
    bench's large loads); ``options_more``: more server options (``-c name=value``)."""
    base = Path(tempfile.mkdtemp(prefix="docindex-pg-standby-"))
    if primary.prefix:  # runuser -u USER --
        owner = pwd.getpwnam(primary.prefix[2])
        os.chown(base, owner.pw_uid, owner.pw_gid)
    data = base / "data"
    subprocess.run(
        [*primary.prefix, str(primary.bin_dir / "pg_basebackup"), "-D", str(data),
         "-R", "-X", "stream", "-c", "fast", "-h", "127.0.0.1", "-p",
         str(primary.port), "-U", "postgres", *(["-C", "-S", slot] if slot else [])],
        check=True, capture_output=True, timeout=600,
        env={**os.environ, "PGPASSWORD": PASSWORD},
    )  # fmt: skip
    port = _free_port()
    options = primary.options.replace(f"-p {primary.port} -k {primary.base}",
                                      f"-p {port} -k {base}")  # fmt: skip
    options += f" -c hot_standby=on {options_more}"
    url = primary.url.replace(f":{primary.port}/", f":{port}/")
    running = Server(url, data, base, port, primary.bin_dir, primary.prefix, options)
    running.start()
    try:
        yield running
    finally:
        subprocess.run(
            [*primary.prefix, str(primary.bin_dir / "pg_ctl"), "-D", str(data), "-m",
             "immediate", "stop"],
            capture_output=True,
        )  # fmt: skip
        shutil.rmtree(base, ignore_errors=True)


def caught_up(primary_url: str, standby_url: str, timeout: float = 60.0) -> None:
    """Wait until the standby has replayed everything the primary has written
    so far (``pg_last_wal_replay_lsn()`` past the primary's WAL position).

    The insert position, not ``pg_current_wal_lsn()`` (the write position):
    with ``synchronous_commit=off`` (``fast``) a commit's record may still be
    in the primary's WAL buffers, before the write position.
    """
    import time

    import psycopg

    with psycopg.connect(primary_url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
    assert row is not None
    target = row[0]
    deadline = time.monotonic() + timeout
    with psycopg.connect(standby_url, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
            ).fetchone()
            if row is not None and row[0]:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby did not replay up to {target}")
            time.sleep(0.05)


@contextlib.contextmanager
def cluster(bin_dir: Path, fast: bool = True) -> Iterator[str]:
    """Start a cluster; yield the URL of its ``postgres`` database; stop it."""
    with server(bin_dir, fast) as running:
        yield running.url


def as_role(url: str, role: str, password: str) -> str:
    """``url`` logging in as ``role`` with ``password`` (URL-encoded here)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    userinfo = f"{quote(role, safe='')}:{quote(password, safe='')}"
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{host}"))


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``search_path`` set to ``schema`` (libpq ``options``)."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema}')}"


def new_schema(url: str) -> str:
    """Create an empty schema on the server at ``url``; a URL that uses it."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return with_schema(url, name)
